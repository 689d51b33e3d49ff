-- reschedule: Store.reschedule(). Changes a pending or blocked job's run_at, priority or queue
-- (for a blocked job, what applies once it is unblocked).
--
-- Guarantees:
--   - Only a pending or blocked job changes; an active or finished one is left as it is (the store then
--     reads it, get.sql, and reports changed: false).
--   - A NULL parameter keeps that field.
--   - A parked job (migration 0010) is put back in the claim index: the next claim looks at its
--     key's rules again.
-- Why: one primary-key UPDATE with COALESCE, so any mix of the three fields is one statement.
--
-- Params: 1 runAt or NULL, 2 priority or NULL, 3 queue or NULL, 4 id.

-- name: reschedule
UPDATE errand_job
SET run_at = COALESCE(?, run_at), priority = COALESCE(?, priority), queue = COALESCE(?, queue),
  parked = NULL
WHERE id = ? AND state IN ('pending', 'blocked');
