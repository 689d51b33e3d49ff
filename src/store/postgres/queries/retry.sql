-- retry: Store.retry(). Runs a dead, cancelled or expired job again, as the same job.
--
-- Guarantees:
--   - The job moves from errand_job_done back to errand_job as pending at $2, keeping its id,
--     attempts and errors; max_attempts grows when needed so one more attempt is allowed. Its
--     expiry and lease-expiry count are cleared.
--   - A completed, pending, active or unknown job changes nothing (no row: the store then reads
--     it with get).
--   - A pending or active job holding its unique key makes the insert fail (unique violation),
--     which rolls the whole statement back; the store reports INVALID_STATE.
--   - NOTIFYs the wake channel when it moved the job.
--
-- Why: `n` is read by the final SELECT because PostgreSQL runs only the plain CTEs that are read.
--
-- $1 id, $2 now, $3 notify tag.
-- Returns the job as now pending, as a JobRecord, or no row.

-- name: retry
WITH moved AS (
  DELETE FROM {{errandJobDone}} WHERE id = $1 AND state IN ('dead', 'cancelled', 'expired') RETURNING *
), ins AS (
  INSERT INTO {{errandJob}} (id, type, queue, state, payload, checkpoint, priority, weight, run_at, expires_at,
    attempt, max_attempts, backoff, retry_queue, delivery, timeout_ms, unique_key, errors,
    lease_expirations, created_at, started_at, owner)
  SELECT id, type, queue, 'pending', payload, checkpoint, priority, weight, $2, NULL, attempt,
    greatest(max_attempts, attempt + 1), backoff, retry_queue, delivery, timeout_ms, unique_key, errors, 0,
    created_at, started_at, owner
  FROM moved
  RETURNING {{hotFields}}
), n AS (SELECT pg_notify({{channel}}, $3) FROM (SELECT 1 FROM ins LIMIT 1) AS r)
SELECT * FROM ins WHERE (SELECT count(*) FROM n) >= 0
