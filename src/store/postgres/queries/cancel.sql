-- cancel: Store.cancel(). Cancels a blocked, pending or active job.
--
-- Guarantees: the job leaves errand_job and enters errand_job_done as cancelled (finished_at = now)
-- in one statement; a finished or unknown job changes nothing (no row: the store then reads it
-- with get). Cancelling an active job ends its lease: the holder's later reports are stale.
-- "hasDependents" (read under the row lock the DELETE took) tells the store whether to settle
-- the job's blocked dependents in the next statements of its transaction (dependencies.sql).
--
-- $1 id, $2 now.
-- Returns the cancelled job as a JobRecord with "hasDependents", or no row.

-- name: cancel
WITH moved AS (DELETE FROM {{errandJob}} WHERE id = $1 RETURNING *),
ins AS (
  INSERT INTO {{errandJobDone}} ({{sharedColumns}}, state, result, finished_at)
  SELECT {{sharedColumns}}, 'cancelled', NULL, $2 FROM moved
  RETURNING {{doneFields}}
)
SELECT ins.*, (SELECT has_dependents FROM moved) AS "hasDependents" FROM ins
