-- dependencies: the statements the store runs, inside the transaction of enqueueMany,
-- completeMany, failMany, cancel, expirePending and retry, to keep blocked jobs in step with the
-- jobs they wait for (dependencies.ts drives them).
--
-- Guarantees:
--   - A blocked job's blocked_by is the number of its dependencies still unfinished (under
--     on_dependency_failure 'cancel': none of them has failed, or it would be cancelled).
--   - Every change to a dependent happens in the transaction that finished its dependency, in a
--     statement after the one that finished it: that statement took the dependency's row lock,
--     so this one's snapshot sees every dependent committed before (an enqueue holds its
--     dependencies' row locks from `lockDependencies` to its commit).
--   - Dependents are locked in id order, as by every statement that locks several jobs and waits.
--     Locks run from a dependency down to its dependents (never up), except in `lockDependencies`
--     and `shareDependencies`, which lock the dependencies of a job that nothing can see yet (an
--     enqueue) or that is in history (a retry, before it moves the job back).
--
-- lockDependencies: $1 ids. Locks those in errand_job (id order) and marks them has_dependents
--   (only where it is not set yet, so marking a dependency twice writes once). Returns (id, state)
--   of each.
-- shareDependencies: $1 ids. Locks those in errand_job_done FOR SHARE (id order), so neither a
--   retry nor a pruner changes them before the enqueue commits. Returns (id, state) of each.
-- addEdges: $1 dependency ids, $2 job ids: the edges of jobs just inserted with dependencies.
-- cancelDependents: $1 ids of locked blocked jobs (or of jobs just inserted blocked), $2 the
--   error entry (JSON text) each gets, $3 now. Moves them to errand_job_done as cancelled.
--   Returns each as a JobRecord (as stored in errand_job_done) with "hasDependents": the store
--   answers with them (Store's `cascaded`), and settles the dependents of those that have some.
-- dependentsToSettle: $1 ids of jobs that just ended dead, cancelled or expired. Locks their
--   blocked dependents (id order) and returns each as (id, attempt, "dependsOn",
--   "onDependencyFailure").
-- unblock: $1 ids of jobs that just finished (completed, or failed for dependents under 'run'),
--   $2 now, $3 notify tag. Each blocked dependent counts one fewer unfinished dependency per edge
--   from them (so one batch completing 40 of a job's dependencies counts 40); one reaching 0 is
--   pending, and when one is ready the statement NOTIFYs the wake channel. Returns one row:
--   unblocked (jobs made pending), ready (of which run_at <= $2).

-- name: lockDependencies
WITH locked AS MATERIALIZED (
  SELECT id, state, has_dependents FROM {{errandJob}} WHERE id = ANY($1::text[]) ORDER BY id FOR UPDATE
), mark AS (
  UPDATE {{errandJob}} j SET has_dependents = true FROM locked l WHERE j.id = l.id AND NOT l.has_dependents
)
SELECT id, state FROM locked

-- name: shareDependencies
SELECT id, state FROM {{errandJobDone}} WHERE id = ANY($1::text[]) ORDER BY id FOR SHARE

-- name: addEdges
INSERT INTO {{errandDependency}} (dep_id, job_id)
SELECT * FROM unnest($1::text[], $2::text[]) ON CONFLICT DO NOTHING

-- name: cancelDependents
WITH moved AS (
  DELETE FROM {{errandJob}} j USING unnest($1::text[], $2::text[]) AS u(id, error)
  WHERE j.id = u.id AND j.state IN ('blocked', 'pending')
  RETURNING j.*, u.error AS new_error
), ins AS (
  INSERT INTO {{errandJobDone}} ({{sharedColumns}}, state, result, finished_at)
  SELECT /*@sharedValues errors = {{appendedErrors}}*/,
    'cancelled', NULL, $3
  FROM moved
  RETURNING {{doneFields}}
)
SELECT ins.*, m.has_dependents AS "hasDependents" FROM ins JOIN moved m ON m.id = ins.id

-- name: dependentsToSettle
SELECT j.id, j.attempt, j.depends_on AS "dependsOn", j.on_dependency_failure AS "onDependencyFailure"
FROM {{errandJob}} j
WHERE j.id IN (SELECT e.job_id FROM {{errandDependency}} e WHERE e.dep_id = ANY($1::text[]))
  AND j.state = 'blocked'
ORDER BY j.id
FOR UPDATE

-- name: unblock
WITH counts AS (
  SELECT e.job_id AS id, count(*)::integer AS n FROM {{errandDependency}} e
  WHERE e.dep_id = ANY($1::text[]) GROUP BY e.job_id
), locked AS MATERIALIZED (
  SELECT j.id, c.n FROM {{errandJob}} j JOIN counts c ON j.id = c.id
  WHERE j.state = 'blocked'
  ORDER BY j.id
  FOR UPDATE OF j
), upd AS (
  UPDATE {{errandJob}} j SET blocked_by = j.blocked_by - l.n,
    state = CASE WHEN j.blocked_by - l.n <= 0 THEN 'pending' ELSE 'blocked' END
  FROM locked l WHERE j.id = l.id AND j.state = 'blocked'
  RETURNING j.state, j.run_at
), ready AS (SELECT 1 FROM upd WHERE state = 'pending' AND run_at <= $2),
n AS (SELECT pg_notify({{channel}}, $3) FROM (SELECT 1 FROM ready LIMIT 1) AS r)
SELECT count(*) FILTER (WHERE state = 'pending')::integer AS unblocked,
  (SELECT count(*) FROM ready)::integer AS ready
FROM upd WHERE (SELECT count(*) FROM n) >= 0
