-- enqueueMany: Store.enqueueMany(), and the job Store.fireSchedule() enqueues.
--
-- Guarantees:
--   - One statement inserts the whole batch, in batch order, whatever its size: a job whose id or
--     unique key is taken is skipped (ON CONFLICT DO NOTHING), never an error; `existing` then
--     finds what each skipped job collided with.
--   - With caller-chosen ids (the *Checked statements, in a transaction) ids are unique across
--     both tables: the insert skips ids found in errand_job_done, and `dropRaced`, the next
--     statement of the same transaction (so with a fresh snapshot), deletes again any it inserted
--     whose id a concurrent completion has just moved to history (the insert waited on that
--     completion's row lock, then found the hot row gone).
--   - When an inserted job is ready (run_at <= now) the statement NOTIFYs the wake channel, so the
--     wake-up is delivered exactly when the rows become visible (at commit).
--
-- Why:
--   - unnest of one array per column, WITH ORDINALITY and ORDER BY u.ord: one round trip and one
--     plan for any batch, rows inserted (and unique keys won) in the caller's order.
--   - The *Uniform statements take every field but ids and payloads as one value for all jobs
--     (enqueueMany's batches share them), so 20,000 jobs do not send and parse 20,000 copies of
--     the same thirteen values. The four statements differ only there and in the done-id check.
--   - The *One statements serve the most common call, `enqueue()` of a single job, with a plain
--     VALUES row instead of unnest over one-element arrays: as a bare statement 0.55–0.69 ms
--     against 0.86–0.96 ms here; end to end, enqueue() p50 went from ~0.74 to ~0.69 ms.
--   - `ids` is NULL when every job went in: the common case returns one small row.
--   - insert.ts (freshStatements) sends insertOne, insertUniform and insert without their
--     `ON CONFLICT DO NOTHING` line for jobs whose ids errand just made and that have no unique
--     or debounce key, as a statement of their own: nothing can clash with them but an earlier
--     try of the same insert, and a clash (23505) sends this form, which finds those jobs. The
--     speculative insertion ON CONFLICT asks for costs a look in every unique index and a
--     confirming WAL record per row (81,000 WAL records for 20,000 jobs against 61,000).
--   - The `n` CTE is referenced by the final SELECT because PostgreSQL runs only the plain
--     (non-modifying) CTEs that are read; `ready` sends at most one notification per statement.
--   - The insertJob fragment is `INSERT INTO errand_job (<the columns set here>)` and insertOutcome the
--     closing SELECT of n, ids and notified, the same in all six (postgres/columns.ts,
--     sqlFragments). The lists of the job's fields are written in by `npm run gen` from
--     src/job-fields.ts (scripts/job-field-markers.ts): /*@insertValues …*/ a value for each insert
--     column, /*@unnestArrays*/ and /*@unnestColumns*/ the fields' arrays and their names.
--   - The fixed parameters come first, so adding a field to the table renumbers none of them.
--   - Not in id order, unlike the statements that lock several existing jobs (heartbeatMany,
--     completeMany, failMany): an insert locks no existing row, and batch order decides which job
--     of a batch wins a unique key. Two uncommitted batches inserting the same caller-chosen ids or
--     unique keys in opposite orders can still wait on each other (ON CONFLICT waits for the other
--     insert's commit) and deadlock; the store retries the statement (40P01), which inserts each
--     job once whatever the first try did.
--
-- All six: $1 now (created_at), $2 notify tag (the NOTIFY payload: the store's origin, '' to wake
--   this process too), $3 batch size; then a NewJob's fields in table order: $4 id, $5 type,
--   $6 queue, $7 payload, $8 priority, $9 weight, $10 run_at, $11 expires_at, $12 max_attempts,
--   $13 backoff, $14 retry_queue, $15 delivery, $16 timeout_ms, $17 unique_key, $18 owner,
--   $19 depends_on, $20 on_dependency_failure, $21 key, $22 debounce_key.
-- insert, insertChecked: each field one array (one element per job).
-- insertUniform, insertUniformChecked: ids and payloads arrays, every other field one value.
-- insertOne, insertOneChecked: one job, every field one value, $3 always 1.
--   All six return one row: n (jobs inserted), ids (the ids inserted; NULL when n = $3), notified.
-- insertSettled, insertSettledChecked: as insert and insertChecked, for jobs with dependencies
--   (dependencies.ts), each in the state it will have: the three parameters after the job's
--   fields (/*@afterFields*/) are the states ('blocked' or 'pending'), blocked_by, and
--   has_dependents: true for a job that a later job of the same call waits for, so that a flow
--   marks its own jobs as it inserts them (an UPDATE after would write every row twice). A blocked
--   job never enters the claim index (not even as a version to vacuum), and wakes no one.
-- debounce: $1 debounce key, $2 payload, $3 run at, $4 now, $5 notify tag, $6 type, $7 owner,
--   $8 expires at (or NULL). The pending job never started of that type and owner that holds the
--   key (errand_job_debounce: at most one) takes the new payload, run_at and expires_at (the last
--   enqueue of a burst decides all three: keeping the holder's own expires_at while run_at moves
--   past it would answer with a job that never runs); returns it as a JobRecord, or no row when none holds the key (the store then inserts the new
--   job, and if that insert conflicts on the index, a concurrent enqueue's job now holds it: the
--   store runs debounce again). A job being claimed is waited for, then no longer matches. NOTIFYs
--   the wake channel when the job is due at once. A parked job is put back (migration 0011), as
--   reschedule does: its new run_at is for the claims to judge. A holder past its expires_at is
--   left alone: no claim can take it, so the store expires it (expireKeyHolders) and inserts.
-- debounceHolderType: $1 debounce key, $2 now. The holder's type and owner, and whether it is past
--   its expires_at.
-- debounceHolders: $1 debounce keys, $2 now. Each key's holder (pending, never started): its key,
--   type, owner, and whether it is past its expires_at.
-- debounceMany: debounce for many jobs whose keys are distinct, as arrays: $1 keys, $2 payloads,
--   $3 run ats, $4 now, $5 notify tag, $6 types, $7 owners, $8 expires ats (NULL for none). Returns the holders it changed; the
--   store inserts the jobs whose keys no job held. One statement for a batch: one at a time, 10,000 debounced
--   jobs took 10–20 s.
-- expireKeyHolders: $1 now, $2 unique keys, $3 debounce keys. Store.enqueueMany's expiry of the
--   jobs holding a new job's key past their expires_at: blocked or pending by unique key, pending
--   and never started by debounce key. Moved to history as expired, as expirePending moves them
--   (the same guarantees; "hasDependents" for the store to settle); the DELETE waits for a row a
--   claimer holds and then finds it no longer matches.
-- dropRaced: $1 ids inserted. Returns the ids it deleted again.
-- existing: $1 ids, $2 unique keys. Returns the jobs holding them as JobRecords with "byKey":
--   by id in either table (false), and pending or active jobs by unique key (true).

-- name: insert
WITH ins AS (
  {{insertJob}}
  SELECT /*@insertValues unnest*/
  FROM unnest(/*@unnestArrays*/)
    WITH ORDINALITY AS u(/*@unnestColumns*/, ord)
  ORDER BY u.ord
  ON CONFLICT DO NOTHING
  RETURNING id, run_at
), ready AS (SELECT 1 FROM ins WHERE run_at <= $1),
n AS (SELECT pg_notify({{channel}}, $2) FROM (SELECT 1 FROM ready LIMIT 1) AS r)
{{insertOutcome}}

-- name: insertChecked
WITH ins AS (
  {{insertJob}}
  SELECT /*@insertValues unnest*/
  FROM unnest(/*@unnestArrays*/)
    WITH ORDINALITY AS u(/*@unnestColumns*/, ord)
  WHERE NOT EXISTS (SELECT 1 FROM {{errandJobDone}} d WHERE d.id = u.id)
  ORDER BY u.ord
  ON CONFLICT DO NOTHING
  RETURNING id, run_at
), ready AS (SELECT 1 FROM ins WHERE run_at <= $1),
n AS (SELECT pg_notify({{channel}}, $2) FROM (SELECT 1 FROM ready LIMIT 1) AS r)
{{insertOutcome}}

-- name: insertUniform
WITH ins AS (
  {{insertJob}}
  SELECT /*@insertValues uniform*/
  FROM unnest(/*@unnestArrays id payload*/)
    WITH ORDINALITY AS u(/*@unnestColumns id payload*/, ord)
  ORDER BY u.ord
  ON CONFLICT DO NOTHING
  RETURNING id, run_at
), ready AS (SELECT 1 FROM ins WHERE run_at <= $1),
n AS (SELECT pg_notify({{channel}}, $2) FROM (SELECT 1 FROM ready LIMIT 1) AS r)
{{insertOutcome}}

-- name: insertUniformChecked
WITH ins AS (
  {{insertJob}}
  SELECT /*@insertValues uniform*/
  FROM unnest(/*@unnestArrays id payload*/)
    WITH ORDINALITY AS u(/*@unnestColumns id payload*/, ord)
  WHERE NOT EXISTS (SELECT 1 FROM {{errandJobDone}} d WHERE d.id = u.id)
  ORDER BY u.ord
  ON CONFLICT DO NOTHING
  RETURNING id, run_at
), ready AS (SELECT 1 FROM ins WHERE run_at <= $1),
n AS (SELECT pg_notify({{channel}}, $2) FROM (SELECT 1 FROM ready LIMIT 1) AS r)
{{insertOutcome}}

-- name: insertOne
WITH ins AS (
  {{insertJob}}
  VALUES (/*@insertValues one*/)
  ON CONFLICT DO NOTHING
  RETURNING id, run_at
), n AS (SELECT pg_notify({{channel}}, $2) FROM ins WHERE run_at <= $1)
{{insertOutcome}}

-- name: insertOneChecked
WITH ins AS (
  {{insertJob}}
  SELECT /*@insertValues one*/
  WHERE NOT EXISTS (SELECT 1 FROM {{errandJobDone}} d WHERE d.id = /*@param id*/::text)
  ON CONFLICT DO NOTHING
  RETURNING id, run_at
), n AS (SELECT pg_notify({{channel}}, $2) FROM ins WHERE run_at <= $1)
{{insertOutcome}}

-- name: insertSettled
WITH ins AS (
  INSERT INTO {{errandJob}} ({{insertColumns}}, blocked_by, has_dependents)
  SELECT /*@insertValues settled*/, u.blocked_by, u.has_dependents
  FROM unnest(/*@unnestArrays*/, /*@afterFields 1*/::text[], /*@afterFields 2*/::integer[],
      /*@afterFields 3*/::boolean[])
    WITH ORDINALITY AS u(/*@unnestColumns*/, state, blocked_by, has_dependents, ord)
  ORDER BY u.ord
  ON CONFLICT DO NOTHING
  RETURNING id, state, run_at
), ready AS (SELECT 1 FROM ins WHERE state = 'pending' AND run_at <= $1),
n AS (SELECT pg_notify({{channel}}, $2) FROM (SELECT 1 FROM ready LIMIT 1) AS r)
{{insertOutcome}}

-- name: insertSettledChecked
WITH ins AS (
  INSERT INTO {{errandJob}} ({{insertColumns}}, blocked_by, has_dependents)
  SELECT /*@insertValues settled*/, u.blocked_by, u.has_dependents
  FROM unnest(/*@unnestArrays*/, /*@afterFields 1*/::text[], /*@afterFields 2*/::integer[],
      /*@afterFields 3*/::boolean[])
    WITH ORDINALITY AS u(/*@unnestColumns*/, state, blocked_by, has_dependents, ord)
  WHERE NOT EXISTS (SELECT 1 FROM {{errandJobDone}} d WHERE d.id = u.id)
  ORDER BY u.ord
  ON CONFLICT DO NOTHING
  RETURNING id, state, run_at
), ready AS (SELECT 1 FROM ins WHERE state = 'pending' AND run_at <= $1),
n AS (SELECT pg_notify({{channel}}, $2) FROM (SELECT 1 FROM ready LIMIT 1) AS r)
{{insertOutcome}}

-- name: debounce
WITH upd AS (
  UPDATE {{errandJob}} SET payload = $2, run_at = $3, expires_at = $8::bigint, parked = NULL
  WHERE debounce_key = $1 AND state = 'pending' AND attempt = 0 AND type = $6
    AND owner IS NOT DISTINCT FROM $7::text
    AND (expires_at IS NULL OR expires_at > $4)
  RETURNING {{hotFields}}
), n AS (SELECT pg_notify({{channel}}, $5) FROM (SELECT 1 FROM upd WHERE "runAt" <= $4) AS r)
SELECT * FROM upd WHERE (SELECT count(*) FROM n) >= 0

-- name: debounceHolderType
SELECT type, owner, coalesce(expires_at <= $2, false) AS expired FROM {{errandJob}}
WHERE debounce_key = $1 AND state = 'pending' AND attempt = 0

-- name: debounceHolders
SELECT debounce_key AS "key", type, owner, coalesce(expires_at <= $2, false) AS expired FROM {{errandJob}}
WHERE debounce_key = ANY($1::text[]) AND state = 'pending' AND attempt = 0

-- name: debounceMany
WITH upd AS (
  UPDATE {{errandJob}} SET payload = g.g_payload, run_at = g.g_run_at, expires_at = g.g_expires_at, parked = NULL
  FROM unnest($1::text[], $2::text[], $3::bigint[], $6::text[], $7::text[], $8::bigint[])
    AS g(g_key, g_payload, g_run_at, g_type, g_owner, g_expires_at)
  WHERE debounce_key = g.g_key AND state = 'pending' AND attempt = 0 AND type = g.g_type
    AND owner IS NOT DISTINCT FROM g.g_owner
    AND (expires_at IS NULL OR expires_at > $4)
  RETURNING {{hotFields}}
), n AS (SELECT pg_notify({{channel}}, $5) FROM (SELECT 1 FROM upd WHERE "runAt" <= $4 LIMIT 1) AS r)
SELECT * FROM upd WHERE (SELECT count(*) FROM n) >= 0

-- name: expireKeyHolders
WITH moved AS (
  DELETE FROM {{errandJob}}
  WHERE ((unique_key = ANY($2::text[]) AND state IN ('blocked', 'pending'))
      OR (debounce_key = ANY($3::text[]) AND state = 'pending' AND attempt = 0))
    AND expires_at <= $1
  RETURNING *
), {{expireMoved}}

-- name: dropRaced
DELETE FROM {{errandJob}} j WHERE j.id = ANY($1::text[])
  AND EXISTS (SELECT 1 FROM {{errandJobDone}} d WHERE d.id = j.id) RETURNING j.id

-- name: existing
SELECT {{hotFields}}, false AS "byKey" FROM {{errandJob}} WHERE id = ANY($1::text[])
UNION ALL SELECT {{doneFields}}, false FROM {{errandJobDone}} WHERE id = ANY($1::text[])
UNION ALL SELECT {{hotFields}}, true FROM {{errandJob}} WHERE unique_key = ANY($2::text[])
