-- completeMany: Store.completeMany(). Records a batch of successful attempts in one statement.
--
-- Guarantees:
--   - Compare-and-set per item: only the current attempt of an active job completes; a stale or
--     unknown attempt changes nothing and is left out of the result.
--   - The job leaves errand_job and enters errand_job_done (state completed, its result,
--     finished_at) in the same statement, so a reader sees it in exactly one of them.
--   - A batch naming one attempt twice completes it once, with the first report's result; the
--     store gives the win to the first report.
--   - Row locks are taken in id order, as by every statement that locks several jobs and waits
--     (heartbeatMany, failMany), so two of them never deadlock (40P01).
--
-- Why:
--   - Completions are batched by the worker, so one round trip and one plan serve any batch.
--   - `input` keeps the first item per attempt (DISTINCT ON, by ordinality), in id order (the
--     column's collation, "C"). `locked` probes each item's row by primary key (LATERAL … LIMIT 1)
--     and locks it there, so rows are locked in input order: id order, as every statement that
--     locks several jobs does. A DELETE … USING would lock rows in its join's order, and two
--     batches naming the same jobs in different orders (a worker's completions against another's
--     heartbeats, or a sweeper's failures) could each hold a row the other waits for. A row
--     changed while it waited is re-checked against the probe (id and attempt), and its state is
--     read from the version locked; `held` keeps the active ones, and the DELETE touches only
--     rows `held` holds.
--   - No clause on errand_job says `state = 'active'`, and its rows are found by primary key,
--     whatever the statistics: `state = 'active'` is errand_job_lease's predicate, and with
--     statistics taken while nearly every job was pending (autovacuum after a bulk enqueue) the
--     planner reckoned a scan of every active job (that index, whole) cheaper than a probe per
--     item: O(active jobs) per item (a 20,000-job drain in 7–9.6 s instead of 2.1–2.2). Without
--     the state clause but as a plain join, `locked` became a scan of the whole table on a small
--     one. The DELETE joins `held`, a handful of rows by the planner's reckoning: a probe per row.
--     A stale item whose job is no longer active (recovered after its lease ran out, attempt not
--     yet taken again) is locked for the statement and left
--     (test/integration/postgres/stale-stats.test.ts).
--   - Dependencies: a job some other job waits for (has_dependents, read under its row lock, so
--     an enqueue that named it as a dependency and committed while we waited is seen) is not
--     completed by the plain statement ($5 false): it comes back as deferred, and the store
--     completes it again with $5 true in a transaction whose next statement (`unblock`,
--     dependencies.sql) settles its dependents with a snapshot taken after this one's locks. A
--     drain of jobs nothing waits for pays one boolean per row for this.
--
--   - Discard ($6, the Queue keeps no completed jobs): the job is deleted and not inserted into
--     history, unless something depends on it (its dependents read its result; retention keeps
--     it while one is blocked). Its edges as a dependent go with it, as when pruned. A
--     data-modifying CTE runs whether or not it is read, so the result comes from `moved`.
--
-- completeLeaves: the same for the usual batch, jobs nothing waits for and no other statement
-- touches meanwhile, without completeMany's row locks. `found` ({{leavesFound}}, postgres/columns.ts,
-- shared with completeLeavesDiscard) probes each item's row by primary
-- key (LATERAL … LIMIT 1, as `locked` does) without locking it, keeping those active under the
-- item's attempt with no dependents, in the snapshot, in id order; the DELETE takes each by its
-- ctid, in that order (a nested loop over `found`, a Tid Scan per row), so rows are still locked
-- in id order. A row changed since the snapshot by a committed statement (re-claimed, failed,
-- cancelled, named as a dependency, completed by a duplicate report) is a new version with
-- another ctid: under READ COMMITTED the DELETE re-checks `ctid = f.tid` against that version,
-- which fails, and leaves it. So the DELETE removes exactly the versions `found` vouched for, and
-- completeMany's locking statement settles whatever it left (the store runs it for those items
-- alone). The lock `locked` takes is a WAL record and a dirtied heap page per job that the
-- delete's own lock makes redundant when nothing else touches the row: ~1 of the completion's
-- 5 WAL records per job (bench/RESULTS.md). `moved` returns only what history and the answer
-- take, not `j.*`: each returned row is kept in a tuplestore (~2% of the statement).
--   $1 ids, $2 attempts, $3 results, $4 now. Returns (id, attempt) of each attempt
--   completed.
-- completeLeavesDiscard: completeLeaves for discard (the Queue keeps no completed jobs) without
--   the insert into errand_job_done: an INSERT of no rows still fires its statement trigger
--   (migration 12's history counts), a function call per batch that cost the discarding drain
--   ~8% (bench/RESULTS.md, session 36). $1 ids, $2 attempts. Returns as completeLeaves.
--
-- $1 ids, $2 attempts, $3 results (JSON text), $4 now, $5 also complete jobs with dependents,
-- $6 discard completed jobs nothing depends on.
-- Returns (id, attempt, deferred) of each attempt completed (deferred false) and of each current
-- attempt left for the transaction (deferred true, only when $5 is false).

-- name: completeMany
WITH input AS (
  SELECT DISTINCT ON (id, attempt) *
  FROM unnest($1::text[] COLLATE "C", $2::integer[], $3::text[]) WITH ORDINALITY AS i(id, attempt, result, ord)
  ORDER BY id, attempt, ord
), locked AS MATERIALIZED (
  SELECT j.id, j.attempt, j.state, i.result, j.has_dependents AND NOT $5::boolean AS deferred
  FROM input i CROSS JOIN LATERAL (
    SELECT j.id, j.attempt, j.state, j.has_dependents FROM {{errandJob}} j
    WHERE j.id = i.id AND j.attempt = i.attempt
    LIMIT 1
    FOR UPDATE
  ) AS j
), held AS (
  SELECT * FROM locked WHERE state = 'active'
), moved AS (
  DELETE FROM {{errandJob}} j USING held l
  WHERE j.id = l.id AND NOT l.deferred
  RETURNING j.*, l.result AS new_result
), ins AS (
  INSERT INTO {{errandJobDone}} ({{sharedColumns}}, state, result, finished_at)
  SELECT {{sharedColumns}}, 'completed', new_result, $4 FROM moved
  WHERE NOT $6::boolean OR has_dependents
), edges AS (
  DELETE FROM {{errandDependency}} e USING moved m
  WHERE $6::boolean AND NOT m.has_dependents AND m.depends_on IS NOT NULL AND e.job_id = m.id
    AND e.dep_id IN (SELECT jsonb_array_elements_text(m.depends_on::jsonb))
)
SELECT id, attempt, false AS deferred FROM moved
UNION ALL
SELECT id, attempt, true FROM held WHERE deferred

-- name: completeLeaves
WITH input AS (
  SELECT DISTINCT ON (id, attempt) *
  FROM unnest($1::text[] COLLATE "C", $2::integer[], $3::text[]) WITH ORDINALITY AS i(id, attempt, result, ord)
  ORDER BY id, attempt, ord
), {{leavesFound}}, moved AS (
  DELETE FROM {{errandJob}} j USING found f
  WHERE j.ctid = f.tid
  RETURNING {{sharedColumns}}, f.result AS new_result
), ins AS (
  INSERT INTO {{errandJobDone}} ({{sharedColumns}}, state, result, finished_at)
  SELECT {{sharedColumns}}, 'completed', new_result, $4 FROM moved
)
SELECT id, attempt FROM moved

-- name: completeLeavesDiscard
WITH input AS (
  SELECT DISTINCT ON (id, attempt) *
  FROM unnest($1::text[] COLLATE "C", $2::integer[]) WITH ORDINALITY AS i(id, attempt, ord)
  ORDER BY id, attempt, ord
), {{leavesFoundDiscard}}, moved AS (
  DELETE FROM {{errandJob}} j USING found f
  WHERE j.ctid = f.tid
  RETURNING j.id, j.attempt, j.depends_on
), edges AS (
  DELETE FROM {{errandDependency}} e USING moved m
  WHERE m.depends_on IS NOT NULL AND e.job_id = m.id
    AND e.dep_id IN (SELECT jsonb_array_elements_text(m.depends_on::jsonb))
)
SELECT id, attempt FROM moved
