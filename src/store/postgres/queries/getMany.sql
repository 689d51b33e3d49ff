-- getMany: Store.getMany(). Jobs by id, in either table.
--
-- Guarantees: one statement, so one snapshot: a job moving between errand_job and
-- errand_job_done meanwhile is seen in exactly one of them. The store puts the rows in the order
-- of the ids asked for, null where an id names no job.
--
-- $1 ids. Returns the jobs found as JobRecords, in no particular order.

-- name: getMany
SELECT {{hotFields}} FROM {{errandJob}} WHERE id = ANY($1::text[])
UNION ALL SELECT {{doneFields}} FROM {{errandJobDone}} WHERE id = ANY($1::text[])
