-- getJobType: Store.getJobType(). One job type by name.
--
-- $1 name. Returns the type as a JobTypeRecord, or no row.

-- name: getJobType
SELECT name, config, created_at AS "createdAt", updated_at AS "updatedAt" FROM {{errandJobType}} WHERE name = $1
