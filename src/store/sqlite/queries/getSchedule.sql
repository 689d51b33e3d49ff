-- getSchedule: Store.getSchedule(). One schedule by name, as a ScheduleRecord.
--
-- Params: 1 name.

-- name: getSchedule
SELECT name, cron, timezone, type, payload, options, next_run_at AS nextRunAt,
  created_at AS createdAt, updated_at AS updatedAt
FROM errand_schedule
WHERE name = ?;
