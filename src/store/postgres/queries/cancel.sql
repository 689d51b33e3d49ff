-- cancel: Store.cancel(). Cancels a pending or active job.
--
-- Guarantees: the job leaves errand_job and enters errand_job_done as cancelled (finished_at = now)
-- in one statement; a finished or unknown job changes nothing (no row: the store then reads it
-- with get). Cancelling an active job ends its lease: the holder's later reports are stale.
--
-- $1 id, $2 now.
-- Returns the cancelled job as a JobRecord, or no row.

-- name: cancel
WITH moved AS (DELETE FROM {{errandJob}} WHERE id = $1 RETURNING *),
ins AS (
  INSERT INTO {{errandJobDone}} ({{sharedColumns}}, state, result, finished_at)
  SELECT {{sharedColumns}}, 'cancelled', NULL, $2 FROM moved
  RETURNING {{doneFields}}
)
SELECT * FROM ins
