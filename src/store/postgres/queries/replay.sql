-- replay: Store.replay(). Enqueues a fresh copy of a finished job under a new id.
--
-- Guarantees:
--   - The copy is pending at $3 with the original's type, queue, payload, priority, weight,
--     options, unique key and owner, and a clean slate: no checkpoint, attempts, errors, expiry
--     or start. The original stays in history unchanged.
--   - A pending, active or unknown job changes nothing (no row: the store then reads it with get).
--   - A pending or active job holding the unique key, or one with the new id, makes the insert
--     fail (unique violation); the store reports INVALID_STATE.
--   - NOTIFYs the wake channel when it made the copy.
--
-- Why: `n` is read by the final SELECT because PostgreSQL runs only the plain CTEs that are read.
--
-- $1 id of the finished job, $2 new id, $3 now, $4 notify tag.
-- Returns the copy as a JobRecord, or no row.

-- name: replay
WITH ins AS (
  INSERT INTO {{errandJob}} (id, type, queue, state, payload, checkpoint, priority, weight, run_at, expires_at,
    attempt, max_attempts, backoff, retry_queue, delivery, timeout_ms, unique_key, errors,
    lease_expirations, created_at, started_at, owner)
  SELECT $2, type, queue, 'pending', payload, NULL, priority, weight, $3, NULL, 0,
    max_attempts, backoff, retry_queue, delivery, timeout_ms, unique_key, '[]', 0, $3, NULL, owner
  FROM {{errandJobDone}} WHERE id = $1
  RETURNING {{hotFields}}
), n AS (SELECT pg_notify({{channel}}, $4) FROM (SELECT 1 FROM ins LIMIT 1) AS r)
SELECT * FROM ins WHERE (SELECT count(*) FROM n) >= 0
