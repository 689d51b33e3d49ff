-- failMany: Store.failMany(). Records each item's failure: the job goes back to pending for a
-- retry at retryAt (failRetry), or moves to errand_job_done as `dead` (failKill, then deleteJob
-- from completeMany.sql). Either way the item's error is appended to the job's errors.
--
-- Guarantees:
--   - Fencing: each item is its own compare-and-set on (id, state = 'active', attempt), as a lone
--     fail would be; a stale item changes nothing and the store reports null for it.
--   - An item that reports an expired lease (the lease sweeper's) applies only while the lease
--     really is expired (lease_expires_at <= now), so a job whose holder heartbeated in the
--     meantime is left alone; such an item also counts one more lease expiration.
--   - A retry clears the holder and lease and may move the job to its retry queue.
--   - The history keeps the most recent MAX_ERROR_HISTORY entries: the append that would pass it
--     drops the oldest (a history stored longer before the bound is cut to it here).
-- Why: json_insert({{errorsWithRoom}}, '$[#]', json(?)) appends in SQL, so the errors array is
-- never read into JS and written back; {{errorsWithRoom}} (statements.ts) trims it there too. A
-- kill is a move (INSERT … SELECT, then delete), for the same reason as completeMany: errand_job
-- holds only pending and active jobs.
-- failKill copies the job's {{sharedColumns}} as they are but errors and lease_expirations (its
-- /*@sharedValues*/ marker); `npm run gen` writes the values in from src/job-fields.ts
-- (scripts/job-field-markers.ts), so a new field is copied without editing this file.
--
-- failRetry params: 1 retryAt, 2 retryQueue or NULL (keep the queue), 3 error (JSON text),
--   4 leaseExpired (1 or 0), 5 id, 6 attempt, 7 leaseExpired again, 8 now.
-- failKill params: 1 error (JSON text), 2 leaseExpired (1 or 0), 3 now (finished_at), 4 id,
--   5 attempt, 6 leaseExpired again, 7 now.

-- name: failRetry
UPDATE errand_job
SET state = 'pending', run_at = ?, queue = COALESCE(?, queue),
  errors = json_insert({{errorsWithRoom}}, '$[#]', json(?)), lease_expires_at = NULL, worker_id = NULL,
  lease_expirations = lease_expirations + ?
WHERE id = ? AND state = 'active' AND attempt = ? AND (? = 0 OR lease_expires_at <= ?);

-- name: failKill
INSERT INTO errand_job_done ({{sharedColumns}}, state, result, finished_at)
SELECT /*@sharedValues errors = json_insert({{errorsWithRoom}}, '$[#]', json(?));
    lease_expirations = lease_expirations + ?*/,
  'dead', NULL, ?
FROM errand_job
WHERE id = ? AND state = 'active' AND attempt = ? AND (? = 0 OR lease_expires_at <= ?);
