-- heartbeatMany: Store.heartbeatMany(). Extends the leases of a batch of attempts in one statement.
--
-- Guarantees:
--   - Compare-and-set per item: only the current attempt of an active job is extended; a stale
--     attempt (failed, released, reclaimed) changes nothing and is left out of the result. Every
--     lease in the batch gets the same new expiry.
--   - Row locks are taken in id order, as by every statement that locks several jobs and waits
--     (completeMany, failMany), so two of them never deadlock (40P01).
--
-- Why:
--   - One statement for the batch, so a worker's heartbeats cost one round trip. The store runs
--     heartbeats in call order, since a late older one would shorten a lease.
--   - An UPDATE … FROM locks rows in whatever order its join visits them (the order of $2 under a
--     nested loop): two batches naming the same jobs in different orders, from two workers or a
--     worker and a completion, could each hold a row the other waits for. `locked` takes the
--     locks first, sorted by id (FOR UPDATE sits above the sort), and the UPDATE touches only rows
--     it holds. A row changed while it waited is re-checked against the WHERE clause.
--
-- $1 new lease expiry, $2 ids, $3 attempts.
-- Returns (id, attempt) of each lease extended.

-- name: heartbeatMany
WITH locked AS MATERIALIZED (
  SELECT j.id FROM {{errandJob}} j
  JOIN unnest($2::text[], $3::integer[]) AS i(id, attempt) ON j.id = i.id AND j.attempt = i.attempt
  WHERE j.state = 'active'
  ORDER BY j.id
  FOR UPDATE OF j
)
UPDATE {{errandJob}} j SET lease_expires_at = $1
FROM locked l
WHERE j.id = l.id AND j.state = 'active'
RETURNING j.id, j.attempt
