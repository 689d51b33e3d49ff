-- Dependencies: the statements the Store methods that move jobs share to follow dependency edges
-- (enqueueMany, completeMany, failMany, cancel, expirePending, retry, prune), and the reads of
-- getMany and dependents. See migrations/0004_dependencies.sql for the columns and the edge table.
--
-- Guarantees (each runs inside the calling method's write transaction, so a completion and the
-- unblocking it causes commit together):
--   - A blocked job has a row in errand_blocked whose blocked_by counts its dependencies that are
--     unfinished (in errand_job: blocked, pending or active), or under 'run' not finished in any
--     state; it is pending from the write that brings the count to 0 (the store then runs
--     dependencyRelease), and the row goes whenever the job leaves blocked.
--   - dependencyUnblock and dependencyRunOn touch only blocked dependents (those with a row): a
--     dependent that was already cancelled, or already ran, is never brought back.
--   - has_dependents is set on a job when the first edge to it is written, so a completion looks
--     for dependents (one primary-key prefix probe) only when it has some.
-- Why: SQLite has one writer, so these run one after another and need no row locks; statements
-- that change several dependents do it in one UPDATE over the edge table's primary key.
--
-- dependencyState params: $id. dependencyEdge: 1 dep_id, 2 job_id. dependencyMark: 1 id.
-- dependencyBlock: 1 id, 2 blocked_by, 3 on_dependency_failure; dependencyBlockState: 1 id.
-- dependencyUnblock: 1 dep_id (all blocked dependents); dependencyRunOn: 1 dep_id (blocked
-- dependents under 'run'); both return each dependent's id and count left.
-- dependencyRelease: 1 id (a job whose count reached 0 is pending); dependencyUnblocked: 1 id.
-- dependencyDoomed: 1 dep_id.
-- dependencyCancel: 1 message, 2 dependency id, 3 now, 4 now (finished_at), 5 id. It copies the job's
--   {{sharedColumns}} as they are but errors (/*@sharedValues*/, written in by `npm run gen` from
--   src/job-fields.ts), whose entry is appended as failMany appends one ({{errorsWithRoom}}: the
--   most recent MAX_ERROR_HISTORY kept).
-- moveDelete: 1 id. dependencyUnfinished: 1 depends_on (JSON text).
-- dependencyRestore: $blockedBy, $id (with dependencyBlock when $blockedBy > 0).
-- dependencyRetried: 1 dep_id.
-- dependentsPage: $id (the dependency), $cursor or NULL ('' below every id: a range of the key), $limit. dropEdgesAsDependency: 1 dep_id.
-- dropEdgesOfJob: 1 job_id, 2 depends_on (JSON text).

-- name: dependencyState
SELECT state FROM errand_job WHERE id = $id
UNION ALL
SELECT state FROM errand_job_done WHERE id = $id;

-- name: dependencyEdge
INSERT INTO errand_dependency (dep_id, job_id) VALUES (?, ?) ON CONFLICT DO NOTHING;

-- name: dependencyMark
UPDATE errand_job SET has_dependents = 1 WHERE id = ? AND has_dependents = 0;

-- name: dependencyBlock
INSERT INTO errand_blocked (job_id, blocked_by, on_dependency_failure) VALUES (?, ?, ?);

-- name: dependencyBlockState
UPDATE errand_job SET state = 'blocked' WHERE id = ?;

-- name: dependencyUnblock
UPDATE errand_blocked SET blocked_by = blocked_by - 1
WHERE job_id IN (SELECT job_id FROM errand_dependency WHERE dep_id = ?)
RETURNING job_id, blocked_by;

-- name: dependencyRunOn
UPDATE errand_blocked SET blocked_by = blocked_by - 1
WHERE on_dependency_failure = 'run' AND job_id IN (SELECT job_id FROM errand_dependency WHERE dep_id = ?)
RETURNING job_id, blocked_by;

-- name: dependencyRelease
UPDATE errand_job SET state = 'pending' WHERE id = ? AND state = 'blocked';

-- name: dependencyUnblocked
DELETE FROM errand_blocked WHERE job_id = ?;

-- name: dependencyDoomed
SELECT job_id AS id FROM errand_blocked
WHERE on_dependency_failure = 'cancel' AND job_id IN (SELECT job_id FROM errand_dependency WHERE dep_id = ?)
ORDER BY job_id;

-- name: dependencyCancel
INSERT INTO errand_job_done ({{sharedColumns}}, state, result, finished_at)
SELECT /*@sharedValues errors = json_insert({{errorsWithRoom}}, '$[#]', json_object('attempt', attempt, 'message', ?,
      'kind', 'dependency_failed', 'dependency', ?, 'at', ?))*/,
  'cancelled', NULL, ?
FROM errand_job
WHERE id = ?;

-- name: moveDelete
DELETE FROM errand_job WHERE id = ? RETURNING has_dependents;

-- name: dependencyUnfinished
SELECT count(*) FROM json_each(?) AS d JOIN errand_job AS j ON j.id = d.value;

-- name: dependencyRestore
UPDATE errand_job
SET state = CASE WHEN $blockedBy > 0 THEN 'blocked' ELSE state END,
  has_dependents = EXISTS (SELECT 1 FROM errand_dependency WHERE dep_id = $id)
WHERE id = $id;

-- name: dependencyRetried
UPDATE errand_blocked SET blocked_by = blocked_by + 1
WHERE job_id IN (SELECT job_id FROM errand_dependency WHERE dep_id = ?);

-- name: dependentsPage
SELECT job_id FROM errand_dependency
WHERE dep_id = $id AND job_id > coalesce($cursor, '')
ORDER BY job_id
LIMIT $limit;

-- name: dropEdgesAsDependency
DELETE FROM errand_dependency WHERE dep_id = ?;

-- name: dropEdgesOfJob
DELETE FROM errand_dependency WHERE job_id = ? AND dep_id IN (SELECT value FROM json_each(?));
