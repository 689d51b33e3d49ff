-- cancel: Store.cancel(). Moves a pending or active job to errand_job_done as `cancelled`.
--
-- Guarantees:
--   - The store reads the job first (get.sql) and moves it only while it is pending or active;
--     a finished job is returned unchanged. Read, move and deleteJob (completeMany.sql) share one
--     write transaction, so nothing changes in between.
--   - An active job's holder finds out at its next heartbeat or outcome: its fence no longer
--     matches a row.
-- Why: moveToDone copies the row by primary key in one INSERT … SELECT. It is also how
-- expirePending moves a job it expires, with state 'expired'.
--
-- moveToDone params: 1 state ('cancelled' or 'expired'), 2 now (finished_at), 3 id.

-- name: moveToDone
INSERT INTO errand_job_done (id, type, queue, payload, checkpoint, priority, weight, run_at,
  expires_at, attempt, max_attempts, backoff, retry_queue, delivery, timeout_ms, unique_key, errors,
  lease_expirations, created_at, started_at, owner, depends_on, on_dependency_failure, key, debounce_key, snoozes,
  state, result,
  finished_at)
SELECT id, type, queue, payload, checkpoint, priority, weight, run_at,
  expires_at, attempt, max_attempts, backoff, retry_queue, delivery, timeout_ms, unique_key, errors,
  lease_expirations, created_at, started_at, owner, depends_on, on_dependency_failure, key, debounce_key, snoozes,
  ?, NULL, ?
FROM errand_job
WHERE id = ?;
