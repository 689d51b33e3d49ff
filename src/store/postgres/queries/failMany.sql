-- failMany: Store.failMany(). Records a batch of failed attempts in one statement: each goes back
-- to pending for its retry, or to history as dead.
--
-- Guarantees:
--   - Compare-and-set per item: only the current attempt of an active job fails; a stale or
--     unknown attempt changes nothing and is left out of the result.
--   - A lease-expiry item ($3 = 1) applies only once the lease has really expired at $7, so a
--     heartbeat that extended it wins; it also counts the expiry in lease_expirations.
--   - The first item naming an attempt is applied; a repeat of it in the batch is stale.
--   - The error is appended to the job's errors.
--   - A retry that is ready now NOTIFYs the wake channel when the statement commits.
--
-- Why:
--   - `input` keeps the first item per attempt (DISTINCT ON, by ordinality). `retried` puts the
--     attempts with a retryAt back to pending in errand_job; `moved` and `killed` take the others
--     to errand_job_done. The two touch different rows: a row has one attempt, and only items
--     naming it match.
--   - errors is a JSON array kept as text: the new entry is spliced in as text, so the entries
--     already stored keep their exact text.
--   - `n` is read by the final SELECT because PostgreSQL runs only the plain CTEs that are read.
--
-- $1 ids, $2 attempts, $3 lease expired (0 or 1), $4 retryAt (NULL: dead), $5 retry queues (NULL:
-- keep the queue), $6 errors (JSON text), $7 now, $8 notify tag.
-- Returns (id, attempt, state) for each attempt failed, state 'pending' or 'dead'.

-- name: failMany
WITH input AS (
  SELECT DISTINCT ON (id, attempt) *
  FROM unnest($1::text[], $2::integer[], $3::integer[], $4::bigint[], $5::text[], $6::text[])
    WITH ORDINALITY AS i(id, attempt, expired, retry_at, retry_queue, error, ord)
  ORDER BY id, attempt, ord
), retried AS (
  UPDATE {{errandJob}} j SET state = 'pending', run_at = i.retry_at, queue = coalesce(i.retry_queue, j.queue),
    errors = CASE WHEN j.errors = '[]' THEN '[' || i.error || ']' ELSE left(j.errors, -1) || ',' || i.error || ']' END,
    lease_expires_at = NULL, worker_id = NULL,
    lease_expirations = j.lease_expirations + i.expired
  FROM input i
  WHERE i.retry_at IS NOT NULL AND j.id = i.id AND j.state = 'active' AND j.attempt = i.attempt
    AND (i.expired = 0 OR j.lease_expires_at <= $7)
  RETURNING j.id, j.attempt, j.run_at
), moved AS (
  DELETE FROM {{errandJob}} j USING input i
  WHERE i.retry_at IS NULL AND j.id = i.id AND j.state = 'active' AND j.attempt = i.attempt
    AND (i.expired = 0 OR j.lease_expires_at <= $7)
  RETURNING j.*, i.error AS new_error, i.expired AS new_expired
), killed AS (
  INSERT INTO {{errandJobDone}} ({{sharedColumns}}, state, result, finished_at)
  SELECT id, type, queue, payload, checkpoint, priority, weight, run_at, expires_at, attempt,
    max_attempts, backoff, retry_queue, delivery, timeout_ms, unique_key,
    CASE WHEN errors = '[]' THEN '[' || new_error || ']' ELSE left(errors, -1) || ',' || new_error || ']' END,
    lease_expirations + new_expired, created_at, started_at, owner,
    'dead', NULL, $7
  FROM moved
  RETURNING id, attempt
), ready AS (SELECT 1 FROM retried WHERE run_at <= $7),
n AS (SELECT pg_notify({{channel}}, $8) FROM (SELECT 1 FROM ready LIMIT 1) AS r)
SELECT id, attempt, 'pending' AS state FROM retried WHERE (SELECT count(*) FROM n) >= 0
UNION ALL
SELECT id, attempt, 'dead' FROM killed
