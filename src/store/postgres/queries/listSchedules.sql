-- listSchedules: Store.listSchedules(). A page of schedules by name.
--
-- Guarantees: the schedules named after $1 (all when NULL), in byte order (COLLATE "C"), at most
-- $2. Why: the primary key is in name order, so a page reads its rows and no more.
--
-- $1 after, $2 limit. Returns ScheduleRecords.

-- name: listSchedules
SELECT name, cron, timezone, type, payload, options, next_run_at AS "nextRunAt",
  created_at AS "createdAt", updated_at AS "updatedAt" FROM {{errandSchedule}}
WHERE $1::text IS NULL OR name > $1::text
ORDER BY name
LIMIT $2
