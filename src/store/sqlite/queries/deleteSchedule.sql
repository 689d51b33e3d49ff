-- deleteSchedule: Store.deleteSchedule(). Removes a schedule; jobs it already enqueued stay.
--
-- Guarantees: the store returns true when a schedule of that name existed.
--
-- Params: 1 name.

-- name: deleteSchedule
DELETE FROM errand_schedule WHERE name = ?;
