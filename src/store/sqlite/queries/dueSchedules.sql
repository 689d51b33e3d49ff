-- dueSchedules: Store.dueSchedules(). Schedules whose next run has come, earliest first, for the
-- leader to fire (fireSchedule). Reads only.
--
-- Guarantees: at most `limit` schedules with next_run_at <= now, in next_run_at order.
-- Why: errand_schedule_due (next_run_at) serves the filter and the order.
--
-- Params: 1 now, 2 limit.

-- name: dueSchedules
SELECT name, cron, timezone, type, payload, options, next_run_at AS nextRunAt,
  created_at AS createdAt, updated_at AS updatedAt
FROM errand_schedule
WHERE next_run_at <= ?
ORDER BY next_run_at
LIMIT ?;
