-- enqueueMany: Store.enqueueMany(). Inserts new jobs as pending, in the caller's order; a job
-- whose id is taken, or whose unique key a pending or active job holds, is not inserted, and the
-- store returns the job it met instead (getHot/getDone in get.sql, or enqueueByUniqueKey).
--
-- Guarantees:
--   - Ids are unique across errand_job and errand_job_done: enqueueFinishedId looks a caller-given
--     id up in the done table first (same write transaction), and errand_job's primary key covers
--     the rest.
--   - A unique key holds while its job is pending or active (errand_job_unique_key is a unique
--     partial index on errand_job), so ON CONFLICT DO NOTHING skips a second holder.
--   - All of one call's jobs commit together, or none do.
-- Why:
--   - A separate enqueueFinishedId lookup costs far less than a NOT EXISTS inside the INSERT
--     (~20% of bulk enqueue).
--   - enqueueChunk inserts 64 rows per statement, which spares SQLite a statement step per row.
--     The store uses it only for ids errand generated (they cannot be taken, so the lookup is
--     skipped too) and only while a chunk has no unique key. Each chunk runs inside its own
--     savepoint; a chunk that inserts fewer than 64 rows met a conflict and is rolled back, and
--     the store redoes the rest row by row with enqueueOne, which tells each job's outcome.
--     The chunk is a fixed 64 rows written out below, not json_each(?) over a JSON array: that
--     form inserted about half as fast (measured on 20,000-job batches), as SQLite parses the
--     JSON and extracts each field. 64 × 20 parameters stays far below SQLite's limit. The store
--     derives the chunk size from this statement's parameter count.
--   - enqueueChunkUniform is enqueueChunk for jobs that share every field but the id and the
--     payload (every enqueueMany of one type with one set of options): those two are a ? per
--     row, and each other column one named parameter (@column) that every row repeats, so a chunk
--     binds 2 values per row and the shared ones once, not 20 per row. Binding is most of what
--     the chunk statement costs: 20,000 jobs took 85 ms to insert with enqueueChunk and 47 ms
--     with this form (better-sqlite3 alone, same rows, before commit).
--
--   - The column and value lists are the job's fields (src/job-fields.ts), written in by
--     `npm run gen`: /*@insertColumns*/ is the columns an insert sets, in table order, and
--     /*@insertRow*/ a row of values for them ('pending' for the state, ? for the others).
--
-- enqueueOne params: 1 id, 2 type, 3 queue, 4 payload (JSON text), 5 priority, 6 weight,
--   7 runAt, 8 expiresAt, 9 maxAttempts, 10 backoff (JSON text), 11 retryQueue, 12 delivery,
--   13 timeoutMs, 14 uniqueKey, 15 now (created_at), 16 owner, 17 dependsOn (JSON text or NULL),
--   18 onDependencyFailure, 19 key, 20 debounceKey: the insert columns but the state. A job with dependencies is inserted
--   pending, then blocked or cancelled by the statements of dependencies.sql in the same transaction.
-- enqueueChunk params: the 20 of enqueueOne for each of its 64 rows, row after row.
-- enqueueChunkUniform params: id and payload for each of its 64 rows, row after row, then the
--   named parameters, one per other insert column, by column name (@created_at: now).
-- enqueueDebounced params: 1 payload, 2 runAt, 3 expiresAt (or NULL), 4 debounceKey, 5 type,
--   6 owner, 7 now: the pending, never started job of the type and owner holding the key takes
--   the new payload, runAt and expiresAt (at most one holds it), unless it is past its expiresAt
--   (see expiredKeyHolders). The last enqueue of a burst decides all three: keeping the holder's
--   own expiresAt while runAt moves past it would answer with a job that never runs.
-- debounceHolder params: 1 now, 2 debounceKey: the holder's type and owner, and 1 when it is past
--   its expiresAt.
-- enqueueFinishedId params: 1 id. enqueueByUniqueKey params: 1 uniqueKey.
-- expiredKeyHolders params: @unique, @debounce (either may be NULL), @now: the blocked or
--   pending job holding the unique key, and the pending, never started one holding the debounce
--   key, when past its expiresAt. No claim can take such a job, so it holds the key no longer: the
--   store expires it (as expirePending) and inserts again. Each arm reads its key's index. Run
--   only once an insert or a debounce met such a holder: a look per job before every insert cost
--   a bulk enqueue of unique-keyed jobs ~13%.
-- enqueueChunkSavepoint, enqueueChunkRollback, enqueueChunkRelease: none.

-- name: enqueueOne
INSERT INTO errand_job (/*@insertColumns*/)
VALUES /*@insertRow*/
ON CONFLICT DO NOTHING;

-- name: enqueueChunk
INSERT INTO errand_job (/*@insertColumns*/)
VALUES
  /*@insertRows 64*/
ON CONFLICT DO NOTHING;

-- name: enqueueChunkUniform
INSERT INTO errand_job (/*@insertColumns*/)
VALUES
  /*@insertRowsUniform 64*/
ON CONFLICT DO NOTHING;

-- name: enqueueDebounced
UPDATE errand_job SET payload = ?, run_at = ?, expires_at = ?, parked = NULL
WHERE debounce_key = ? AND state = 'pending' AND attempt = 0 AND type = ? AND owner IS ?
  AND (expires_at IS NULL OR expires_at > ?)
RETURNING id;

-- name: debounceHolder
SELECT type, owner, coalesce(expires_at <= ?, 0) AS expired FROM errand_job
WHERE debounce_key = ? AND state = 'pending' AND attempt = 0
LIMIT 1;

-- name: enqueueFinishedId
SELECT 1 FROM errand_job_done WHERE id = ?;

-- name: enqueueByUniqueKey
SELECT {{hotFields}}
FROM errand_job
WHERE unique_key = ?;

-- name: expiredKeyHolders
SELECT id, state FROM errand_job
WHERE unique_key = @unique AND state IN ('blocked', 'pending') AND expires_at <= @now
UNION
SELECT id, state FROM errand_job
WHERE debounce_key = @debounce AND state = 'pending' AND attempt = 0 AND expires_at <= @now;

-- name: enqueueChunkSavepoint
SAVEPOINT errand_chunk;

-- name: enqueueChunkRollback
ROLLBACK TO errand_chunk;

-- name: enqueueChunkRelease
RELEASE errand_chunk;
