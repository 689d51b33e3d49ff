-- deleteJobType: Store.deleteJobType(). Removes a job type's settings; its jobs stay.
--
-- Guarantees: the store returns true when a type of that name existed.
--
-- Params: 1 name.

-- name: deleteJobType
DELETE FROM errand_job_type WHERE name = ?;
