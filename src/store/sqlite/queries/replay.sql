-- replay: Store.replay(). Enqueues a fresh copy of a finished job under a new id: same type,
-- queue, payload, priority and retry policy; attempt 0, no errors, no checkpoint, ready now; no
-- dependencies, no debounce key and no snoozes. The original stays as it is.
--
-- Guarantees:
--   - The store reads the job first (get.sql) and replays only a finished one; read and insert
--     share one write transaction.
--   - The copy keeps the original's expiry rule: an original with an expires_at gives the copy as
--     long to start as it had (now + expires_at - created_at, held to MAX_DATE_MS,
--     253402300799999, as backoff and snooze are: no later date fits the API; min() of a NULL
--     expires_at stays NULL); a copy of a job that ended expired
--     is stored expired at once (replayExpired: finished_at and expires_at now, attempt 0), never
--     runs (as in Rickover), holds no unique key and wakes no one.
--   - A unique key held by a blocked, pending or active job, or a taken new id, makes the insert
--     fail with a constraint error. A holder past its expires_at (no claim can take it, no sweep
--     has reached it) is expired by the store, as an enqueue would (expiredKeyHolders in
--     enqueueMany.sql), and the insert runs again; otherwise the store reports INVALID_STATE and
--     nothing changes.
-- Why: one INSERT … SELECT by primary key, so the copy is made in SQLite without a round trip
-- of the payload through JS.
-- Both copy the original's {{sharedColumns}} as they are but those their /*@sharedValues*/
-- markers give; `npm run gen` writes the values in from src/job-fields.ts
-- (scripts/job-field-markers.ts), so a new field is copied without editing this file.
--
-- replay params: 1 newId, 2 now (run_at), 3 now (expires_at base), 4 now (created_at), 5 id of
--   the original.
-- replayExpired params: 1 newId, 2 now (run_at), 3 now (expires_at), 4 now (created_at), 5 now
--   (finished_at), 6 id of the original.

-- name: replay
INSERT INTO errand_job ({{sharedColumns}}, state)
SELECT /*@sharedValues id = ?; checkpoint = NULL; run_at = ?; expires_at = min(? + (expires_at - created_at), 253402300799999);
    attempt = 0; errors = '[]'; lease_expirations = 0; created_at = ?; started_at = NULL;
    depends_on = NULL; debounce_key = NULL; snoozes = 0*/,
  'pending'
FROM errand_job_done
WHERE id = ?;

-- name: replayExpired
INSERT INTO errand_job_done ({{sharedColumns}}, state, result, finished_at)
SELECT /*@sharedValues id = ?; checkpoint = NULL; run_at = ?; expires_at = ?;
    attempt = 0; errors = '[]'; lease_expirations = 0; created_at = ?; started_at = NULL;
    depends_on = NULL; debounce_key = NULL; snoozes = 0*/,
  'expired', NULL, ?
FROM errand_job_done
WHERE id = ?;
