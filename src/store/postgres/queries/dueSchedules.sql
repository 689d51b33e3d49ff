-- dueSchedules: Store.dueSchedules(). Schedules whose next tick has come, the most overdue first.
--
-- Guarantees: reads only; firing a tick is fireSchedule's compare-and-set, so any number of
-- schedulers may look.
--
-- $1 now, $2 limit. Returns ScheduleRecords.

-- name: dueSchedules
SELECT name, cron, timezone, type, payload, options, next_run_at AS "nextRunAt",
  created_at AS "createdAt", updated_at AS "updatedAt" FROM {{errandSchedule}}
WHERE next_run_at <= $1 ORDER BY next_run_at LIMIT $2
