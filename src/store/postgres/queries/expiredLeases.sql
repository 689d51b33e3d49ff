-- expiredLeases: Store.expiredLeases(). Active jobs whose lease has run out, for the sweeper.
--
-- Guarantees: reads only, the longest-expired first, at most $2. The sweeper fails each through
-- failMany with the lease-expired flag, which re-checks the lease, so a heartbeat arriving in
-- between wins.
--
-- Why: a read, not a claim of the rows: any number of sweepers may look, and failMany's
-- compare-and-set settles who acts. It takes no row locks; failMany takes them, in id order.
--
-- $1 now, $2 limit.
-- Returns JobRecords.

-- name: expiredLeases
SELECT {{hotFields}} FROM {{errandJob}} WHERE state = 'active' AND lease_expires_at <= $1
ORDER BY lease_expires_at LIMIT $2
