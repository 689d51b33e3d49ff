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
--     the same fifteen values. The four statements differ only there and in the done-id check.
--   - The *One statements serve the most common call, `enqueue()` of a single job, with a plain
--     VALUES row instead of unnest over one-element arrays: as a bare statement 0.55–0.69 ms
--     against 0.86–0.96 ms here; end to end, enqueue() p50 went from ~0.74 to ~0.69 ms.
--   - `ids` is NULL when every job went in: the common case returns one small row.
--   - The `n` CTE is referenced by the final SELECT because PostgreSQL runs only the plain
--     (non-modifying) CTEs that are read; `ready` sends at most one notification per statement.
--   - The insertJob fragment is `INSERT INTO errand_job (<the columns set here>)` and insertOutcome the
--     closing SELECT of n, ids and notified, the same in all six (postgres-store.ts,
--     sqlFragments).
--   - Not in id order, unlike the statements that lock several existing jobs (heartbeatMany,
--     completeMany, failMany): an insert locks no existing row, and batch order decides which job
--     of a batch wins a unique key. Two uncommitted batches inserting the same caller-chosen ids or
--     unique keys in opposite orders can still wait on each other (ON CONFLICT waits for the other
--     insert's commit) and deadlock; the store retries the statement (40P01), which inserts each
--     job once whatever the first try did.
--
-- insert, insertChecked (a job's fields as one array each):
--   $1 ids, $2 type, $3 queue, $4 payloads, $5 priority, $6 weight, $7 run_at, $8 expires_at,
--   $9 max_attempts, $10 backoff, $11 retry_queue, $12 delivery, $13 timeout_ms, $14 unique_key,
--   $15 owner, $16 depends_on, $17 on_dependency_failure; $18 now, $19 notify tag (the NOTIFY
--   payload: the store's origin, '' to wake this process too), $20 batch size.
-- insertUniform, insertUniformChecked: the same, but $2, $3 and $5 to $17 are one value each.
-- insertOne, insertOneChecked: one job, every field one value ($1 to $17), $20 always 1.
--   All six return one row: n (jobs inserted), ids (the ids inserted; NULL when n = $20), notified.
--   Every job goes in pending.
-- insertSettled, insertSettledChecked: as insert and insertChecked, for jobs with dependencies
--   (dependencies.ts), each in the state it will have: $21 states ('blocked' or 'pending'), $22
--   blocked_by. A blocked job never enters the claim index (not even as a version to vacuum),
--   and wakes no one.
-- dropRaced: $1 ids inserted. Returns the ids it deleted again.
-- existing: $1 ids, $2 unique keys. Returns the jobs holding them as JobRecords with "byKey":
--   by id in either table (false), and blocked, pending or active jobs by unique key (true).

-- name: insert
WITH ins AS (
  {{insertJob}}
  SELECT u.id, u.type, u.queue, 'pending', u.payload, u.priority, u.weight, u.run_at, u.expires_at,
    u.max_attempts, u.backoff, u.retry_queue, u.delivery, u.timeout_ms, u.unique_key, u.owner, u.depends_on,
    u.on_dependency_failure, $18
  FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[], $6::bigint[], $7::bigint[],
      $8::bigint[], $9::bigint[], $10::text[], $11::text[], $12::text[], $13::bigint[], $14::text[], $15::text[],
      $16::text[], $17::text[])
    WITH ORDINALITY AS u(id, type, queue, payload, priority, weight, run_at, expires_at, max_attempts,
      backoff, retry_queue, delivery, timeout_ms, unique_key, owner, depends_on, on_dependency_failure, ord)
  ORDER BY u.ord
  ON CONFLICT DO NOTHING
  RETURNING id, run_at
), ready AS (SELECT 1 FROM ins WHERE run_at <= $18),
n AS (SELECT pg_notify({{channel}}, $19) FROM (SELECT 1 FROM ready LIMIT 1) AS r)
{{insertOutcome}}

-- name: insertChecked
WITH ins AS (
  {{insertJob}}
  SELECT u.id, u.type, u.queue, 'pending', u.payload, u.priority, u.weight, u.run_at, u.expires_at,
    u.max_attempts, u.backoff, u.retry_queue, u.delivery, u.timeout_ms, u.unique_key, u.owner, u.depends_on,
    u.on_dependency_failure, $18
  FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[], $6::bigint[], $7::bigint[],
      $8::bigint[], $9::bigint[], $10::text[], $11::text[], $12::text[], $13::bigint[], $14::text[], $15::text[],
      $16::text[], $17::text[])
    WITH ORDINALITY AS u(id, type, queue, payload, priority, weight, run_at, expires_at, max_attempts,
      backoff, retry_queue, delivery, timeout_ms, unique_key, owner, depends_on, on_dependency_failure, ord)
  WHERE NOT EXISTS (SELECT 1 FROM {{errandJobDone}} d WHERE d.id = u.id)
  ORDER BY u.ord
  ON CONFLICT DO NOTHING
  RETURNING id, run_at
), ready AS (SELECT 1 FROM ins WHERE run_at <= $18),
n AS (SELECT pg_notify({{channel}}, $19) FROM (SELECT 1 FROM ready LIMIT 1) AS r)
{{insertOutcome}}

-- name: insertUniform
WITH ins AS (
  {{insertJob}}
  SELECT u.id, $2::text, $3::text, 'pending', u.payload, $5::bigint, $6::bigint, $7::bigint, $8::bigint,
    $9::bigint, $10::text, $11::text, $12::text, $13::bigint, $14::text, $15::text, $16::text, $17::text, $18
  FROM unnest($1::text[], $4::text[])
    WITH ORDINALITY AS u(id, payload, ord)
  ORDER BY u.ord
  ON CONFLICT DO NOTHING
  RETURNING id, run_at
), ready AS (SELECT 1 FROM ins WHERE run_at <= $18),
n AS (SELECT pg_notify({{channel}}, $19) FROM (SELECT 1 FROM ready LIMIT 1) AS r)
{{insertOutcome}}

-- name: insertUniformChecked
WITH ins AS (
  {{insertJob}}
  SELECT u.id, $2::text, $3::text, 'pending', u.payload, $5::bigint, $6::bigint, $7::bigint, $8::bigint,
    $9::bigint, $10::text, $11::text, $12::text, $13::bigint, $14::text, $15::text, $16::text, $17::text, $18
  FROM unnest($1::text[], $4::text[])
    WITH ORDINALITY AS u(id, payload, ord)
  WHERE NOT EXISTS (SELECT 1 FROM {{errandJobDone}} d WHERE d.id = u.id)
  ORDER BY u.ord
  ON CONFLICT DO NOTHING
  RETURNING id, run_at
), ready AS (SELECT 1 FROM ins WHERE run_at <= $18),
n AS (SELECT pg_notify({{channel}}, $19) FROM (SELECT 1 FROM ready LIMIT 1) AS r)
{{insertOutcome}}

-- name: insertOne
WITH ins AS (
  {{insertJob}}
  VALUES ($1::text, $2::text, $3::text, 'pending', $4::text, $5::bigint, $6::bigint, $7::bigint,
    $8::bigint, $9::bigint, $10::text, $11::text, $12::text, $13::bigint, $14::text, $15::text, $16::text,
    $17::text, $18)
  ON CONFLICT DO NOTHING
  RETURNING id, run_at
), n AS (SELECT pg_notify({{channel}}, $19) FROM ins WHERE run_at <= $18)
{{insertOutcome}}

-- name: insertOneChecked
WITH ins AS (
  {{insertJob}}
  SELECT $1::text, $2::text, $3::text, 'pending', $4::text, $5::bigint, $6::bigint, $7::bigint,
    $8::bigint, $9::bigint, $10::text, $11::text, $12::text, $13::bigint, $14::text, $15::text, $16::text,
    $17::text, $18
  WHERE NOT EXISTS (SELECT 1 FROM {{errandJobDone}} d WHERE d.id = $1::text)
  ON CONFLICT DO NOTHING
  RETURNING id, run_at
), n AS (SELECT pg_notify({{channel}}, $19) FROM ins WHERE run_at <= $18)
{{insertOutcome}}

-- name: insertSettled
WITH ins AS (
  INSERT INTO {{errandJob}} (id, type, queue, state, payload, priority, weight, run_at, expires_at,
    max_attempts, backoff, retry_queue, delivery, timeout_ms, unique_key, owner, depends_on,
    on_dependency_failure, created_at, blocked_by)
  SELECT u.id, u.type, u.queue, u.state, u.payload, u.priority, u.weight, u.run_at, u.expires_at,
    u.max_attempts, u.backoff, u.retry_queue, u.delivery, u.timeout_ms, u.unique_key, u.owner, u.depends_on,
    u.on_dependency_failure, $18, u.blocked_by
  FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[], $6::bigint[], $7::bigint[],
      $8::bigint[], $9::bigint[], $10::text[], $11::text[], $12::text[], $13::bigint[], $14::text[], $15::text[],
      $16::text[], $17::text[], $21::text[], $22::integer[])
    WITH ORDINALITY AS u(id, type, queue, payload, priority, weight, run_at, expires_at, max_attempts,
      backoff, retry_queue, delivery, timeout_ms, unique_key, owner, depends_on, on_dependency_failure, state,
      blocked_by, ord)
  ORDER BY u.ord
  ON CONFLICT DO NOTHING
  RETURNING id, state, run_at
), ready AS (SELECT 1 FROM ins WHERE state = 'pending' AND run_at <= $18),
n AS (SELECT pg_notify({{channel}}, $19) FROM (SELECT 1 FROM ready LIMIT 1) AS r)
{{insertOutcome}}

-- name: insertSettledChecked
WITH ins AS (
  INSERT INTO {{errandJob}} (id, type, queue, state, payload, priority, weight, run_at, expires_at,
    max_attempts, backoff, retry_queue, delivery, timeout_ms, unique_key, owner, depends_on,
    on_dependency_failure, created_at, blocked_by)
  SELECT u.id, u.type, u.queue, u.state, u.payload, u.priority, u.weight, u.run_at, u.expires_at,
    u.max_attempts, u.backoff, u.retry_queue, u.delivery, u.timeout_ms, u.unique_key, u.owner, u.depends_on,
    u.on_dependency_failure, $18, u.blocked_by
  FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[], $6::bigint[], $7::bigint[],
      $8::bigint[], $9::bigint[], $10::text[], $11::text[], $12::text[], $13::bigint[], $14::text[], $15::text[],
      $16::text[], $17::text[], $21::text[], $22::integer[])
    WITH ORDINALITY AS u(id, type, queue, payload, priority, weight, run_at, expires_at, max_attempts,
      backoff, retry_queue, delivery, timeout_ms, unique_key, owner, depends_on, on_dependency_failure, state,
      blocked_by, ord)
  WHERE NOT EXISTS (SELECT 1 FROM {{errandJobDone}} d WHERE d.id = u.id)
  ORDER BY u.ord
  ON CONFLICT DO NOTHING
  RETURNING id, state, run_at
), ready AS (SELECT 1 FROM ins WHERE state = 'pending' AND run_at <= $18),
n AS (SELECT pg_notify({{channel}}, $19) FROM (SELECT 1 FROM ready LIMIT 1) AS r)
{{insertOutcome}}

-- name: dropRaced
DELETE FROM {{errandJob}} j WHERE j.id = ANY($1::text[])
  AND EXISTS (SELECT 1 FROM {{errandJobDone}} d WHERE d.id = j.id) RETURNING j.id

-- name: existing
SELECT {{hotFields}}, false AS "byKey" FROM {{errandJob}} WHERE id = ANY($1::text[])
UNION ALL SELECT {{doneFields}}, false FROM {{errandJobDone}} WHERE id = ANY($1::text[])
UNION ALL SELECT {{hotFields}}, true FROM {{errandJob}} WHERE unique_key = ANY($2::text[])
