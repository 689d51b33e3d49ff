-- deleteSchedule: Store.deleteSchedule(). Removes a schedule; the jobs it enqueued stay.
--
-- $1 name. Returns one row when a schedule was deleted.

-- name: deleteSchedule
DELETE FROM {{errandSchedule}} WHERE name = $1 RETURNING 1
