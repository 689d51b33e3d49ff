-- claim: Store.claim(). Leases ready jobs to one worker; the store runs one claim statement per
-- queue share (see planClaimAsync), after lockCaps and countActive when types are capped.
--
-- Guarantees:
--   - One holder: a job is locked (FOR UPDATE SKIP LOCKED) and leased (state active, attempt + 1,
--     worker, lease, startedAt) by the same statement, so no two claimers take it, and neither
--     waits on rows the other holds.
--   - Order: priority desc, then run_at, then id. Jobs past their expires_at are passed over (left
--     for expirePending).
--   - Weight: jobs are leased in order while their weights, each capped at $4, fit the budget $5;
--     the first that does not fit ends the claim (as in every store).
--   - Paused queues ({{errandQueuePause}}) give nothing; their jobs stay pending.
--   - Cluster-wide caps: lockCaps takes a transaction-scoped advisory lock per capped type before
--     countActive counts its active jobs, so no two claimers see the same free room; claimCapped
--     then leases at most the room left per type.
--   - Cluster-wide per-key rules (keyConcurrency, ordered; claim.ts KeyRoom): before any job of a
--     (type, key) with rules is leased, the claim holds that key's advisory lock (lockKeys, or
--     tryLockKeys for keys met after the first) and has counted its active jobs and found its
--     earliest hot job (keyState). claimKeyed leases a keyed job of such a type only for a key with
--     room passed in $13-$16, at most that room, and under `ordered` only the key's earliest job;
--     keys not yet locked are left out, to be found by keyPeek and locked in the next round.
--
-- Why:
--   - The pause check names only $1, not a column of the job row, so the planner makes it a
--     one-time filter (an InitPlan: one primary-key probe of a near-empty table per statement) and
--     skips the index walk entirely when the queue is paused.
--   - `cand` locks at most $3 rows in claim order; `fits` keeps the prefix that fits the budget;
--     `upd` leases them. One statement, so one queue share with no caps needs no transaction.
--   - A last row, all NULL but for two flags, reports whether a job did not fit (`overflow`: the
--     claim is full) and whether jobs of a type at its cap were passed over (`skipped`: the store
--     looks again with that type excluded in $9). claimCapped differs from claim only in `ranked`,
--     which marks the jobs beyond their type's room as skipped.
--   - Rows come back as arrays in the order of {{hotFieldsJ}} (the hot fields, each qualified by the
--     alias j, which UPDATE ... FROM needs): hotRecord reads them by position.
--   - The advisory locks are taken in type order (no deadlock between two claimers), keyed by the
--     channel name (one per schema) and the type, so installations in other schemas do not contend.
--   - Row locks: `cand` takes them in claim order, not in the id order the statements that wait
--     for row locks keep (heartbeatMany, completeMany, failMany), and needs no other: SKIP LOCKED
--     never waits for a row, so a claim cannot be one of two statements each waiting for the
--     other. In a claim's transaction the advisory locks it waits for come first, before any row
--     lock (tryLockKeys, later, never waits).
--   - Key locks are keyed by KEY_LOCK and a hash of the channel, the type and the key (chr(31)
--     between: names never contain it), taken after the cap locks. lockKeys waits, in hash order,
--     only while the claim holds no key lock; later keys are try-locked, and a key another claimer
--     holds is closed for this claim. So, but within lockKeys' hash order, no claimer holding key
--     locks waits for any lock (no deadlock). keyPeek is a plain read.
--   - Claims without per-key rules run none of these statements: their cost is unchanged.
--
-- lockCaps: $1 lock key (CAP_LOCK), $2 capped types (and rate-limited ones).
-- countActive: $1 capped types. Returns (type, n) for types with active jobs.
-- claim, claimCapped: $1 queue, $2 now, $3 limit, $4 weight cap (NULL: none), $5 budget (NULL:
--   none), $6 worker id, $7 lease expiry, $8 types (NULL: all), $9 types at their cap (NULL:
--   none); claimCapped also $10 capped types with room, $11 the room left for each.
-- claimKeyed: as claimCapped ($10 and $11 may be empty), and $12 the types with per-key rules,
--   $13 types, $14 keys, $15 room, $16 the only job that may start (NULL: any) of each locked key
--   with room. A keyed job of a type in $12 whose key is not among them is not a candidate.
-- keyPeek: $1 queue, $2 now, $3 limit, $4 types (NULL: all), $5 types at their cap (NULL: none),
--   $6 the types with per-key rules, $7 and $8 the (type, key)s closed for this claim. Returns the
--   distinct (type, key) of the rules' types among the next $3 candidates, closed keys left out.
-- lockKeys: $1 lock key (KEY_LOCK), $2 types, $3 keys. tryLockKeys: the same; returns (type, key,
--   ok) for each. keyState: $1 types, $2 keys. Returns (type, key, active: its active jobs, first:
--   the id of its earliest hot job by created_at, id).
-- Rate limits (rates.ts; errand_rate_start): rateCount $1 scopes (`type`, or `type|key`), $2 now −
--   each one's period, $3 RATE_FORGET_LAG_MS: deletes the scope's starts that left every window
--   more than $3 ms ago (a claim whose `now` is behind another's still counts the rest) and
--   returns (scope, n: its starts in the window). rateStart $1 scopes, $2 now, $3 starts of each. rateHeld, for the
--   scopes left without room: $1 scopes, $2 their types, $3 keys (NULL: a type's scope), $4 now −
--   period, $5 count − limit, $6 period, $7 the claim's queues, $8 now, $9 the claim's limit, $10
--   types (NULL: all). Returns `until`: the earliest time one of them whose type (and key) has a
--   job among the next $9 ready ones of a queue in $7 has room again, the ($5)-th oldest start in
--   its window (0-based) plus the period; NULL for none. Looking no further than a claim would
--   (as SQLite's gate sees only its candidates) bounds the walk: a window left full while its type
--   has no ready job must not make every later claim read the whole queue.
--   A rate-limited type's scope is counted under its cap lock (lockCaps takes the rate-limited
--   types with the capped ones, in the one type order), a key's under its key lock, so no two
--   claimers count the same window; rateStart and rateHeld run before the commit, under them.

-- name: lockCaps
SELECT pg_advisory_xact_lock($1::integer, hashtext({{channel}} || t))
FROM (SELECT t FROM unnest($2::text[]) AS t ORDER BY t) AS sorted

-- name: countActive
SELECT type, count(*) AS n FROM {{errandJob}}
WHERE state = 'active' AND type = ANY($1::text[]) GROUP BY type

-- claimKeyed and claimCapped end alike: the takeRanked fragment (columns.ts) takes the rows of their
-- `ranked` CTE that fit the claimer's weight and reports whether any did not fit or was skipped.

-- name: claim
WITH cand AS (
  SELECT id, type, priority, run_at, least(weight, coalesce($4::bigint, weight)) AS w
  FROM {{errandJob}}
  WHERE queue = $1 AND state = 'pending' AND run_at <= $2
    AND NOT EXISTS (SELECT 1 FROM {{errandQueuePause}} WHERE name = $1)
    AND (expires_at IS NULL OR expires_at > $2)
    AND ($8::text[] IS NULL OR type = ANY($8::text[]))
    AND ($9::text[] IS NULL OR type <> ALL($9::text[]))
  ORDER BY priority DESC, run_at, id
  LIMIT $3
  FOR UPDATE SKIP LOCKED
), fits AS (
  SELECT id, false AS skipped, sum(w) OVER (ORDER BY priority DESC, run_at, id ROWS UNBOUNDED PRECEDING) AS used
  FROM cand
), upd AS (
  UPDATE {{errandJob}} j
  SET state = 'active', attempt = j.attempt + 1, worker_id = $6, lease_expires_at = $7, started_at = $2
  FROM fits f
  WHERE j.id = f.id AND NOT f.skipped AND ($5::bigint IS NULL OR f.used <= $5)
  RETURNING {{hotFieldsJ}}
)
SELECT *, NULL::boolean AS overflow, NULL::boolean AS skipped FROM upd
UNION ALL
SELECT {{hotNulls}},
  coalesce(bool_or(NOT skipped AND $5::bigint IS NOT NULL AND used > $5), false),
  coalesce(bool_or(skipped), false)
FROM fits

-- name: claimKeyed
WITH open AS (
  SELECT * FROM unnest($13::text[], $14::text[], $15::bigint[], $16::text[]) AS o(type, key, room, first)
), cand AS (
  SELECT j.id, j.type, j.key, j.priority, j.run_at, least(j.weight, coalesce($4::bigint, j.weight)) AS w
  FROM {{errandJob}} j
  WHERE j.queue = $1 AND j.state = 'pending' AND j.run_at <= $2
    AND NOT EXISTS (SELECT 1 FROM {{errandQueuePause}} WHERE name = $1)
    AND (j.expires_at IS NULL OR j.expires_at > $2)
    AND ($8::text[] IS NULL OR j.type = ANY($8::text[]))
    AND ($9::text[] IS NULL OR j.type <> ALL($9::text[]))
    AND (j.key IS NULL OR j.type <> ALL($12::text[]) OR EXISTS (
      SELECT 1 FROM open o
      WHERE o.type = j.type AND o.key = j.key AND o.room > 0 AND (o.first IS NULL OR o.first = j.id)))
  ORDER BY j.priority DESC, j.run_at, j.id
  LIMIT $3
  FOR UPDATE OF j SKIP LOCKED
), ranked AS (
  SELECT c.*,
    coalesce(row_number() OVER (PARTITION BY c.type ORDER BY c.priority DESC, c.run_at, c.id) > r.room, false)
    OR coalesce(
      row_number() OVER (PARTITION BY c.type, c.key ORDER BY c.priority DESC, c.run_at, c.id) > o.room, false
    ) AS skipped
  FROM cand c
  LEFT JOIN unnest($10::text[], $11::bigint[]) AS r(type, room) ON r.type = c.type
  LEFT JOIN open o ON o.type = c.type AND o.key = c.key
){{takeRanked}}

-- name: keyPeek
SELECT DISTINCT c.type, c.key FROM (
  SELECT j.type, j.key FROM {{errandJob}} j
  WHERE j.queue = $1 AND j.state = 'pending' AND j.run_at <= $2
    AND NOT EXISTS (SELECT 1 FROM {{errandQueuePause}} WHERE name = $1)
    AND (j.expires_at IS NULL OR j.expires_at > $2)
    AND ($4::text[] IS NULL OR j.type = ANY($4::text[]))
    AND ($5::text[] IS NULL OR j.type <> ALL($5::text[]))
    AND NOT (j.key IS NOT NULL AND j.type = ANY($6::text[])
      AND (j.type, j.key) IN (SELECT * FROM unnest($7::text[], $8::text[])))
  ORDER BY j.priority DESC, j.run_at, j.id
  LIMIT $3
) AS c
WHERE c.key IS NOT NULL AND c.type = ANY($6::text[])

-- name: lockKeys
SELECT pg_advisory_xact_lock($1::integer, h)
FROM (
  SELECT DISTINCT hashtext({{channel}} || t || chr(31) || k) AS h FROM unnest($2::text[], $3::text[]) AS u(t, k)
  ORDER BY h
) AS sorted

-- name: tryLockKeys
SELECT t AS type, k AS key, pg_try_advisory_xact_lock($1::integer, hashtext({{channel}} || t || chr(31) || k)) AS ok
FROM unnest($2::text[], $3::text[]) AS u(t, k)

-- name: keyState
SELECT u.type, u.key,
  (SELECT count(*) FROM {{errandJob}} a WHERE a.type = u.type AND a.key = u.key AND a.state = 'active')::integer
    AS active,
  (SELECT f.id FROM {{errandJob}} f WHERE f.type = u.type AND f.key = u.key ORDER BY f.created_at, f.id LIMIT 1)
    AS first
FROM unnest($1::text[], $2::text[]) AS u(type, key)

-- name: claimCapped
WITH cand AS (
  SELECT id, type, priority, run_at, least(weight, coalesce($4::bigint, weight)) AS w
  FROM {{errandJob}}
  WHERE queue = $1 AND state = 'pending' AND run_at <= $2
    AND NOT EXISTS (SELECT 1 FROM {{errandQueuePause}} WHERE name = $1)
    AND (expires_at IS NULL OR expires_at > $2)
    AND ($8::text[] IS NULL OR type = ANY($8::text[]))
    AND ($9::text[] IS NULL OR type <> ALL($9::text[]))
  ORDER BY priority DESC, run_at, id
  LIMIT $3
  FOR UPDATE SKIP LOCKED
), ranked AS (
  SELECT c.*, coalesce(
      row_number() OVER (PARTITION BY c.type ORDER BY c.priority DESC, c.run_at, c.id) > r.room, false
    ) AS skipped
  FROM cand c LEFT JOIN unnest($10::text[], $11::bigint[]) AS r(type, room) ON r.type = c.type
){{takeRanked}}

-- name: rateCount
WITH u AS (
  SELECT * FROM unnest($1::text[], $2::bigint[]) AS u(scope, since)
), gone AS (
  DELETE FROM {{errandRateStart}} r USING u WHERE r.scope = u.scope AND r.at <= u.since - $3::bigint
)
SELECT u.scope,
  coalesce((SELECT sum(r.n) FROM {{errandRateStart}} r WHERE r.scope = u.scope AND r.at > u.since), 0)::integer
    AS n
FROM u

-- name: rateStart
INSERT INTO {{errandRateStart}} (scope, at, n)
SELECT u.scope, $2, u.n FROM unnest($1::text[], $3::integer[]) AS u(scope, n)

-- name: rateHeld
WITH ready AS (
  SELECT c.type, c.key FROM unnest($7::text[]) AS q(name)
  CROSS JOIN LATERAL (
    SELECT j.type, j.key FROM {{errandJob}} j
    WHERE j.queue = q.name AND j.state = 'pending' AND j.run_at <= $8
      AND NOT EXISTS (SELECT 1 FROM {{errandQueuePause}} WHERE name = q.name)
      AND (j.expires_at IS NULL OR j.expires_at > $8)
      AND ($10::text[] IS NULL OR j.type = ANY($10::text[]))
    ORDER BY j.priority DESC, j.run_at, j.id
    LIMIT $9
  ) AS c
)
SELECT min(l.at + u.period)::bigint AS until
FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::bigint[], $6::bigint[])
  AS u(scope, type, key, since, skip, period)
CROSS JOIN LATERAL (
  SELECT s.at FROM (
    SELECT r.at, sum(r.n) OVER (ORDER BY r.at ROWS UNBOUNDED PRECEDING) AS upto
    FROM {{errandRateStart}} r WHERE r.scope = u.scope AND r.at > u.since
  ) AS s
  WHERE s.upto > u.skip
  ORDER BY s.at
  LIMIT 1
) AS l
WHERE EXISTS (SELECT 1 FROM ready WHERE ready.type = u.type AND (u.key IS NULL OR ready.key = u.key))
