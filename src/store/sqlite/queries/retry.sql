-- retry: Store.retry(). Puts a dead, cancelled or expired job back to pending, ready now, keeping
-- its id, attempt count, errors and checkpoint.
--
-- Guarantees:
--   - The store reads the job first (get.sql) and acts only on dead, cancelled or expired jobs;
--     read, reinsert and delete share one write transaction.
--   - The job gets at least one more attempt: max_attempts becomes max(max_attempts, attempt + 1).
--   - Lease expirations start again from 0; expires_at is dropped (it would expire at once).
--   - A unique key held by another blocked, pending or active job makes the reinsert fail with a
--     constraint error. When that holder is past its expires_at (no claim can take it, no sweep
--     has reached it), the store expires it, as an enqueue would (expiredKeyHolders in
--     enqueueMany.sql), and reinserts; otherwise it reports INVALID_STATE and nothing changes.
-- Why: a move back (INSERT … SELECT into errand_job, then retryDeleteDone), the reverse of
-- completeMany's, so the job is in exactly one table at every commit.
-- It copies the job's {{sharedColumns}} as they are but those its /*@sharedValues*/ marker gives;
-- `npm run gen` writes the values in from src/job-fields.ts (scripts/job-field-markers.ts), so a
-- new field is copied without editing this file.
--
-- retryReinsert params: 1 now (run_at), 2 id.
-- retryDeleteDone params: 1 id.

-- name: retryReinsert
INSERT INTO errand_job ({{sharedColumns}}, state)
SELECT /*@sharedValues run_at = ?; expires_at = NULL; max_attempts = max(max_attempts, attempt + 1);
    lease_expirations = 0; debounce_key = NULL*/,
  'pending'
FROM errand_job_done
WHERE id = ?;

-- name: retryDeleteDone
DELETE FROM errand_job_done WHERE id = ?;
