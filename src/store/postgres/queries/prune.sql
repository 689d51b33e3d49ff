-- prune: Store.prune(). Deletes finished jobs of one state that finished before a cutoff.
--
-- Guarantees: deletes at most $3 rows of errand_job_done per call; blocked, pending and active
-- jobs are never touched. A finished job that some blocked job still waits for is kept (its
-- dependent would lose the outcome it waits for); the edges of each job deleted go with it, both
-- those naming its dependencies and those naming it as one. The store runs it once per finished
-- state, each with that state's retention, until its limit is used up.
--
-- Why:
--   - The LIMIT in a subquery bounds each delete, so a large backlog is pruned in short statements
--     rather than one long one.
--   - The subquery locks its rows FOR UPDATE SKIP LOCKED, in index order: two pruners (every
--     worker may prune) would otherwise delete overlapping rows each in its own order, and each
--     could hold a row the other waits for. A pruner never waits for a row now, so it cannot
--     deadlock, and concurrent pruners split the backlog instead of queueing on the same rows.
--     Sorting by id instead would sort every prunable row on each call.
--   - An enqueue naming a finished job as a dependency holds it FOR SHARE until it commits, so a
--     pruner skips it rather than deleting what the new job will wait on.
--   - The "still waited for" check probes errand_dependency's primary key by dep_id; a job never
--     named as a dependency finds no edge and costs one index probe.
--
-- $1 state, $2 cutoff (finished_at before it is deleted), $3 limit.
-- Returns one row: n (rows deleted).
--
-- pruneFairKeys: drops at most $1 fair keys' next turns ({{errandFairKey}}) at or below their
-- type's turn now. A key's next turn only matters above it (a new job gets max(the key's next, the
-- type's turn), and the type's turn never goes down), so the dropped rows change no turn; without
-- this a fair type keeps a row for every key it ever saw. SKIP LOCKED: a row an enqueue is
-- moving up is left to the next call, and two pruners never wait on each other.

-- foldDoneCounts: sums at most $1 rows of errand_done_delta into errand_done_count (migration 12),
-- and dropZeroCounts drops the counts that came back to 0 (every job of a group pruned; SKIP
-- LOCKED: a count a fold is adding to is left, and neither waits on the other). One statement moves a
-- delta from one table to the other, so stats() sees it in exactly one. The deltas are taken FOR
-- UPDATE SKIP LOCKED, so two folds (every worker's retention pass) split them and never wait on each
-- other for them; each adds its sums to the counts in (queue, type, state) order, so two folds
-- adding to the same counts lock them in one order and cannot deadlock. A delta row lives from its
-- statement to the next retention pass: stats() sums at most a pass's worth of them.
-- Returns one row: n (deltas folded).

-- name: prune
WITH gone AS (
  DELETE FROM {{errandJobDone}} WHERE id IN (
    SELECT d.id FROM {{errandJobDone}} d WHERE d.state = $1 AND d.finished_at < $2
      AND NOT EXISTS (
        SELECT 1 FROM {{errandDependency}} e JOIN {{errandJob}} j ON j.id = e.job_id
        WHERE e.dep_id = d.id AND j.state = 'blocked'
      )
    LIMIT $3
    FOR UPDATE OF d SKIP LOCKED
  )
  RETURNING id, depends_on
), waited AS (
  DELETE FROM {{errandDependency}} e USING gone g WHERE e.dep_id = g.id
), waiting AS (
  DELETE FROM {{errandDependency}} e USING gone g
  WHERE g.depends_on IS NOT NULL AND e.job_id = g.id
    AND e.dep_id IN (SELECT jsonb_array_elements_text(g.depends_on::jsonb))
)
SELECT count(*)::integer AS n FROM gone

-- name: pruneFairKeys
DELETE FROM {{errandFairKey}} WHERE (type, key) IN (
  SELECT k.type, k.key FROM {{errandFairKey}} k JOIN {{errandFairType}} t ON t.type = k.type
  WHERE k.next <= t.turn
  LIMIT $1
  FOR UPDATE OF k SKIP LOCKED
)

-- name: foldDoneCounts
WITH moved AS (
  DELETE FROM {{errandDoneDelta}} WHERE ctid = ANY (ARRAY(
    SELECT ctid FROM {{errandDoneDelta}} LIMIT $1 FOR UPDATE SKIP LOCKED
  ))
  RETURNING queue, type, state, n
), summed AS (
  INSERT INTO {{errandDoneCount}} AS c (queue, type, state, n)
  SELECT queue, type, state, sum(n) FROM moved GROUP BY queue, type, state ORDER BY queue, type, state
  ON CONFLICT (queue, type, state) DO UPDATE SET n = c.n + excluded.n
)
SELECT count(*)::integer AS n FROM moved

-- name: dropZeroCounts
DELETE FROM {{errandDoneCount}} WHERE ctid = ANY (ARRAY(
  SELECT ctid FROM {{errandDoneCount}} WHERE n = 0 FOR UPDATE SKIP LOCKED
))
