-- getJobType: Store.getJobType(). One job type's settings by name, as a JobTypeRecord.
--
-- Params: 1 name.

-- name: getJobType
SELECT name, config, created_at AS createdAt, updated_at AS updatedAt
FROM errand_job_type
WHERE name = ?;
