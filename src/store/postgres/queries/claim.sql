-- claim: Store.claim(). Leases ready jobs to one worker; the store runs one claim statement per
-- queue share (see planClaimAsync), after lockCaps and countActive when types are capped.
--
-- Guarantees:
--   - One holder: a job is locked (FOR UPDATE SKIP LOCKED) and leased (state active, attempt + 1,
--     worker, lease, startedAt) by the same statement, so no two claimers take it, and neither
--     waits on rows the other holds.
--   - Order: priority desc, then run_at, then id, across all the types the claim may take ($8, its
--     open types: claim.ts). Jobs past their expires_at are passed over (left for expirePending).
--     Under contention a row another claimer holds is skipped and its type's next row taken in its
--     place (SKIP LOCKED gives no strict order between claimers anyway); with k > 1 open types, a
--     type with no next row leaves the claim short by as many (not another type's rows past the
--     peek's window): the claimer that holds them is taking them, and the next claim the rest.
--   - A held type (at its cap, its rate limit spent) is not in $8, so none of its rows is read: a
--     backlog of a million such jobs costs another type's claim nothing (issue 15).
--   - Weight: jobs are leased in order while their weights, each capped at $4, fit the budget $5;
--     the first that does not fit ends the claim (as in every store).
--   - Paused queues ({{errandQueuePause}}) give nothing; their jobs stay pending.
--   - Cluster-wide caps: lockCaps takes a transaction-scoped advisory lock per capped type before
--     countActive counts its active jobs, so no two claimers see the same free room; claimCapped
--     then leases at most the room left per type.
--   - Cluster-wide per-key rules (keyConcurrency, ordered; claim.ts KeyRoom): before any job of a
--     (type, key) with rules is leased, the claim holds that key's advisory lock (waited for, or
--     tried for keys met after the first) and has counted its active jobs and found its earliest
--     hot job, after the lock was granted (keyPeek, through errand_key_room: migration 0009).
--     claimKeyed leases a keyed job of such a type only for a key with room passed in $12-$15, at
--     most that room, and under `ordered` only the key's earliest job; keys not yet locked are
--     left out, to be found by keyPeek and locked in the next round.
--
-- Why:
--   - The pause check names only $1, not a column of the job row, so the planner makes it a
--     one-time filter (an InitPlan: one primary-key probe of a near-empty table per statement) and
--     skips the index walk entirely when the queue is paused.
--   - The claim index is errand_job_claim (queue, type, priority DESC, run_at, id) WHERE pending
--     (migrations/0008): each open type is walked from its first job in claim order, so no walk
--     filters another type's rows one by one. claim, claimCapped and claimKeyed are written here
--     for k > 1 open types (claim's and claimCapped's walk is one text, the walkTypes fragment of
--     columns.ts; claimKeyed's adds the per-key filter): `peek` reads, without locking, each type's first $3 rows (LATERAL, so
--     each walk stops at $3) and keeps the $3 first of them in claim order; `share` counts them
--     per type, and `cand` locks, per type, as many rows as the peek gave it. So the statement
--     reads at most (k + 1) x $3 rows and locks at most $3. Locking in one walk over the merged
--     order is not possible: a UNION ALL or LATERAL of per-type `LIMIT $3 FOR UPDATE` reads and
--     locks k x $3 rows (no lazy Merge Append through LockRows), and row locks write.
--   - With one open type (the usual worker of one type, a fair type's turn, a share whose other
--     types are held) the store runs the one-type form (postgres/one-type.ts, made from these
--     texts): `cand` alone, `$3` rows of the type $8[1], the one index walk claims always were.
--   - The outer `LIMIT $3` of `cand` changes no result (`share` sums to at most $3): it tells the
--     planner that `cand` is small, so `upd` probes the primary key rather than hashing the table.
--   - `fits` keeps the prefix of `cand` that fits the budget; `upd` leases them. One statement, so
--     one queue share with no caps needs no transaction.
--   - claim.ts runs claim, claimCapped and claimKeyed (and their one-type and fair forms) as
--     postgres/literal-limit.ts writes them: `LIMIT $3` as the number, and the walk's queue, now
--     and types read through one-row subqueries no plan sees into, so PostgreSQL keeps one
--     generic plan per connection rather than planning every claim (its custom plans, seeing
--     those values, looked cheaper). A rewrite that no longer matches leaves the text as it is.
--   - A last row, all NULL but for two flags, reports whether a job did not fit (`overflow`: the
--     claim is full) and whether jobs of a type at its cap were passed over (`skipped`: the store
--     looks again with that type left out of $8). claimCapped differs from claim only in `ranked`,
--     which marks the jobs beyond their type's room as skipped.
--   - Rows come back as arrays, packed (postgres/claimed-row.ts): a few columns of their own and one
--     `rest`, NULL while the job's other fields hold a new job's values (the usual case), so pg
--     decodes 13 fields a job, not 32; claimedRecord reads them by position, and the lease, holder
--     and start from the claim's own parameters.
--   - The advisory locks are taken in type order (no deadlock between two claimers), keyed by the
--     channel name (one per schema) and the type, so installations in other schemas do not contend.
--   - Row locks: `cand` takes them in claim order (per type, with k > 1), not in the id order the statements that wait
--     for row locks keep (heartbeatMany, completeMany, failMany), and needs no other: SKIP LOCKED
--     never waits for a row, so a claim cannot be one of two statements each waiting for the
--     other. In a claim's transaction the advisory locks it waits for come first, before any row
--     lock (keyPeek's try-locks, later, never wait).
--   - Key locks are keyed by KEY_LOCK and a hash of the channel, the type and the key (chr(31)
--     between: names never contain it), taken after the cap locks. keyPeek waits, in hash order,
--     only while the claim holds no key lock; later keys are try-locked, and a key another claimer
--     holds is closed for this claim. So, but within that one hash order, no claimer holding key
--     locks waits for any lock (no deadlock). keyPeek's walk is a plain read.
--   - keyPeek's one round trip: it finds the keys and hands them to errand_key_room, a VOLATILE
--     function, which locks them and then counts in a statement of its own: its own snapshot,
--     taken after the locks, so a start another claimer committed while this one waited is
--     counted (within keyPeek's statement the snapshot predates the lock).
--   - Claims without per-key rules run none of these statements: their cost is unchanged.
--   - postgres/one-type.ts and postgres/fair.ts make their forms by rewriting these texts: the
--     `peek ... share ... cand` block, the walks' last line (`AND j.type = s.type`, keyPeek's
--     `AND j.type = t.type`), the orders and the locking walk's select list. The peeks carry
--     fair_turn for the rest variant's filter. A rewrite that no longer matches fails at open.
--
-- lockCaps: $1 lock key (CAP_LOCK), $2 capped types (and rate-limited ones).
-- countActive: $1 capped types. Returns (type, n) for types with active jobs.
-- claim, claimCapped: $1 queue, $2 now, $3 limit, $4 weight cap (NULL: none), $5 budget (NULL:
--   none), $6 worker id, $7 lease expiry, $8 the open types (never empty: the claim's types, or
--   the queue's pending types from queueTypes, less those at their cap or out of rate); claimCapped
--   also $9 capped types with room, $10 the room left for each.
-- claimKeyed: as claimCapped ($9 and $10 may be empty), and $11 the types with per-key rules,
--   $12 types, $13 keys, $14 room, $15 the only job that may start (NULL: any) of each locked key
--   with room. A keyed job of a type in $11 whose key is not among them is not a candidate.
-- keyPeek: $1 queue, $2 now, $3 limit, $4 the open types, $5 the types with per-key rules, $6
--   and $7 the (type, key)s whose jobs cannot start in this claim but $13's: the keys closed for
--   it and the open keys of ordered types, $8 KEY_LOCK, $9 wait for the locks (the claim
--   holds no key lock yet) or try them, $10 and $11 the (type, key)s already locked and open, $12
--   the ordered types, $13 the one job each open key of an ordered type may start. Finds
--   the distinct (type, key) of the rules' types among the next $3 candidates (each open type's
--   first $3, merged), jobs that cannot start left out of the window (so a busy key's backlog,
--   however long, never fills it: other keys behind it are found), open keys not locked again; returns
--   for each (type, key, ok: its lock held, active: its active jobs, first: for an ordered type, the
--   id of its earliest hot job by created_at, id), the counts read after the locks, and n: how
--   many of the window's jobs are the key's (claim.ts parks a key whose jobs it passed over).
-- queueTypes: $1 queue. Returns its pending types: a loose index scan of errand_job_claim (one
--   descent per type, O(types x log n)), whatever the number of jobs. Each step is written
--   `ORDER BY type LIMIT 1`, not `min(type)`: the planner turns min() into that walk only when it
--   costs less, and on a table whose statistics predate its jobs (a new schema, autovacuum behind)
--   it chose an aggregate over every pending entry of the queue instead (5 ms a claim at 18,000
--   pending jobs, found with EXPLAIN; test/integration/postgres/queue-types.test.ts). rateHeld's
--   walk is the same.
-- Rate limits (rates.ts; errand_rate_start): rateCount $1 scopes (`type`, or `type|key`), $2 now −
--   each one's period, $3 RATE_FORGET_LAG_MS: deletes the scope's starts that left every window
--   more than $3 ms ago (a claim whose `now` is behind another's still counts the rest) and
--   returns (scope, n: its starts in the window). rateStart $1 scopes, $2 now, $3 starts of each. rateHeld, for the
--   scopes left without room: $1 scopes, $2 their types, $3 keys (NULL: a type's scope), $4 now −
--   period, $5 count − limit, $6 period, $7 the claim's queues, $8 now, $9 the claim's limit, $10
--   types (NULL: each queue's pending types, found as queueTypes finds them). Returns `until`:
--   the earliest time one of them whose type (and key) has a job among the next $9 ready ones of
--   a queue in $7 has room again, the ($5)-th oldest start in its window (0-based) plus the
--   period; NULL for none. Looking no further than a claim would
--   (as SQLite's gate sees only its candidates) bounds the walk: a window left full while its type
--   has no ready job must not make every later claim read the whole queue. The next $9 are found
--   as the claims find them (each type's first $9, merged), so a held type's backlog ahead of the
--   claim's types is not read past its first $9 either.
--   A rate-limited type's scope is counted under its cap lock (lockCaps takes the rate-limited
--   types with the capped ones, in the one type order), a key's under its key lock, so no two
--   claimers count the same window; rateStart and rateHeld run before the commit, under them.

-- name: lockCaps
SELECT pg_advisory_xact_lock($1::integer, hashtext({{channel}} || t))
FROM (SELECT t FROM unnest($2::text[]) AS t ORDER BY t) AS sorted

-- capRoom: the room a claim of one capped type has ($9 the cap, $10 CAP_LOCK, $8 the type), counted
-- by errand_cap_room after it takes the type's cap lock (migration 0009). Not run alone: one-type.ts
-- puts it at the head of claimCapped's one-type form for claim.ts claimCappedAlone.

-- name: capRoom
SELECT $9::bigint - r.active AS room FROM {{errandCapRoom}}($10::integer, {{channel}}, $8::text[]) AS r

-- name: countActive
SELECT type, count(*) AS n FROM {{errandJob}}
WHERE state = 'active' AND type = ANY($1::text[]) GROUP BY type

-- claimKeyed and claimCapped end alike: the takeRanked fragment (columns.ts) takes the rows of their
-- `ranked` CTE that fit the claimer's weight and reports whether any did not fit or was skipped.

-- name: claim
WITH {{walkTypes}}, fits AS (
  SELECT id, false AS skipped, sum(w) OVER (ORDER BY priority DESC, run_at, id ROWS UNBOUNDED PRECEDING) AS used
  FROM cand
), {{leaseFits}}
SELECT *, NULL::boolean AS overflow, NULL::boolean AS skipped FROM upd
UNION ALL
SELECT {{claimedNulls}},
  coalesce(bool_or(NOT skipped AND $5::bigint IS NOT NULL AND used > $5), false),
  coalesce(bool_or(skipped), false)
FROM fits
-- name: claimKeyed
WITH open AS (
  SELECT * FROM unnest($12::text[], $13::text[], $14::bigint[], $15::text[]) AS o(type, key, room, first)
), peek AS (
  SELECT c.type FROM unnest($8::text[]) AS t(type)
  CROSS JOIN LATERAL (
    SELECT j.type, j.fair_turn, j.id, j.priority, j.run_at FROM {{errandJob}} j
    WHERE j.queue = $1 AND j.state = 'pending' AND j.parked IS NULL AND j.run_at <= $2
      AND NOT EXISTS (SELECT 1 FROM {{errandQueuePause}} WHERE name = $1)
      AND (j.expires_at IS NULL OR j.expires_at > $2)
      AND (j.key IS NULL OR j.type <> ALL($11::text[]) OR EXISTS (
        SELECT 1 FROM open o
        WHERE o.type = j.type AND o.key = j.key AND o.room > 0 AND (o.first IS NULL OR o.first = j.id)))
      AND j.type = t.type
    ORDER BY j.priority DESC, j.run_at, j.id
    LIMIT $3
  ) AS c
  ORDER BY c.priority DESC, c.run_at, c.id
  LIMIT $3
), share AS (
  SELECT type, count(*) AS n FROM peek GROUP BY type
), cand AS (
  SELECT c.* FROM share s
  CROSS JOIN LATERAL (
    SELECT j.id, j.type, j.key, j.priority, j.run_at, least(j.weight, coalesce($4::bigint, j.weight)) AS w
    FROM {{errandJob}} j
    WHERE j.queue = $1 AND j.state = 'pending' AND j.parked IS NULL AND j.run_at <= $2
      AND NOT EXISTS (SELECT 1 FROM {{errandQueuePause}} WHERE name = $1)
      AND (j.expires_at IS NULL OR j.expires_at > $2)
      AND (j.key IS NULL OR j.type <> ALL($11::text[]) OR EXISTS (
        SELECT 1 FROM open o
        WHERE o.type = j.type AND o.key = j.key AND o.room > 0 AND (o.first IS NULL OR o.first = j.id)))
      AND j.type = s.type
    ORDER BY j.priority DESC, j.run_at, j.id
    LIMIT s.n
    FOR UPDATE OF j SKIP LOCKED
  ) AS c
  LIMIT $3
), ranked AS (
  SELECT c.*,
    coalesce(row_number() OVER (PARTITION BY c.type ORDER BY c.priority DESC, c.run_at, c.id) > r.room, false)
    OR coalesce(
      row_number() OVER (PARTITION BY c.type, c.key ORDER BY c.priority DESC, c.run_at, c.id) > o.room, false
    ) AS skipped
  FROM cand c
  LEFT JOIN unnest($9::text[], $10::bigint[]) AS r(type, room) ON r.type = c.type
  LEFT JOIN open o ON o.type = c.type AND o.key = c.key
){{takeRanked}}
-- name: keyPeek
WITH seen AS (
  SELECT c.type, c.key, count(*)::integer AS n FROM (
    SELECT w.type, w.key FROM unnest($4::text[]) AS t(type)
    CROSS JOIN LATERAL (
      SELECT j.type, j.key, j.fair_turn, j.id, j.priority, j.run_at FROM {{errandJob}} j
      WHERE j.queue = $1 AND j.state = 'pending' AND j.parked IS NULL AND j.run_at <= $2
        AND NOT EXISTS (SELECT 1 FROM {{errandQueuePause}} WHERE name = $1)
        AND (j.expires_at IS NULL OR j.expires_at > $2)
        AND NOT (j.key IS NOT NULL AND j.type = ANY($5::text[])
          AND (j.type, j.key) IN (SELECT * FROM unnest($6::text[], $7::text[]))
          AND j.id NOT IN (SELECT unnest($13::text[])))
        AND j.type = t.type
      ORDER BY j.priority DESC, j.run_at, j.id
      LIMIT $3
    ) AS w
    ORDER BY w.priority DESC, w.run_at, w.id
    LIMIT $3
  ) AS c
  WHERE c.key IS NOT NULL AND c.type = ANY($5::text[])
    AND (c.type, c.key) NOT IN (SELECT * FROM unnest($10::text[], $11::text[]))
  GROUP BY c.type, c.key
)
SELECT r.type, r.key, r.ok, r.active, r.first, s.n
FROM {{errandKeyRoom}}($8::integer, {{channel}}, $9::boolean,
  ARRAY(SELECT type FROM seen ORDER BY type, key), ARRAY(SELECT key FROM seen ORDER BY type, key),
  $12::text[]) AS r
JOIN seen s ON s.type = r.type AND s.key = r.key

-- parkKeys: $1 types, $2 keys, $3 each one's keyConcurrency (NULL: none), $4 each one's `ordered`,
-- $5 each one's keyRateLimit scope, $6 its limit, $7 its period (NULL: none), $8 now, $9 the most
-- jobs to park (PARK_MOST). Parks the ready jobs of those keys that cannot start another job
-- (errand_key_park, migration 0011); returns how many it parked and the soonest wake it set for
-- a key parked by its rate limit. claim.ts runs it after a claim that passed over a key's jobs, or
-- filled a key's rate window (KeyRoom.parkable, and fairClaimKeyed's usual form's `parkable`), so
-- later claims do not read them.

-- name: parkKeys
SELECT p.parked, p.wake
FROM {{errandKeyPark}}($1::text[], $2::text[], $3::integer[], $4::boolean[], $5::text[], $6::integer[],
  $7::bigint[], $8::bigint, $9::integer) AS p

-- wakeParked: $1 now, $2 types (NULL: all), $3 notify tag (NULL: no NOTIFY). Puts back, for each
-- (type, key) parked by its rate limit whose window has opened (errand_park_wake), as many of its
-- parked jobs as the window holds, in claim order, and forgets the wake. Returns how many came
-- back and the next wake still set for those types. claim.ts runs it on its own, before a claim
-- of a type with keyRateLimit (so its locks are not held while the claim waits for others'), and
-- the lease sweep for every type (a type whose workers no longer have the rule still gets its
-- jobs back). Rows are taken with SKIP LOCKED: a wake or a job another transaction holds is left
-- to the next call. A wake that could not put back all it should (some of the key's parked jobs
-- were held, by a cancel or reschedule that may yet roll back) is kept, less what it put back:
-- forgetting it would leave a job parked for good should the holder roll back.

-- name: wakeParked
WITH due AS (
  SELECT d.type, d.key, d.n FROM {{errandParkWake}} d
  WHERE d.at <= $1 AND ($2::text[] IS NULL OR d.type = ANY($2::text[]))
  ORDER BY d.at LIMIT 100
  FOR UPDATE SKIP LOCKED
), back AS (
  UPDATE {{errandJob}} j SET parked = NULL
  WHERE j.id = ANY (ARRAY(
    SELECT b.id FROM due d CROSS JOIN LATERAL (
      SELECT p.id FROM {{errandJob}} p
      WHERE p.type = d.type AND p.key = d.key AND p.parked IS NOT NULL AND p.parked = 3
      ORDER BY p.priority DESC, p.run_at, p.id
      LIMIT d.n
      FOR UPDATE SKIP LOCKED
    ) AS b
  ))
  RETURNING j.run_at, j.type, j.key
), took AS (
  SELECT d.type, d.key, d.n,
    (SELECT count(*) FROM back b WHERE b.type = d.type AND b.key = d.key) AS n_back,
    (SELECT count(*) FROM (
      SELECT 1 FROM {{errandJob}} p
      WHERE p.type = d.type AND p.key = d.key AND p.parked IS NOT NULL AND p.parked = 3
      LIMIT d.n
    ) AS x) AS n_there
  FROM due d
), gone AS (
  DELETE FROM {{errandParkWake}} w USING took t
  WHERE w.type = t.type AND w.key = t.key AND t.n_back >= t.n_there
), kept AS (
  UPDATE {{errandParkWake}} w SET n = t.n - t.n_back FROM took t
  WHERE w.type = t.type AND w.key = t.key AND t.n_back < t.n_there AND t.n_back > 0
), n AS (
  SELECT pg_notify({{channel}}, $3) FROM (SELECT 1 FROM back WHERE $3::text IS NOT NULL LIMIT 1) AS r
)
SELECT (SELECT count(*) FROM back)::integer AS woken,
  (SELECT w.at FROM {{errandParkWake}} w
   WHERE w.at > $1 AND ($2::text[] IS NULL OR w.type = ANY($2::text[])) ORDER BY w.at LIMIT 1) AS next,
  (SELECT count(*) FROM n)::integer AS notified

-- name: claimCapped
WITH {{walkTypes}}, ranked AS (
  SELECT c.*, coalesce(
      row_number() OVER (PARTITION BY c.type ORDER BY c.priority DESC, c.run_at, c.id) > r.room, false
    ) AS skipped
  FROM cand c LEFT JOIN unnest($9::text[], $10::bigint[]) AS r(type, room) ON r.type = c.type
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
WITH RECURSIVE seen(queue, type) AS (
  SELECT q.name,
    (SELECT j.type FROM {{errandJob}} j WHERE j.queue = q.name AND j.state = 'pending' AND j.parked IS NULL ORDER BY j.type LIMIT 1)
  FROM unnest($7::text[]) AS q(name)
  WHERE $10::text[] IS NULL
  UNION ALL
  SELECT s.queue,
    (SELECT j.type FROM {{errandJob}} j
     WHERE j.queue = s.queue AND j.state = 'pending' AND j.parked IS NULL AND j.type > s.type ORDER BY j.type LIMIT 1)
  FROM seen s WHERE s.type IS NOT NULL
), types AS (
  SELECT queue, type FROM seen WHERE type IS NOT NULL
  UNION ALL
  SELECT q.name, t.type FROM unnest($7::text[]) AS q(name) CROSS JOIN unnest($10::text[]) AS t(type)
), ready AS (
  SELECT c.type, c.key FROM unnest($7::text[]) AS q(name)
  CROSS JOIN LATERAL (
    SELECT w.type, w.key FROM types t
    CROSS JOIN LATERAL (
      SELECT j.type, j.key, j.id, j.priority, j.run_at FROM {{errandJob}} j
      WHERE j.queue = q.name AND j.state = 'pending' AND j.parked IS NULL AND j.run_at <= $8
        AND NOT EXISTS (SELECT 1 FROM {{errandQueuePause}} WHERE name = q.name)
        AND (j.expires_at IS NULL OR j.expires_at > $8)
        AND j.type = t.type
      ORDER BY j.priority DESC, j.run_at, j.id
      LIMIT $9
    ) AS w
    WHERE t.queue = q.name
    ORDER BY w.priority DESC, w.run_at, w.id
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

-- name: queueTypes
WITH RECURSIVE seen(type) AS (
  SELECT (SELECT j.type FROM {{errandJob}} j WHERE j.queue = $1 AND j.state = 'pending' AND j.parked IS NULL ORDER BY j.type LIMIT 1)
  UNION ALL
  SELECT (SELECT j.type FROM {{errandJob}} j
          WHERE j.queue = $1 AND j.state = 'pending' AND j.parked IS NULL AND j.type > s.type ORDER BY j.type LIMIT 1)
  FROM seen s WHERE s.type IS NOT NULL
)
SELECT type FROM seen WHERE type IS NOT NULL
