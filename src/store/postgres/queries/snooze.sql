-- snooze: Store.snooze(). Ends a running attempt without failing it (ctx.snooze).
--
-- Guarantees:
--   - Compare-and-set: only the current attempt of an active job is snoozed; a stale attempt
--     changes nothing (changed = 0).
--   - The job is pending again at $3 with its lease and holder cleared and its errors untouched;
--     max_attempts grows by one, as release's does, so the failure rule (attempt < maxAttempts)
--     still allows as many real attempts, and snoozes counts the snooze.
--   - NOTIFYs the wake channel when the job is due at once ($3 <= $4).
--
-- Why: one primary-key UPDATE, as release; `n` is read by the final SELECT because PostgreSQL
-- runs only the plain CTEs that are read.
--
-- Why `(state = 'active') IS TRUE`: so the planner probes the primary key whatever the
-- statistics (checkpoint.sql says why).
--
-- $1 id, $2 attempt, $3 run at, $4 now, $5 notify tag.
-- Returns one row: changed (0 or 1), notified.

-- name: snooze
WITH upd AS (
  UPDATE {{errandJob}} SET state = 'pending', run_at = $3, lease_expires_at = NULL, worker_id = NULL,
    max_attempts = max_attempts + 1, snoozes = snoozes + 1
  WHERE id = $1 AND attempt = $2 AND (state = 'active') IS TRUE
  RETURNING 1
), n AS (SELECT pg_notify({{channel}}, $5) FROM (SELECT 1 FROM upd WHERE $3 <= $4 LIMIT 1) AS r)
SELECT count(*)::integer AS changed, (SELECT count(*) FROM n) AS notified FROM upd
