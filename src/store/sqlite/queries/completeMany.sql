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
-- completeMoveLeaf: completeMove for a job nothing depends on (has_dependents = 0), the usual
--   case, which deleteJob then deletes without asking whether anyone waits on it. moveDelete's
--   RETURNING makes SQLite keep the returned row in an ephemeral table built and torn down per
--   statement (a page allocated and cleared each time): ~10,000 instructions per completion, most of
--   the delete. A job with dependents, or a stale item, moves nothing here; the store then runs
--   completeMove and moveDelete as before. Same params as completeMove.
-- deleteJob params: 1 id: the delete after a move that found no dependents.
-- completeLeaves: a whole batch's completeMoveLeaf in one statement, for a batch of distinct ids
--   (sqlite-store.ts #completeLeaves): every item whose job is active under its attempt with no
--   dependents moves, and the store compares the rows moved with the items. All of them: one
--   deleteLeaves deletes them, and every item is completed. Fewer: the item-by-item path settles
--   each item, and completeMovedHere tells which ones this statement moved (a job is in both
--   tables only between this statement and its delete, inside one write transaction). Two
--   statements a batch, not two a job. Params: 1 now, 2 JSON array of [id, attempt, result]
--   (the result's JSON text as a JSON string). jsonb_each, not json_each: its `value` for an
--   element that is an array is JSONB, which `->>` reads as it is; json_each's is text, which each
--   `->>` parsed again (three parses an item; 620 against 385 ns an item for the SELECT alone).
-- countCompletedLeaves params: 1 the rowid before completeLeaves' first row: the history's counts
--   (migration 12) for the rows it just inserted, grouped by queue and type. An INSERT gives each
--   row max(rowid) + 1 (the table has no AUTOINCREMENT), so one statement's rows are the run of
--   rowids ending at its last_insert_rowid, and nothing else writes meanwhile (one writer): read
--   back from the pages just written, cheaper than finding each job again by id.
-- countCompletedOne params: 1 id: the same for one job moved item by item.
-- deleteLeaves params: 1 the same array.
-- completeMovedHere params: $id. 1 when the job is in both tables: completeLeaves moved it.

-- name: completeMove
INSERT INTO errand_job_done ({{sharedColumns}}, state, result, finished_at)
SELECT {{sharedColumns}}, 'completed', ?, ?
FROM errand_job
WHERE id = ? AND state = 'active' AND attempt = ?;

-- name: completeMoveLeaf
INSERT INTO errand_job_done ({{sharedColumns}}, state, result, finished_at)
SELECT {{sharedColumns}}, 'completed', ?, ?
FROM errand_job
WHERE id = ? AND state = 'active' AND attempt = ? AND has_dependents = 0;

-- name: completeLeaves
INSERT INTO errand_job_done ({{sharedColumns}}, state, result, finished_at)
SELECT {{sharedColumns}}, 'completed', r, ?
FROM (
  SELECT j.*, i.value ->> 2 AS r FROM jsonb_each(?) AS i JOIN errand_job AS j ON j.id = i.value ->> 0
  WHERE j.state = 'active' AND j.attempt = i.value ->> 1 AND j.has_dependents = 0
);

-- name: countCompletedLeaves
INSERT INTO errand_done_count (queue, type, state, n)
SELECT queue, type, 'completed', count(*) FROM errand_job_done WHERE rowid > ?
GROUP BY queue, type
ON CONFLICT (queue, type, state) DO UPDATE SET n = n + excluded.n;

-- name: countCompletedOne
INSERT INTO errand_done_count (queue, type, state, n)
SELECT queue, type, 'completed', 1 FROM errand_job_done WHERE id = ?
ON CONFLICT (queue, type, state) DO UPDATE SET n = n + 1;

-- name: deleteLeaves
DELETE FROM errand_job WHERE id IN (SELECT value ->> 0 FROM jsonb_each(?));

-- name: completeMovedHere
SELECT EXISTS (SELECT 1 FROM errand_job_done WHERE id = $id)
  AND EXISTS (SELECT 1 FROM errand_job WHERE id = $id);

-- name: completeDiscard
DELETE FROM errand_job WHERE id = ? AND state = 'active' AND attempt = ? AND has_dependents = 0
RETURNING depends_on;

-- name: deleteJob
DELETE FROM errand_job WHERE id = ?;
