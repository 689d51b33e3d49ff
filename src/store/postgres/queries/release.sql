-- release: Store.release(). Gives a running attempt back, as on a worker's shutdown.
--
-- Guarantees:
--   - Compare-and-set: only the current attempt of an active job is released; a stale attempt
--     changes nothing (changed = 0).
--   - The job is pending again at $3 with its lease cleared, and max_attempts grows by one: the
--     attempt is given back, so shutting down never uses one up.
--   - NOTIFYs the wake channel when it released the job.
--
-- Why: `n` is read by the final SELECT because PostgreSQL runs only the plain CTEs that are read.
--
-- Why `(state = 'active') IS TRUE`: so the planner probes the primary key whatever the
-- statistics (checkpoint.sql says why).
--
-- $1 id, $2 attempt, $3 run at (now), $4 notify tag.
-- Returns one row: changed (0 or 1), notified.

-- name: release
WITH upd AS (
  UPDATE {{errandJob}} SET state = 'pending', run_at = $3, lease_expires_at = NULL, worker_id = NULL,
    max_attempts = max_attempts + 1
  WHERE id = $1 AND attempt = $2 AND (state = 'active') IS TRUE
  RETURNING 1
), n AS (SELECT pg_notify({{channel}}, $4) FROM (SELECT 1 FROM upd LIMIT 1) AS r)
SELECT count(*)::integer AS changed, (SELECT count(*) FROM n) AS notified FROM upd
