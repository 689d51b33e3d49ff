-- listSchedules: Store.listSchedules(). Every schedule, by name.
--
-- Params: none.

-- name: listSchedules
SELECT name, cron, timezone, type, payload, options, next_run_at AS nextRunAt,
  created_at AS createdAt, updated_at AS updatedAt
FROM errand_schedule
ORDER BY name;
