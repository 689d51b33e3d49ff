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
--   - An UPDATE … FROM locks rows in whatever order its join visits them: two batches naming the
--     same jobs in different orders, from two workers or a worker and a completion, could each
--     hold a row the other waits for. `locked` probes each item's row by primary key in id order
--     (the column's collation, "C") and locks it there (LATERAL … LIMIT 1 … FOR UPDATE), and the
--     UPDATE touches only rows it holds. A row changed while it waited is re-checked against the
--     probe, and its state is read from the version locked: only active ones are extended.
--   - No clause on errand_job says `state = 'active'`, errand_job_lease's predicate, and rows are
--     found by primary key whatever the statistics: see completeMany.sql (stale statistics made
--     the planner scan every active job per item, and a heartbeat names every active job of its
--     worker).

-- $1 new lease expiry, $2 ids, $3 attempts.
-- Returns (id, attempt) of each lease extended.

-- name: heartbeatMany
WITH input AS (
  SELECT * FROM unnest($2::text[] COLLATE "C", $3::integer[]) AS i(id, attempt)
  ORDER BY id, attempt
), locked AS MATERIALIZED (
  SELECT j.id, j.state FROM input i CROSS JOIN LATERAL (
    SELECT j.id, j.state FROM {{errandJob}} j
    WHERE j.id = i.id AND j.attempt = i.attempt
    LIMIT 1
    FOR UPDATE
  ) AS j
)
UPDATE {{errandJob}} j SET lease_expires_at = $1
FROM locked l
WHERE j.id = l.id AND l.state = 'active'
RETURNING j.id, j.attempt
