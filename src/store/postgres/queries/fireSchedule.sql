-- fireSchedule: Store.fireSchedule(). Advances a schedule past a tick; in the same transaction the
-- store enqueues the tick's job (insertChecked or insertUniformChecked, enqueueMany.sql).
--
-- Guarantees: compare-and-set on next_run_at: one job per tick, however many schedulers run. A
-- second scheduler's update waits for the first's commit, then finds the tick taken (no row) and
-- enqueues nothing.
--
-- $1 name, $2 the next_run_at the caller saw, $3 the new next_run_at, $4 now.
-- Returns one row when the schedule was advanced.

-- name: advanceSchedule
UPDATE {{errandSchedule}} SET next_run_at = $3, updated_at = $4
WHERE name = $1 AND next_run_at = $2 RETURNING 1
