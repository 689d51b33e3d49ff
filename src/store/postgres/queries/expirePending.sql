-- expirePending: Store.expirePending(). Moves pending jobs past their expires_at to history as
-- expired.
--
-- Guarantees: at most $2 jobs per call; each moves from errand_job to errand_job_done (state
-- expired, finished_at = now) in one statement. A job a claimer has locked, or that stopped being
-- pending meanwhile, is left alone.
--
-- Why: the inner SELECT takes its rows FOR UPDATE SKIP LOCKED, so concurrent sweepers and claimers
-- never wait on each other; the outer state check drops a row that changed before it was locked.
-- The locks are taken in index order, not in the id order of the statements that wait for row
-- locks (heartbeatMany, completeMany, failMany): a statement that never waits for a row cannot be
-- in a deadlock, and the DELETE touches only the rows the SELECT locked.
--
-- $1 now, $2 limit.
-- Returns the expired jobs as JobRecords.

-- name: expirePending
WITH moved AS (
  DELETE FROM {{errandJob}} WHERE id IN (
    SELECT id FROM {{errandJob}}
    WHERE state = 'pending' AND expires_at IS NOT NULL AND expires_at <= $1
    LIMIT $2 FOR UPDATE SKIP LOCKED
  ) AND state = 'pending'
  RETURNING *
), ins AS (
  INSERT INTO {{errandJobDone}} ({{sharedColumns}}, state, result, finished_at)
  SELECT {{sharedColumns}}, 'expired', NULL, $1 FROM moved
  RETURNING {{doneFields}}
)
SELECT * FROM ins
