-- retry: Store.retry(). Runs a dead, cancelled or expired job again, as the same job.
--
-- Guarantees:
--   - The job moves from errand_job_done back to errand_job, keeping its id, attempts and errors;
--     max_attempts grows when needed so one more attempt is allowed. Its expiry and lease-expiry
--     count are cleared, and so is its debounce key: a job retried by hand is no debounce target,
--     and back pending at attempt 0 it would contend for errand_job_debounce. It is pending at
--     $2, or blocked when $4 (the store's count of its dependencies still unfinished, taken
--     under their row locks: `retryDependencies`) is above 0.
--   - A completed, blocked, pending, active or unknown job changes nothing (no row: the store then
--     reads it with get).
--   - A blocked, pending or active job holding its unique key makes the insert fail (unique
--     violation), which rolls the whole statement back; the store reports INVALID_STATE. A holder
--     past its expires_at (no claim can take it, no sweep has reached it) holds the key no longer:
--     `retryDependencies` finds it ("staleHolder") and the store expires it first, as an enqueue
--     would (expireKeyHolders in enqueueMany.sql), in the same transaction.
--   - NOTIFYs the wake channel when it made the job pending.
--   - has_dependents is set again from errand_dependency, so the job's next finish settles the
--     dependents waiting on it; "hasDependents" tells the store to count it unfinished again for
--     those still blocked (`recountDependents`).
--
-- Why:
--   - `ins` copies every shared column as it is but those the /*@sharedValues*/ marker names (the
--     list is written in by `npm run gen` from src/job-fields.ts, scripts/job-field-markers.ts).
--   - `n` is read by the final SELECT because PostgreSQL runs only the plain CTEs that are read.
--
-- retryDependencies: $1 id, $2 now. Returns the job's depends_on, state and unique key if it is in
--   errand_job_done (a plain read: the statements that follow lock what they change), and whether
--   a blocked or pending job past its expires_at by $2 holds that key (read by the key's index).
-- retry: $1 id, $2 now, $3 notify tag, $4 unfinished dependencies.
--   Returns the job as now pending or blocked, as a JobRecord with "hasDependents", or no row.
-- recountDependents: $1 id. Counts the job unfinished again for each blocked job waiting on it
--   (row locks in id order). Returns one row: n (jobs changed).

-- name: retryDependencies
SELECT d.depends_on AS "dependsOn", d.state, d.unique_key AS "uniqueKey",
  d.unique_key IS NOT NULL AND d.state IN ('dead', 'cancelled', 'expired') AND EXISTS (
    SELECT 1 FROM {{errandJob}} h
    WHERE h.unique_key = d.unique_key AND h.state IN ('blocked', 'pending') AND h.expires_at <= $2
  ) AS "staleHolder"
FROM {{errandJobDone}} d WHERE d.id = $1

-- name: retry
WITH moved AS (
  DELETE FROM {{errandJobDone}} WHERE id = $1 AND state IN ('dead', 'cancelled', 'expired') RETURNING *
), ins AS (
  INSERT INTO {{errandJob}} ({{sharedColumns}}, state, blocked_by, has_dependents)
  SELECT /*@sharedValues run_at = $2; expires_at = NULL; max_attempts = greatest(max_attempts, attempt + 1);
      lease_expirations = 0; debounce_key = NULL*/,
    CASE WHEN $4::integer > 0 THEN 'blocked' ELSE 'pending' END, $4::integer,
    EXISTS (SELECT 1 FROM {{errandDependency}} e WHERE e.dep_id = moved.id)
  FROM moved
  RETURNING {{hotFields}}, has_dependents AS "hasDependents"
), n AS (SELECT pg_notify({{channel}}, $3) FROM (SELECT 1 FROM ins WHERE state = 'pending' LIMIT 1) AS r)
SELECT * FROM ins WHERE (SELECT count(*) FROM n) >= 0

-- name: recountDependents
WITH locked AS MATERIALIZED (
  SELECT j.id FROM {{errandJob}} j
  WHERE j.id IN (SELECT e.job_id FROM {{errandDependency}} e WHERE e.dep_id = $1) AND j.state = 'blocked'
  ORDER BY j.id
  FOR UPDATE OF j
), upd AS (
  UPDATE {{errandJob}} j SET blocked_by = j.blocked_by + 1
  FROM locked l WHERE j.id = l.id AND j.state = 'blocked'
  RETURNING 1
)
SELECT count(*)::integer AS n FROM upd
