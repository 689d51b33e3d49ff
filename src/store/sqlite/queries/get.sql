-- get: Store.get(). One job by id, from whichever table holds it.
--
-- Guarantees:
--   - A job lives in exactly one of errand_job (pending, active) and errand_job_done (finished),
--     so the store reads getHot first and getDone only when that finds nothing.
--   - Both return the record's fields in JobRecord's key order (checked at open): the hot table
--     has no result or finished_at, the done table no lease or holder; those read as NULL.
-- Why: two primary-key lookups; the hot one, which serves the runtime, comes first. Also used by
-- enqueueMany (the job an enqueue met), cancel, reschedule, retry, replay and expirePending.
--
-- Params: 1 id.

-- name: getHot
SELECT id, type, queue, state, payload, checkpoint, NULL AS result, priority, weight,
  run_at AS runAt, expires_at AS expiresAt, attempt, max_attempts AS maxAttempts, backoff,
  retry_queue AS retryQueue, delivery, timeout_ms AS timeoutMs, unique_key AS uniqueKey,
  lease_expires_at AS leaseExpiresAt, worker_id AS workerId, errors,
  lease_expirations AS leaseExpirations, created_at AS createdAt, started_at AS startedAt,
  NULL AS finishedAt, owner
FROM errand_job
WHERE id = ?;

-- name: getDone
SELECT id, type, queue, state, payload, checkpoint, result, priority, weight,
  run_at AS runAt, expires_at AS expiresAt, attempt, max_attempts AS maxAttempts, backoff,
  retry_queue AS retryQueue, delivery, timeout_ms AS timeoutMs, unique_key AS uniqueKey,
  NULL AS leaseExpiresAt, NULL AS workerId, errors,
  lease_expirations AS leaseExpirations, created_at AS createdAt, started_at AS startedAt,
  finished_at AS finishedAt, owner
FROM errand_job_done
WHERE id = ?;
