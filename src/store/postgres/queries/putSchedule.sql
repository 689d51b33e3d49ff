-- putSchedule: Store.putSchedule(). Creates a schedule, or replaces one of the same name.
--
-- Guarantees: one row per name; a replaced schedule keeps its created_at and takes every other
-- field from the parameters.
--
-- $1 name, $2 cron, $3 timezone, $4 type, $5 payload (JSON text), $6 options (JSON text),
-- $7 next_run_at, $8 created_at, $9 updated_at.

-- name: putSchedule
INSERT INTO {{errandSchedule}} (name, cron, timezone, type, payload, options, next_run_at, created_at, updated_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
ON CONFLICT (name) DO UPDATE SET cron = excluded.cron, timezone = excluded.timezone, type = excluded.type,
  payload = excluded.payload, options = excluded.options, next_run_at = excluded.next_run_at,
  updated_at = excluded.updated_at
