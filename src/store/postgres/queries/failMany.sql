-- failMany: Store.failMany(). Records a batch of failed attempts in one statement: each goes back
-- to pending for its retry, or to history as dead.
--
-- Guarantees:
--   - Compare-and-set per item: only the current attempt of an active job fails; a stale or
--     unknown attempt changes nothing and is left out of the result.
--   - A lease-expiry item ($3 = 1) applies only once the lease has really expired at $7, so a
--     heartbeat that extended it wins; it also counts the expiry in lease_expirations.
--   - The first item naming an attempt is applied; a repeat of it in the batch is stale.
--   - The error is appended to the job's errors, which keep the most recent MAX_ERROR_HISTORY:
--     the append that would pass it drops the oldest.
--   - A retry that is ready now NOTIFYs the wake channel when the statement commits.
--   - Row locks are taken in id order, as by every statement that locks several jobs and waits
--     (heartbeatMany, completeMany), so two of them never deadlock (40P01).
--
-- Why:
--   - `input` keeps the first item per attempt (DISTINCT ON, by ordinality), in id order (the
--     column's collation, "C"). `locked` probes each item's row by primary key (LATERAL … LIMIT 1)
--     and locks it there, in input order, before anything changes: `retried` and `moved` run side
--     by side and would each lock rows in their own join's order, so two batches naming the same
--     jobs in different orders (a sweeper's and a worker's, or a worker's failures against
--     another's heartbeats) could each hold a row the other waits for. A row changed while it
--     waited is re-checked against the probe (attempt, and for a lease expiry the lease itself,
--     so a heartbeat that got in first wins), and its state is read from the version locked;
--     `held` keeps the active ones.
--   - No clause on errand_job says `state = 'active'`, errand_job_lease's predicate, and rows are
--     found by primary key whatever the statistics: see
--     completeMany.sql (stale statistics made the planner scan every active job per item).
--   - `retried` puts the attempts with a retryAt back to pending in errand_job; `moved` and
--     `killed` take the others to errand_job_done. Both touch only rows `held` holds, and
--     different ones: a row has one attempt, and only items naming it match.
--   - errors is a JSON array kept as text: the new entry is spliced in as text, so the entries
--     already stored keep their exact text; {{appendedErrors}} (columns.ts) trims a full history
--     in SQL the same way, from `errors` and `new_error`, the names every statement that appends
--     gives them.
--   - `killed` copies every shared column but errors and lease_expirations as they are; the list is
--     written in by `npm run gen` from src/job-fields.ts (/*@sharedValues*/, scripts/job-field-markers.ts).
--   - `n` is read by the final SELECT because PostgreSQL runs only the plain CTEs that are read.
--
--   - Dependencies: an attempt that would end dead on a job some other job waits for
--     (has_dependents, read under its row lock) is left alone by the plain statement ($9 false)
--     and comes back as 'deferred'; the store fails it again with $9 true in a transaction whose
--     next statements settle its dependents (dependencies.sql), as completeMany does.
--
-- $1 ids, $2 attempts, $3 lease expired (0 or 1), $4 retryAt (NULL: dead), $5 retry queues (NULL:
-- keep the queue), $6 errors (JSON text), $7 now, $8 notify tag, $9 also kill jobs with
-- dependents.
-- Returns (id, attempt, state) for each attempt failed, state 'pending' or 'dead', and 'deferred'
-- for each left for the transaction (only when $9 is false).

-- name: failMany
WITH input AS (
  SELECT DISTINCT ON (id, attempt) *
  FROM unnest($1::text[] COLLATE "C", $2::integer[], $3::integer[], $4::bigint[], $5::text[], $6::text[])
    WITH ORDINALITY AS i(id, attempt, expired, retry_at, retry_queue, error, ord)
  ORDER BY id, attempt, ord
), locked AS MATERIALIZED (
  SELECT j.id, j.attempt, j.state, i.expired, i.retry_at, i.retry_queue, i.error AS new_error,
    i.retry_at IS NULL AND j.has_dependents AND NOT $9::boolean AS deferred
  FROM input i CROSS JOIN LATERAL (
    SELECT j.id, j.attempt, j.state, j.has_dependents FROM {{errandJob}} j
    WHERE j.id = i.id AND j.attempt = i.attempt AND (i.expired = 0 OR j.lease_expires_at <= $7)
    LIMIT 1
    FOR UPDATE
  ) AS j
), held AS (
  SELECT * FROM locked WHERE state = 'active'
), retried AS (
  UPDATE {{errandJob}} j SET state = 'pending', run_at = l.retry_at, queue = coalesce(l.retry_queue, j.queue),
    errors = {{appendedErrors}},
    lease_expires_at = NULL, worker_id = NULL,
    lease_expirations = j.lease_expirations + l.expired
  FROM held l
  WHERE l.retry_at IS NOT NULL AND j.id = l.id
  RETURNING j.id, j.attempt, j.run_at
), moved AS (
  DELETE FROM {{errandJob}} j USING held l
  WHERE l.retry_at IS NULL AND NOT l.deferred AND j.id = l.id
  RETURNING j.*, l.new_error, l.expired AS new_expired
), killed AS (
  INSERT INTO {{errandJobDone}} ({{sharedColumns}}, state, result, finished_at)
  SELECT /*@sharedValues errors = {{appendedErrors}}; lease_expirations = lease_expirations + new_expired*/,
    'dead', NULL, $7
  FROM moved
  RETURNING id, attempt
), ready AS (SELECT 1 FROM retried WHERE run_at <= $7),
n AS (SELECT pg_notify({{channel}}, $8) FROM (SELECT 1 FROM ready LIMIT 1) AS r)
SELECT id, attempt, 'pending' AS state FROM retried WHERE (SELECT count(*) FROM n) >= 0
UNION ALL
SELECT id, attempt, 'dead' FROM killed
UNION ALL
SELECT id, attempt, 'deferred' FROM held WHERE deferred
