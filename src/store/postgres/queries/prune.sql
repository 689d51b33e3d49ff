-- prune: Store.prune(). Deletes finished jobs of one state that finished before a cutoff.
--
-- Guarantees: deletes at most $3 rows of errand_job_done per call; pending and active jobs are
-- never touched. The store runs it once per finished state, each with that state's retention,
-- until its limit is used up.
--
-- Why:
--   - The LIMIT in a subquery bounds each delete, so a large backlog is pruned in short statements
--     rather than one long one.
--   - The subquery locks its rows FOR UPDATE SKIP LOCKED, in index order: two pruners (every
--     worker may prune) would otherwise delete overlapping rows each in its own order, and each
--     could hold a row the other waits for. A pruner never waits for a row now, so it cannot
--     deadlock, and concurrent pruners split the backlog instead of queueing on the same rows.
--     Sorting by id instead would sort every prunable row on each call.
--
-- $1 state, $2 cutoff (finished_at before it is deleted), $3 limit.
-- Returns one row: n (rows deleted).

-- name: prune
WITH gone AS (
  DELETE FROM {{errandJobDone}} WHERE id IN (
    SELECT id FROM {{errandJobDone}} WHERE state = $1 AND finished_at < $2 LIMIT $3
    FOR UPDATE SKIP LOCKED
  )
  RETURNING 1
)
SELECT count(*)::integer AS n FROM gone
