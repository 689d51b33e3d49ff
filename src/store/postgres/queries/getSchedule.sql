-- getSchedule: Store.getSchedule(). One schedule by name.
--
-- $1 name. Returns the schedule as a ScheduleRecord, or no row.

-- name: getSchedule
SELECT name, cron, timezone, type, payload, options, next_run_at AS "nextRunAt",
  created_at AS "createdAt", updated_at AS "updatedAt" FROM {{errandSchedule}} WHERE name = $1
