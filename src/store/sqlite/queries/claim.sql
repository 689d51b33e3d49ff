-- claim: Store.claim(). Leases up to `limit` ready jobs to one worker, atomically.
--
-- Guarantees:
--   - One holder: the store runs these inside one BEGIN IMMEDIATE write transaction (the write
--     batcher), so no other connection can claim between claimCandidates and claimActivate.
--   - Order: priority desc, then run_at, then id, within one queue (errand_job_claim serves it:
--     a walk of (queue, priority DESC, run_at, id) over pending rows, stopping after $limit).
--   - Jobs past their expires_at are passed over, left pending for expirePending to expire.
--   - Paused queues (errand_queue_pause) give nothing; their jobs stay pending.
--   - Cluster-wide caps: claimActiveCounts counts active jobs of the capped types once per claim;
--     the store keeps the room left per type and passes the exhausted ones to claimCandidates.
--   - Per-key rules (keyConcurrency, ordered; key-gate.ts): a keyed job of such a type is taken
--     only while its key has room and, under ordered, only as its key's earliest hot job; the rows
--     passed over go in $skip and keys with no room left in $xkeys, and the walk goes on.
-- Why: the pause check names only $queue, not a column, so SQLite runs it once per statement as a
-- constant (one primary-key probe of a near-empty table) and skips the walk when the queue is paused.
-- The type and cap filters are `$x IS NULL OR …` so one statement serves every claim while
-- keeping the claim index as the only index walked: a NULL parameter skips its subquery, and a
-- type filter is a residual check on index rows either way (no index on type for pending rows).
-- Weighted queues are split across queues by planClaim (src/store/claim-plan.ts), one
-- claimCandidates per queue share. claimCandidates runs in raw mode (rows as arrays, in the
-- column order hotRecord() expects; the store checks the columns against it at open).
--
-- claimCandidates params (named):
--   $queue     the queue of this share
--   $now       epoch ms
--   $types     JSON array of the job types this worker handles, or NULL for any type
--   $excluded  JSON array of the capped types with no room left, or NULL for none
--   $skip      JSON array of ids passed over for a per-key rule in this claim, or NULL
--   $xkeys     JSON array of [type, key] pairs with no room left in this claim, or NULL
--   $limit     how many rows to read
-- claimKeyActive params: 1 type, 2 key: its running jobs (errand_job_active_type: the active
--   set is bounded by the cluster's concurrency).
-- claimKeyEarliest params: 1 type, 2 key: its earliest job in the hot set, by (created_at, id)
--   (errand_job_key_order), which alone may start under `ordered`.
-- claimActiveCounts params: 1 JSON array of the capped types this claim may take.
-- claimActivate params: 1 workerId, 2 leaseExpiresAt, 3 now (startedAt), 4 id.
-- Rate limits (key-gate.ts; errand_rate_start, one row per start of a rate-limited scope, `type`
-- or `type|key`, kept until RATE_FORGET_LAG_MS after it left the window): rateStart 1 scope, 2 now;
-- rateForget 1 scope, 2 now − period − RATE_FORGET_LAG_MS (the starts long out of every window, so
-- a claim whose `now` is behind another's still counts what left only the other's window);
-- rateCount 1 scope, 2 now − period (the window's starts alone); rateLeaving
-- 1 scope, 2 now − period, 3 count − limit: the start whose leaving makes room.

-- name: claimCandidates
SELECT {{pendingFields}}
FROM errand_job
WHERE queue = $queue AND state = 'pending' AND run_at <= $now
  AND NOT EXISTS (SELECT 1 FROM errand_queue_pause WHERE name = $queue)
  AND (expires_at IS NULL OR expires_at > $now)
  AND ($types IS NULL OR type IN (SELECT value FROM json_each($types)))
  AND ($excluded IS NULL OR type NOT IN (SELECT value FROM json_each($excluded)))
  AND ($skip IS NULL OR id NOT IN (SELECT value FROM json_each($skip)))
  AND ($xkeys IS NULL OR key IS NULL
    OR NOT EXISTS (SELECT 1 FROM json_each($xkeys) AS x
                   WHERE x.value ->> 0 = type AND x.value ->> 1 = key))
ORDER BY priority DESC, run_at, id
LIMIT $limit;

-- name: claimKeyActive
SELECT count(*) FROM errand_job INDEXED BY errand_job_active_type
WHERE type = ? AND state = 'active' AND key = ?;

-- name: claimKeyEarliest
SELECT id, state, run_at AS runAt, queue, expires_at AS expiresAt FROM errand_job
WHERE type = ? AND key = ?
ORDER BY created_at, id
LIMIT 1;

-- name: claimActiveCounts
SELECT type, count(*) AS n
FROM errand_job
WHERE state = 'active' AND type IN (SELECT value FROM json_each(?))
GROUP BY type;

-- name: claimActivate
UPDATE errand_job
SET state = 'active', attempt = attempt + 1, worker_id = ?, lease_expires_at = ?, started_at = ?
WHERE id = ?;

-- name: rateStart
INSERT INTO errand_rate_start (scope, at) VALUES (?, ?);

-- name: rateForget
DELETE FROM errand_rate_start WHERE scope = ? AND at <= ?;

-- name: rateCount
SELECT count(*) FROM errand_rate_start WHERE scope = ? AND at > ?;

-- name: rateLeaving
SELECT at FROM errand_rate_start WHERE scope = ? AND at > ? ORDER BY at LIMIT 1 OFFSET ?;
