-- prune: Store.prune(). Deletes finished jobs older than their state's retention, at most
-- `limit` in all per call.
--
-- Guarantees:
--   - Only errand_job_done rows of the given state with finished_at before the cutoff go.
--   - The store runs it once per finished state, each with the limit left, in one write
--     transaction, so a call deletes at most `limit` rows.
--   - A job a blocked job still depends on is kept (one probe of errand_dependency's primary key
--     per candidate); the store drops the edges of the rows it returns (dependencies.sql).
-- Why: the rows are picked by rowid in a subquery because DELETE … LIMIT exists only in SQLite
-- builds with SQLITE_ENABLE_UPDATE_DELETE_LIMIT; errand_job_done_state (state, finished_at) finds
-- them without a scan.
--
-- Params: 1 state, 2 cutoff (now - retainMs[state]), 3 limit. Returns each row's id and
-- depends_on (its edges), queue and type (the history's counts, countDone).
--
-- countDone: adds 4 n (negative to take away) to the history's count of (1 queue, 2 type, 3 state)
-- (migration 12). dropZeroCounts: the counts back at 0 (every job of a group pruned).
--
-- pruneFairKeys: drops at most `limit` (1) fair keys' next turns (errand_fair_key) that are at or
-- below their type's turn now. A key's next turn only matters above it (a new job gets max(the
-- key's next, the type's turn), and the type's turn never goes down), so the dropped rows change
-- no turn; without this a fair type keeps a row for every key it ever saw.

-- name: prune
DELETE FROM errand_job_done WHERE rowid IN
  (SELECT rowid FROM errand_job_done AS d
   WHERE state = ? AND finished_at < ?
     AND NOT EXISTS (SELECT 1 FROM errand_dependency AS e JOIN errand_blocked AS b ON b.job_id = e.job_id
                     WHERE e.dep_id = d.id)
   LIMIT ?)
RETURNING id, depends_on, queue, type;

-- name: pruneFairKeys
DELETE FROM errand_fair_key WHERE (type, key) IN
  (SELECT k.type, k.key FROM errand_fair_key AS k JOIN errand_fair_type AS t ON t.type = k.type
   WHERE k.next <= t.turn
   LIMIT ?);

-- name: countDone
INSERT INTO errand_done_count (queue, type, state, n) VALUES (?, ?, ?, ?)
ON CONFLICT (queue, type, state) DO UPDATE SET n = n + excluded.n;

-- name: dropZeroCounts
DELETE FROM errand_done_count WHERE n = 0;
