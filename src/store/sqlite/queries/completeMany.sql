-- completeMany: Store.completeMany(). Records each item's success: its job moves from errand_job
-- to errand_job_done as `completed`, with its result and finished_at.
--
-- Guarantees:
--   - Fencing: a job moves only while it is active under the item's attempt; a stale item (lease
--     lost, job re-claimed or already finished) inserts nothing, and the store reports false and
--     deletes nothing.
--   - A job lives in exactly one of the two tables: completeMove and deleteJob run in the same
--     write transaction, deleteJob only after completeMove moved a row.
-- Why: a move, not an UPDATE, keeps errand_job (and so the claim index) holding only pending and
-- active jobs, so claims cost the same however much history is kept. The INSERT … SELECT reads
-- the hot row once, by primary key, and checks the fence in the same statement.
-- It copies the job's {{sharedColumns}} as they are (the list is filled in from
-- src/job-fields.ts when the store opens), so a new field is copied without editing this file.
--
-- completeDiscard: when the Queue keeps no completed jobs (retention.completed 0), the job is
--   deleted instead, under the same fence, unless something depends on it (its dependents read
--   its result; the move above keeps it). Its own edges as a dependent go with it, as when
--   pruned. Params: 1 id, 2 attempt.
-- completeMove params: 1 result (JSON text or NULL), 2 now (finished_at), 3 id, 4 attempt.
-- deleteJob params: 1 id. Also used by failMany, cancel and expirePending after their moves.

-- name: completeMove
INSERT INTO errand_job_done ({{sharedColumns}}, state, result, finished_at)
SELECT {{sharedColumns}}, 'completed', ?, ?
FROM errand_job
WHERE id = ? AND state = 'active' AND attempt = ?;

-- name: completeDiscard
DELETE FROM errand_job WHERE id = ? AND state = 'active' AND attempt = ? AND has_dependents = 0
RETURNING depends_on;

-- name: deleteJob
DELETE FROM errand_job WHERE id = ?;
