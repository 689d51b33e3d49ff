-- reschedule: Store.reschedule(). Changes a blocked or pending job's run_at, priority or queue.
--
-- Guarantees: only a blocked or pending job changes (an active or finished one is left as it is,
-- and no row comes back: the store then reads it with get); a NULL parameter keeps that field. A
-- blocked job stays blocked: the change applies once it is unblocked. When the job is pending and
-- ready after the change, the statement NOTIFYs the wake channel.
--
-- Why: `n` is read by the final SELECT because PostgreSQL runs only the plain CTEs that are read.
-- A parked job (migration 0011) is put back: the claims look at its key's rules again as it now
-- is, rather than the trigger bringing back, when its key has room, a job moved out of reach.
--
-- $1 id, $2 run_at (NULL: keep), $3 priority (NULL: keep), $4 queue (NULL: keep), $5 now,
-- $6 notify tag.
-- Returns the job as changed, as a JobRecord, or no row.

-- name: reschedule
WITH upd AS (
  UPDATE {{errandJob}} SET run_at = coalesce($2, run_at), priority = coalesce($3, priority),
    queue = coalesce($4, queue), parked = NULL
  WHERE id = $1 AND state IN ('blocked', 'pending')
  RETURNING {{hotFields}}
), ready AS (SELECT 1 FROM upd WHERE state = 'pending' AND "runAt" <= $5),
n AS (SELECT pg_notify({{channel}}, $6) FROM (SELECT 1 FROM ready LIMIT 1) AS r)
SELECT * FROM upd WHERE (SELECT count(*) FROM n) >= 0
