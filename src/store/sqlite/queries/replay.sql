-- replay: Store.replay(). Enqueues a fresh copy of a finished job under a new id: same type,
-- queue, payload, priority and retry policy; attempt 0, no errors, no checkpoint, ready now. The
-- original stays as it is.
--
-- Guarantees:
--   - The store reads the job first (get.sql) and replays only a finished one; read and insert
--     share one write transaction.
--   - The copy keeps the original's expiry rule: an original with an expires_at gives the copy as
--     long to start as it had (now + expires_at - created_at); a copy of a job that ended expired
--     is stored expired at once (replayExpired: finished_at and expires_at now, attempt 0), never
--     runs (as in Rickover), holds no unique key and wakes no one.
--   - A unique key held by a pending or active job, or a taken new id, makes the insert fail with
--     a constraint error, which the store turns into INVALID_STATE; nothing changes then.
-- Why: one INSERT … SELECT by primary key, so the copy is made in SQLite without a round trip
-- of the payload through JS.
--
-- replay params: 1 newId, 2 now (run_at), 3 now (expires_at base), 4 now (created_at), 5 id of
--   the original.
-- replayExpired params: 1 newId, 2 now (run_at), 3 now (expires_at), 4 now (created_at), 5 now
--   (finished_at), 6 id of the original.

-- name: replay
INSERT INTO errand_job (id, type, queue, state, payload, checkpoint, priority, weight, run_at,
  expires_at, attempt, max_attempts, backoff, retry_queue, delivery, timeout_ms, unique_key, errors,
  lease_expirations, created_at, started_at, owner, on_dependency_failure, key)
SELECT ?, type, queue, 'pending', payload, NULL, priority, weight, ?, ? + (expires_at - created_at), 0,
  max_attempts, backoff, retry_queue, delivery, timeout_ms, unique_key, '[]', 0, ?, NULL, owner,
  on_dependency_failure, key
FROM errand_job_done
WHERE id = ?;

-- name: replayExpired
INSERT INTO errand_job_done (id, type, queue, state, payload, checkpoint, result, priority, weight,
  run_at, expires_at, attempt, max_attempts, backoff, retry_queue, delivery, timeout_ms, unique_key,
  errors, lease_expirations, created_at, started_at, finished_at, owner, on_dependency_failure, key)
SELECT ?, type, queue, 'expired', payload, NULL, NULL, priority, weight, ?, ?, 0,
  max_attempts, backoff, retry_queue, delivery, timeout_ms, unique_key, '[]', 0, ?, NULL, ?, owner,
  on_dependency_failure, key
FROM errand_job_done
WHERE id = ?;
