-- deleteJobType: Store.deleteJobType(). Removes a job type.
--
-- $1 name. Returns one row when a type was deleted.

-- name: deleteJobType
DELETE FROM {{errandJobType}} WHERE name = $1 RETURNING 1
