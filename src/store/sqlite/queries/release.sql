-- release: Store.release(). Hands an active job back to pending without counting the attempt
-- against it (a worker shutting down before it started the job).
--
-- Guarantees:
--   - Fencing: only while the job is active under the given attempt; a stale call changes
--     nothing and the store returns false.
--   - The job is ready at once (run_at = now), holder and lease cleared.
--   - max_attempts grows by one, so the attempt the claim counted does not use up a retry.
-- Why: the attempt number must keep growing (it is the fencing token), so the claim's attempt is
-- given back through max_attempts instead.
--
-- Params: 1 now (run_at), 2 id, 3 attempt.

-- name: release
UPDATE errand_job
SET state = 'pending', run_at = ?, lease_expires_at = NULL, worker_id = NULL,
  max_attempts = max_attempts + 1
WHERE id = ? AND attempt = ? AND state = 'active';
