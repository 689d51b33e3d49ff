-- expirePending: Store.expirePending(). Finds up to `limit` pending or blocked jobs past their
-- expires_at;
-- the store moves each to errand_job_done as `expired` (moveToDone in cancel.sql, then deleteJob
-- in completeMany.sql) in the same write transaction.
--
-- Guarantees:
--   - Only pending and blocked jobs expire here (the store then settles their dependents); an active job past expires_at runs to its outcome (a job is
--     never started after expires_at, which claim.sql checks).
-- Why: errand_job_expiry (expires_at, partial on expires_at IS NOT NULL) finds the due jobs
-- without a scan; jobs without an expiry are not in it.
--
-- Params: 1 now, 2 limit.

-- name: expirePendingDue
SELECT id, state FROM errand_job
WHERE expires_at IS NOT NULL AND expires_at <= ? AND state IN ('pending', 'blocked')
LIMIT ?;
