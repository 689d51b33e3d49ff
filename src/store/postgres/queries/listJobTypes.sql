-- listJobTypes: Store.listJobTypes(). Every job type, by name.
--
-- No params. Returns JobTypeRecords.

-- name: listJobTypes
SELECT name, config, created_at AS "createdAt", updated_at AS "updatedAt" FROM {{errandJobType}} ORDER BY name
