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
SELECT {{hotFields}}
FROM errand_job
WHERE id = ?;

-- name: getDone
SELECT {{doneFields}}
FROM errand_job_done
WHERE id = ?;
