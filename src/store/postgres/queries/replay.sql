-- replay: Store.replay(). Enqueues a fresh copy of a finished job under a new id.
--
-- Guarantees:
--   - The copy is pending at $3 with the original's type, queue, payload, priority, weight,
--     options, unique key and owner, and a clean slate: no checkpoint, attempts, errors or start,
--     and no dependencies (the original's have finished; the copy waits for nothing). It keeps
--     the key but no debounce key (it is no debounce target) and starts with no snoozes.
--     The original stays in history unchanged.
--   - The copy keeps the original's expiry rule: an original with an expires_at gives the copy as
--     long to start as it had ($3 + expires_at - created_at, held to MAX_DATE_MS,
--     253402300799999, as backoff and snooze are: no later date fits the API), and a copy of a job that ended
--     expired is stored expired at once (finished_at and expires_at $3, attempt 0): it never runs,
--     as in Rickover. It holds no unique key and wakes no one.
--   - A pending, active or unknown job changes nothing (no row: the store then reads it with get).
--   - A blocked, pending or active job holding the unique key, or one with the new id, makes the
--     insert fail (unique violation); the store reports INVALID_STATE. When the holder is past its
--     expires_at (no claim can take it, no sweep has reached it), the store instead expires it, as
--     an enqueue would (expireKeyHolders in enqueueMany.sql), and runs this again, both in one
--     transaction: only a refused copy pays for the look.
--   - NOTIFYs the wake channel when it made a pending copy.
--
-- Why:
--   - `src` is read once; `ins` (a pending copy, into errand_job) and `gone` (an expired one,
--     into errand_job_done) each take the rows of their case, so exactly one of them inserts.
--   - Both copy every shared column as it is but those the /*@sharedValues*/ marker names (the
--     list is written in by `npm run gen` from src/job-fields.ts, scripts/job-field-markers.ts).
--   - `n` is read by the final SELECT because PostgreSQL runs only the plain CTEs that are read.
--
-- $1 id of the finished job, $2 new id, $3 now, $4 notify tag.
-- Returns the copy as a JobRecord, or no row.

-- name: replay
WITH src AS (
  SELECT * FROM {{errandJobDone}} WHERE id = $1
), ins AS (
  INSERT INTO {{errandJob}} ({{sharedColumns}}, state)
  SELECT /*@sharedValues id = $2; checkpoint = NULL; run_at = $3; expires_at = CASE WHEN expires_at IS NOT NULL
        THEN LEAST($3 + (expires_at - created_at), 253402300799999) END;
      attempt = 0; errors = '[]'; lease_expirations = 0; created_at = $3; started_at = NULL;
      depends_on = NULL; debounce_key = NULL; snoozes = 0*/,
    'pending'
  FROM src WHERE state <> 'expired'
  RETURNING {{hotFields}}
), gone AS (
  INSERT INTO {{errandJobDone}} ({{sharedColumns}}, state, result, finished_at)
  SELECT /*@sharedValues id = $2; checkpoint = NULL; run_at = $3; expires_at = $3;
      attempt = 0; errors = '[]'; lease_expirations = 0; created_at = $3; started_at = NULL;
      depends_on = NULL; debounce_key = NULL; snoozes = 0*/,
    'expired', NULL, $3
  FROM src WHERE state = 'expired'
  RETURNING {{doneFields}}
), n AS (SELECT pg_notify({{channel}}, $4) FROM (SELECT 1 FROM ins LIMIT 1) AS r)
SELECT * FROM ins WHERE (SELECT count(*) FROM n) >= 0
UNION ALL
SELECT * FROM gone
