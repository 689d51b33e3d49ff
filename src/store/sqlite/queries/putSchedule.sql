-- putSchedule: Store.putSchedule(). Creates a cron schedule or replaces one of that name.
--
-- Guarantees:
--   - One row per name; an existing schedule keeps its created_at and takes every other field.
-- Why: INSERT … ON CONFLICT DO UPDATE makes create-or-replace one statement.
--
-- Params: 1 name, 2 cron, 3 timezone, 4 type, 5 payload (JSON text), 6 options (JSON text),
--   7 nextRunAt, 8 createdAt, 9 updatedAt.

-- name: putSchedule
INSERT INTO errand_schedule (name, cron, timezone, type, payload, options, next_run_at, created_at,
  updated_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (name) DO UPDATE SET cron = excluded.cron, timezone = excluded.timezone,
  type = excluded.type, payload = excluded.payload, options = excluded.options,
  next_run_at = excluded.next_run_at, updated_at = excluded.updated_at;
