-- claim: Store.claim(). Leases up to `limit` ready jobs to one worker, atomically.
--
-- Guarantees:
--   - One holder: the store runs these inside one BEGIN IMMEDIATE write transaction (the write
--     batcher), so no other connection can claim between reading candidates and activating them.
--   - Order: priority desc, then run_at, then id, within one queue, across the claim's types: the
--     candidates of k types are k claimArm walks, one per type, merged by one compound statement
--     (claim-walk.ts: `arm UNION ALL arm … ORDER BY priority DESC, runAt, id LIMIT $limit`).
--   - Jobs past their expires_at are passed over, left pending for expirePending to expire.
--   - Paused queues (errand_queue_pause) give nothing; their jobs stay pending.
--   - Cluster-wide caps and rate limits: claimActiveCounts counts active jobs of the capped types
--     once per claim; the store keeps the room left per type, and a type with none (at its cap, or
--     its rate-limit window full) gets no walk at all.
--   - Per-key rules (keyConcurrency, ordered; key-gate.ts): a keyed job of such a type is taken
--     only while its key has room and, under ordered, only as its key's earliest hot job; the rows
--     passed over go in $skip and keys with no room left in $xkeys, and the walk goes on.
-- Why:
--   - errand_job_claim is led by (queue, type): a type held back with a million ready jobs (by its
--     rate limit, its cap) costs a claim of another type nothing, as its range is never entered.
--     With a claim index led by queue alone every claim walked the held rows and filtered them (a
--     claim of the other type at 1,000,000 held ran at x0.05). A second index by type would have
--     done it too, at 8–14% more CPU per job (every insert and claim writes it); this one costs
--     the type's bytes in each entry.
--   - SQLite merges the arms of a compound SELECT … ORDER BY lazily (a MERGE of co-routines, each
--     walking its type's range in index order), so the statement reads $limit rows plus one per
--     arm, not $limit per type.
--   - A walk reads a type's range by priority band (claim-walk.ts): its highest priority, its
--     next, then the rest as one range, each a walk of its own merged with the others. Within one
--     priority the index is in run_at order, so `run_at <= $now` bounds the walk and it stops at
--     the first job not yet due; over a range of priorities it cannot, and a walk read every job
--     not yet due of every priority before the one it came to (beside 200,000 jobs scheduled an
--     hour ahead a claim that found 10 ready ones read them all: 10 ms inside the write lock,
--     18 µs by band). Jobs of a third priority and below are read as before.
--   - A claim that names no types (an HTTP lease without types) first lists the queue's pending
--     types (claimQueueTypes: a loose index scan, one probe per distinct type).
--   - The pause check names only $queue, not a column, so SQLite runs it once per statement as a
--     constant (one primary-key probe of a near-empty table) and skips the walk when the queue is
--     paused.
-- Weighted queues are split across queues by planClaim (src/store/claim-plan.ts), one
-- candidates statement per queue share. Candidates are read in raw mode (rows as arrays, in the
-- column order hotRecord() expects; the store checks claimArm's columns against it at open).
--
-- claimArm params (named):
--   $queue     the queue of this share
--   $type      one job type (claim-walk.ts numbers it $t0, $t1, … in a merged statement)
--   $now       epoch ms
--   $skip      JSON array of ids passed over for a per-key rule in this claim, or NULL
--   $xkeys     JSON array of [type, key] pairs with no room left in this claim, or NULL. Matched
--              as `(type, key) NOT IN (SELECT …)`, a subquery of nothing but the parameter, which
--              SQLite turns into an index once per statement, then one lookup a row (200,000 jobs of
--              a closed key passed in 68 ms, against 163 ms for a json_each scan a row). An earlier
--              `NOT EXISTS (SELECT 1 FROM json_each($xkeys) … = type …)` compared json_each's own
--              `type` and `key` columns: no key was ever left out, and each passed-over row cost
--              a walk of its own (O(n²) in a busy key's jobs ahead of the others).
-- and the merged statement's $limit: how many rows to read. Returns the pending fields, then
--   fair_turn (NULL but for a job of a fair type waiting for its turn): a row of a fair type with
--   a turn is a slot its turns fill (fair.ts), known without asking the table again per row.
-- claimBands params (named): $queue, $type. Returns (a, b): the highest and next priority of the
--   type's jobs in the claim index (NULL for none), due or not; claim-walk.ts makes it a CTE.
-- claimQueueTypes params: $queue. Returns the distinct types of its pending jobs not parked.
-- claimPark params (named): $type, $key, $now, $mark (1 keyConcurrency, 2 order), $keep (the one
--   job not to park: an ordered key's earliest, or ''). Parks the key's ready jobs, those not
--   parked yet alone (errand_job_key_order's range of them): migration 0010 says why and what
--   puts them back. At most 50,000 a claim (~0.3 s), so one claim's write stays short (200,000
--   at once took 1.2 s): a longer backlog is parked by the next claims that close the key.
-- Parked by a key's rate limit (migration 0011): claimParkWake params (named) $type, $key, $at (when
--   its window opens), $n (its limit): sets the key's wake, kept if sooner. claimParkedByRate
--   params: 1 type, 2 key: whether any of its jobs are parked by its rate limit. claimWakeDue
--   params (named): $now, $types (a JSON array, NULL: all): up to 100 keys whose window opened,
--   soonest first; claimWakeKey params (named) $type, $key, $n: puts back that many of the key's
--   jobs parked by its rate limit, in claim order; claimWakeForget params: 1 type, 2 key;
--   claimWakeNext params (named) $types: the soonest wake still set.
-- claimKeyActive params: 1 type. Returns (key, n): the running jobs of each of the type's keys,
--   read once per claim and type: errand_job_active_type is by type alone (a key's count would
--   walk the type's whole active set, once per key met; the set is bounded by the cluster's
--   concurrency, and an index by key would cost every claim and completion a write).
-- claimKeyEarliest params (named): $type, $key: its earliest job in the hot set, by (created_at, id),
--   which alone may start under `ordered`: the first of errand_job_key_order's three ranges of
--   the key (not parked, parked by keyConcurrency, parked by order; migration 0010).
-- claimActiveCounts params: 1 JSON array of the capped types this claim may take.
-- claimActivateMany params: 1 workerId, 2 leaseExpiresAt, 3 now (startedAt), 4 a JSON array of
--   ids: the claim's rows since its last read of the table, in one statement rather than one per
--   row (a statement's step, its binding and better-sqlite3's result object per job). The store
--   runs it before each walk and each read of fair turns, so no read of the claim sees a row it
--   took as pending; the key gate's own reads do not need it (sqlite-store.ts).
-- claimActivateTurnMany: claimActivateMany for jobs of fair types taken by their turns (fair.ts):
--   it also takes the turns away (fair_turn NULL, out of errand_job_fair). Kept apart from
--   claimActivateMany, which does not name fair_turn, so that SQLite leaves errand_job_fair out of
--   every other activation.
-- Rate limits (key-gate.ts; errand_rate_start, one row per start of a rate-limited scope, `type`
-- or `type|key`, kept until RATE_FORGET_LAG_MS after it left the window): rateStart 1 scope, 2 now;
-- rateForget 1 scope, 2 now − period − RATE_FORGET_LAG_MS (the starts long out of every window, so
-- a claim whose `now` is behind another's still counts what left only the other's window);
-- rateCount 1 scope, 2 now − period (the window's starts alone); rateLeaving
-- 1 scope, 2 now − period, 3 count − limit: the start whose leaving makes room.

-- name: claimArm
SELECT {{pendingFields}}, fair_turn
FROM errand_job INDEXED BY errand_job_claim
WHERE queue = $queue AND type = $type AND state = 'pending' AND parked IS NULL AND run_at <= $now
  AND NOT EXISTS (SELECT 1 FROM errand_queue_pause WHERE name = $queue)
  AND (expires_at IS NULL OR expires_at > $now)
  AND ($skip IS NULL OR id NOT IN (SELECT value FROM json_each($skip)))
  AND ($xkeys IS NULL OR key IS NULL
    OR (type, key) NOT IN (SELECT value ->> 0, value ->> 1 FROM json_each($xkeys)));

-- name: claimBands
SELECT a, (SELECT priority FROM errand_job INDEXED BY errand_job_claim
           WHERE queue = $queue AND type = $type AND state = 'pending' AND parked IS NULL AND priority < a
           ORDER BY priority DESC LIMIT 1) AS b
FROM (SELECT (SELECT priority FROM errand_job INDEXED BY errand_job_claim
              WHERE queue = $queue AND type = $type AND state = 'pending' AND parked IS NULL
              ORDER BY priority DESC LIMIT 1) AS a);

-- name: claimQueueTypes
WITH RECURSIVE t(type) AS (
  SELECT (SELECT type FROM errand_job INDEXED BY errand_job_claim
          WHERE queue = $queue AND state = 'pending' AND parked IS NULL ORDER BY type LIMIT 1)
  UNION ALL
  SELECT (SELECT j.type FROM errand_job AS j INDEXED BY errand_job_claim
          WHERE j.queue = $queue AND j.state = 'pending' AND j.parked IS NULL AND j.type > t.type
          ORDER BY j.type LIMIT 1)
  FROM t WHERE t.type IS NOT NULL
)
SELECT type FROM t WHERE type IS NOT NULL;

-- name: claimPark
UPDATE errand_job SET parked = $mark
WHERE rowid IN (
  SELECT rowid FROM errand_job INDEXED BY errand_job_key_order
  WHERE type = $type AND key = $key AND key IS NOT NULL AND parked IS NULL AND state = 'pending'
    AND run_at <= $now AND id <> $keep
  LIMIT 50000
);

-- name: claimParkWake
INSERT INTO errand_park_wake (type, key, at, n) VALUES ($type, $key, $at, $n)
ON CONFLICT (type, key) DO UPDATE SET at = min(at, excluded.at), n = excluded.n;

-- name: claimParkedByRate
SELECT 1 FROM errand_job INDEXED BY errand_job_parked_key
WHERE type = ? AND key = ? AND parked IS NOT NULL AND parked = 3
LIMIT 1;

-- name: claimWakeDue
SELECT type, key, n FROM errand_park_wake INDEXED BY errand_park_wake_at
WHERE at <= $now AND ($types IS NULL OR type IN (SELECT value FROM json_each($types)))
ORDER BY at
LIMIT 100;

-- name: claimWakeKey
UPDATE errand_job SET parked = NULL
WHERE rowid IN (
  SELECT rowid FROM errand_job INDEXED BY errand_job_parked_key
  WHERE type = $type AND key = $key AND parked IS NOT NULL AND parked = 3
  ORDER BY priority DESC, run_at, id
  LIMIT $n
);

-- name: claimWakeForget
DELETE FROM errand_park_wake WHERE type = ? AND key = ?;

-- name: claimWakeNext
SELECT at FROM errand_park_wake INDEXED BY errand_park_wake_at
WHERE $types IS NULL OR type IN (SELECT value FROM json_each($types))
ORDER BY at
LIMIT 1;

-- name: claimKeyActive
SELECT key, count(*) AS n FROM errand_job INDEXED BY errand_job_active_type
WHERE type = ? AND state = 'active' AND key IS NOT NULL
GROUP BY key;

-- name: claimKeyEarliest
SELECT id, state, runAt, queue, expiresAt FROM (
  SELECT * FROM (
    SELECT id, state, run_at AS runAt, queue, expires_at AS expiresAt, created_at
    FROM errand_job INDEXED BY errand_job_key_order
    WHERE type = $type AND key = $key AND key IS NOT NULL AND parked IS NULL ORDER BY created_at, id LIMIT 1)
  UNION ALL
  SELECT * FROM (
    SELECT id, state, run_at AS runAt, queue, expires_at AS expiresAt, created_at
    FROM errand_job INDEXED BY errand_job_key_order
    WHERE type = $type AND key = $key AND key IS NOT NULL AND parked = 1 ORDER BY created_at, id LIMIT 1)
  UNION ALL
  SELECT * FROM (
    SELECT id, state, run_at AS runAt, queue, expires_at AS expiresAt, created_at
    FROM errand_job INDEXED BY errand_job_key_order
    WHERE type = $type AND key = $key AND key IS NOT NULL AND parked = 2 ORDER BY created_at, id LIMIT 1)
)
ORDER BY created_at, id
LIMIT 1;

-- name: claimActiveCounts
SELECT type, count(*) AS n
FROM errand_job
WHERE state = 'active' AND type IN (SELECT value FROM json_each(?))
GROUP BY type;

-- name: claimActivateMany
UPDATE errand_job
SET state = 'active', attempt = attempt + 1, worker_id = ?, lease_expires_at = ?, started_at = ?
WHERE id IN (SELECT value FROM json_each(?));

-- name: claimActivateTurnMany
UPDATE errand_job
SET state = 'active', attempt = attempt + 1, worker_id = ?, lease_expires_at = ?, started_at = ?,
  fair_turn = NULL
WHERE id IN (SELECT value FROM json_each(?));

-- name: rateStart
INSERT INTO errand_rate_start (scope, at) VALUES (?, ?);

-- name: rateForget
DELETE FROM errand_rate_start WHERE scope = ? AND at <= ?;

-- name: rateCount
SELECT count(*) FROM errand_rate_start WHERE scope = ? AND at > ?;

-- name: rateLeaving
SELECT at FROM errand_rate_start WHERE scope = ? AND at > ? ORDER BY at LIMIT 1 OFFSET ?;
