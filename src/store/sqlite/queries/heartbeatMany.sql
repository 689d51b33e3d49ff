-- heartbeatMany: Store.heartbeatMany(). Extends each item's lease to now + leaseMs.
--
-- Guarantees:
--   - Fencing: only while the job is active under the item's attempt; a stale item changes
--     nothing and the store reports false for it.
-- Why: one primary-key UPDATE per item, all in one write transaction, so a worker's heartbeats
-- for all its jobs cost one commit.
--
-- Params: 1 leaseExpiresAt (now + leaseMs), 2 id, 3 attempt.

-- name: heartbeat
UPDATE errand_job SET lease_expires_at = ? WHERE id = ? AND attempt = ? AND state = 'active';
