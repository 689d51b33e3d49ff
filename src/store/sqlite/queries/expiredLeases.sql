-- expiredLeases: Store.expiredLeases(). Active jobs whose lease ran out, oldest expiry first, for
-- the lease sweeper to fail (failMany with leaseExpired). Reads only; changes nothing.
--
-- Guarantees:
--   - At most `limit` jobs, in lease_expires_at order; records in JobRecord's key order
--     (checked at open).
-- Why: errand_job_lease (lease_expires_at, partial on state = 'active') serves both the filter
-- and the order, so the sweeper reads only the expired leases.
--
-- Params: 1 now, 2 limit.

-- name: expiredLeases
SELECT {{hotFields}}
FROM errand_job
WHERE state = 'active' AND lease_expires_at <= ?
ORDER BY lease_expires_at
LIMIT ?;
