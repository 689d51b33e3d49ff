-- get: Store.get(). One job by id, pending, active or finished.
--
-- Guarantees: one statement, so one snapshot: a job moving between errand_job and
-- errand_job_done meanwhile is seen in exactly one of them, never in neither.
--
-- $1 id. Returns the job as a JobRecord, or no row.

-- name: get
SELECT {{hotFields}} FROM {{errandJob}} WHERE id = $1
UNION ALL SELECT {{doneFields}} FROM {{errandJobDone}} WHERE id = $1 LIMIT 1
