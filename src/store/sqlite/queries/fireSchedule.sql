-- fireSchedule: Store.fireSchedule(). Advances a due schedule to its next run and, only if this
-- call advanced it, enqueues the run's job (enqueueMany.sql's statements), in one write
-- transaction.
--
-- Guarantees:
--   - Exactly once per run across every process: the advance is a compare-and-set on the
--     next_run_at the caller saw; a second firer of the same run changes nothing, and the store
--     enqueues nothing for it.
-- Why: the compare-and-set on next_run_at needs no lock and no leader lease to be safe.
--
-- Params: 1 nextRunAt, 2 now (updated_at), 3 name, 4 expectedRunAt.

-- name: fireScheduleAdvance
UPDATE errand_schedule SET next_run_at = ?, updated_at = ? WHERE name = ? AND next_run_at = ?;
