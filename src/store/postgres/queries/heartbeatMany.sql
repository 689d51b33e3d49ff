-- heartbeatMany: Store.heartbeatMany(). Extends the leases of a batch of attempts in one statement.
--
-- Guarantees: compare-and-set per item: only the current attempt of an active job is extended; a
-- stale attempt (failed, released, reclaimed) changes nothing and is left out of the result. Every
-- lease in the batch gets the same new expiry.
--
-- Why: one statement for the batch, so a worker's heartbeats cost one round trip. The store runs
-- heartbeats in call order, since a late older one would shorten a lease.
--
-- $1 new lease expiry, $2 ids, $3 attempts.
-- Returns (id, attempt) of each lease extended.

-- name: heartbeatMany
UPDATE {{errandJob}} j SET lease_expires_at = $1
FROM unnest($2::text[], $3::integer[]) AS i(id, attempt)
WHERE j.id = i.id AND j.attempt = i.attempt AND j.state = 'active'
RETURNING j.id, j.attempt
