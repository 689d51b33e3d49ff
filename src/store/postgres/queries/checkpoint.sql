-- checkpoint: Store.checkpoint(). Saves a running attempt's checkpoint.
--
-- Guarantees: compare-and-set: only the current attempt of an active job writes it; a stale
-- attempt changes nothing (no row returned).
--
-- Why `(state = 'active') IS TRUE` (state is NOT NULL, so the same test): written plainly it is
-- errand_job_lease's predicate, and with statistics taken while nearly every job was pending the
-- planner read that index whole (every active job) rather than probe the primary key
-- (completeMany.sql; test/integration/postgres/stale-stats.test.ts).
--
-- $1 id, $2 attempt, $3 checkpoint (JSON text).
-- Returns one row when the checkpoint was saved.

-- name: checkpoint
UPDATE {{errandJob}} SET checkpoint = $3
WHERE id = $1 AND attempt = $2 AND (state = 'active') IS TRUE
RETURNING 1
