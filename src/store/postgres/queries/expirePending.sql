-- expirePending: Store.expirePending(). Moves blocked and pending jobs past their expires_at to
-- history as expired.
--
-- Guarantees: at most $2 jobs per call; each moves from errand_job to errand_job_done (state
-- expired, finished_at = now) in one statement. A job a claimer has locked, or that stopped being
-- blocked or pending meanwhile, is left alone. "hasDependents" (read under the row lock) tells
-- the store which expired jobs have dependents to settle in the next statements of its
-- transaction (dependencies.sql).
--
-- Why: the inner SELECT takes its rows FOR UPDATE SKIP LOCKED, so concurrent sweepers and claimers
-- never wait on each other; the outer state check drops a row that changed before it was locked.
-- The locks are taken in index order, not in the id order of the statements that wait for row
-- locks (heartbeatMany, completeMany, failMany): a statement that never waits for a row cannot be
-- in a deadlock, and the DELETE touches only the rows the SELECT locked.
--
-- $1 now, $2 limit.
-- Returns the expired jobs as JobRecords, each with "hasDependents".

-- name: expirePending
WITH moved AS (
  DELETE FROM {{errandJob}} WHERE id IN (
    SELECT id FROM {{errandJob}}
    WHERE state IN ('blocked', 'pending') AND expires_at IS NOT NULL AND expires_at <= $1
    LIMIT $2 FOR UPDATE SKIP LOCKED
  ) AND state IN ('blocked', 'pending')
  RETURNING *
), {{expireMoved}}
