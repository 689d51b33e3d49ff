-- replay: Store.replay(). Enqueues a fresh copy of a finished job under a new id: same type,
-- queue, payload, priority and retry policy; attempt 0, no errors, no checkpoint, ready now. The
-- original stays as it is.
--
-- Guarantees:
--   - The store reads the job first (get.sql) and replays only a finished one; read and insert
--     share one write transaction.
--   - A unique key held by a pending or active job, or a taken new id, makes the insert fail with
--     a constraint error, which the store turns into INVALID_STATE; nothing changes then.
-- Why: one INSERT … SELECT by primary key, so the copy is made in SQLite without a round trip
-- of the payload through JS.
--
-- Params: 1 newId, 2 now (run_at), 3 now (created_at), 4 id of the original.

-- name: replay
INSERT INTO errand_job (id, type, queue, state, payload, checkpoint, priority, weight, run_at,
  expires_at, attempt, max_attempts, backoff, retry_queue, delivery, timeout_ms, unique_key, errors,
  lease_expirations, created_at, started_at, owner)
SELECT ?, type, queue, 'pending', payload, NULL, priority, weight, ?, NULL, 0,
  max_attempts, backoff, retry_queue, delivery, timeout_ms, unique_key, '[]', 0, ?, NULL, owner
FROM errand_job_done
WHERE id = ?;
