-- snooze: Store.snooze(). Ends an active attempt without failing it: the job is pending again at
-- $runAt, its lease and holder cleared, its errors untouched.
--
-- Guarantees:
--   - Fencing: only while the job is active under the given attempt; a stale snooze changes
--     nothing (the store reports false).
--   - The snooze does not use up an attempt: max_attempts grows by one, as release's does, so the
--     failure rule (attempt < maxAttempts) still allows as many real attempts; snoozes counts.
-- Why: one primary-key UPDATE, as release.
--
-- Params: 1 runAt, 2 id, 3 attempt.

-- name: snooze
UPDATE errand_job
SET state = 'pending', run_at = ?, lease_expires_at = NULL, worker_id = NULL,
  max_attempts = max_attempts + 1, snoozes = snoozes + 1
WHERE id = ? AND attempt = ? AND state = 'active';
