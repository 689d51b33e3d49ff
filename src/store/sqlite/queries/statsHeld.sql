-- statsHeld: Store.stats() with `limits`: what a type's held-back count and busiest keys are made
-- of (src/store/held-back.ts computes them; sqlite/held-sample.ts runs these).
--
-- Guarantees:
--   - statsHeldReady reads at most $limit ready jobs (pending, due, not expired) of one type in one
--     queue, in claim order; the caller merges the queues' lists and keeps the first ones.
--   - statsHeldActive: a type's running jobs per key.
-- Why: statsHeldReady walks the type's range of the claim index (queue, type, priority DESC,
-- run_at, id) in claim order and stops after $limit rows, so one type's backlog of a million costs
-- $limit rows, not a million, and other types' backlogs cost nothing. Keys' running jobs come from errand_job_active_type (the
-- active set, bounded by the cluster's concurrency); a key's earliest hot job and a window's
-- starts are the claim's own statements (claimKeyEarliest, rateCount), read-only.
--
-- statsHeldReady params (named): $queue, $type, $now epoch ms, $limit. statsHeldParked: the same
--   for the type's parked jobs (migration 0010), which the claim index does not hold; the caller
--   merges them in claim order.
-- statsHeldActive params: 1 type. Returns (key, n).

-- name: statsHeldReady
SELECT id, key, priority, run_at AS runAt
FROM errand_job INDEXED BY errand_job_claim
WHERE queue = $queue AND state = 'pending' AND parked IS NULL AND run_at <= $now AND type = $type
  AND (expires_at IS NULL OR expires_at > $now)
ORDER BY priority DESC, run_at, id
LIMIT $limit;

-- name: statsHeldParked
SELECT id, key, priority, run_at AS runAt
FROM errand_job INDEXED BY errand_job_parked
WHERE queue = $queue AND type = $type AND parked IS NOT NULL AND state = 'pending' AND run_at <= $now
  AND (expires_at IS NULL OR expires_at > $now)
ORDER BY priority DESC, run_at, id
LIMIT $limit;

-- name: statsHeldActive
SELECT key, count(*) AS n FROM errand_job INDEXED BY errand_job_active_type
WHERE type = ? AND state = 'active' AND key IS NOT NULL
GROUP BY key;
