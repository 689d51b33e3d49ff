-- listSchedules: Store.listSchedules(). A page of schedules by name.
--
-- Guarantees: the schedules named after $after (all when NULL), in byte order (the column's
-- BINARY collation), at most $limit.
-- Why: the primary key is in name order, so a page reads its rows and no more.
--
-- Params (named): $after, $limit.

-- name: listSchedules
SELECT name, cron, timezone, type, payload, options, next_run_at AS nextRunAt,
  created_at AS createdAt, updated_at AS updatedAt
FROM errand_schedule
WHERE $after IS NULL OR name > $after
ORDER BY name
LIMIT $limit;
