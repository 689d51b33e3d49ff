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
-- It copies the job's {{sharedColumns}} as they are (the list is filled in from
-- src/job-fields.ts when the store opens), so a new field is copied without editing this file.
--
-- moveToDone params: 1 state ('cancelled' or 'expired'), 2 now (finished_at), 3 id.

-- name: moveToDone
INSERT INTO errand_job_done ({{sharedColumns}}, state, result, finished_at)
SELECT {{sharedColumns}}, ?, NULL, ?
FROM errand_job
WHERE id = ?;
