-- listJobTypes: Store.listJobTypes(). Every job type's settings, by name.
--
-- Params: none.

-- name: listJobTypes
SELECT name, config, created_at AS createdAt, updated_at AS updatedAt
FROM errand_job_type
ORDER BY name;
