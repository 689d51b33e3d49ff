-- claim: Store.claim(). Leases ready jobs to one worker; the store runs one claim statement per
-- queue share (see planClaimAsync), after lockCaps and countActive when types are capped.
--
-- Guarantees:
--   - One holder: a job is locked (FOR UPDATE SKIP LOCKED) and leased (state active, attempt + 1,
--     worker, lease, startedAt) by the same statement, so no two claimers take it, and neither
--     waits on rows the other holds.
--   - Order: priority desc, then run_at, then id. Jobs past their expires_at are passed over (left
--     for expirePending).
--   - Weight: jobs are leased in order while their weights, each capped at $4, fit the budget $5;
--     the first that does not fit ends the claim (as in every store).
--   - Paused queues ({{errandQueuePause}}) give nothing; their jobs stay pending.
--   - Cluster-wide caps: lockCaps takes a transaction-scoped advisory lock per capped type before
--     countActive counts its active jobs, so no two claimers see the same free room; claimCapped
--     then leases at most the room left per type.
--
-- Why:
--   - The pause check names only $1, not a column of the job row, so the planner makes it a
--     one-time filter (an InitPlan: one primary-key probe of a near-empty table per statement) and
--     skips the index walk entirely when the queue is paused.
--   - `cand` locks at most $3 rows in claim order; `fits` keeps the prefix that fits the budget;
--     `upd` leases them. One statement, so one queue share with no caps needs no transaction.
--   - A last row, all NULL but for two flags, reports whether a job did not fit (`overflow`: the
--     claim is full) and whether jobs of a type at its cap were passed over (`skipped`: the store
--     looks again with that type excluded in $9). claimCapped differs from claim only in `ranked`,
--     which marks the jobs beyond their type's room as skipped.
--   - Rows come back as arrays in the order of {{hotFieldsJ}} (the hot fields, each qualified by the
--     alias j, which UPDATE ... FROM needs): hotRecord reads them by position.
--   - The advisory locks are taken in type order (no deadlock between two claimers), keyed by the
--     channel name (one per schema) and the type, so installations in other schemas do not contend.
--   - Row locks: `cand` takes them in claim order, not in the id order the statements that wait
--     for row locks keep (heartbeatMany, completeMany, failMany), and needs no other: SKIP LOCKED
--     never waits for a row, so a claim cannot be one of two statements each waiting for the
--     other. In a claim's transaction the advisory locks come first, before any row lock.
--
-- lockCaps: $1 lock key (CAP_LOCK), $2 capped types.
-- countActive: $1 capped types. Returns (type, n) for types with active jobs.
-- claim, claimCapped: $1 queue, $2 now, $3 limit, $4 weight cap (NULL: none), $5 budget (NULL:
--   none), $6 worker id, $7 lease expiry, $8 types (NULL: all), $9 types at their cap (NULL:
--   none); claimCapped also $10 capped types with room, $11 the room left for each.

-- name: lockCaps
SELECT pg_advisory_xact_lock($1::integer, hashtext({{channel}} || t))
FROM (SELECT t FROM unnest($2::text[]) AS t ORDER BY t) AS sorted

-- name: countActive
SELECT type, count(*) AS n FROM {{errandJob}}
WHERE state = 'active' AND type = ANY($1::text[]) GROUP BY type

-- name: claim
WITH cand AS (
  SELECT id, type, priority, run_at, least(weight, coalesce($4::bigint, weight)) AS w
  FROM {{errandJob}}
  WHERE queue = $1 AND state = 'pending' AND run_at <= $2
    AND NOT EXISTS (SELECT 1 FROM {{errandQueuePause}} WHERE name = $1)
    AND (expires_at IS NULL OR expires_at > $2)
    AND ($8::text[] IS NULL OR type = ANY($8::text[]))
    AND ($9::text[] IS NULL OR type <> ALL($9::text[]))
  ORDER BY priority DESC, run_at, id
  LIMIT $3
  FOR UPDATE SKIP LOCKED
), fits AS (
  SELECT id, false AS skipped, sum(w) OVER (ORDER BY priority DESC, run_at, id ROWS UNBOUNDED PRECEDING) AS used
  FROM cand
), upd AS (
  UPDATE {{errandJob}} j
  SET state = 'active', attempt = j.attempt + 1, worker_id = $6, lease_expires_at = $7, started_at = $2
  FROM fits f
  WHERE j.id = f.id AND NOT f.skipped AND ($5::bigint IS NULL OR f.used <= $5)
  RETURNING {{hotFieldsJ}}
)
SELECT *, NULL::boolean AS overflow, NULL::boolean AS skipped FROM upd
UNION ALL
SELECT NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
  NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
  coalesce(bool_or(NOT skipped AND $5::bigint IS NOT NULL AND used > $5), false),
  coalesce(bool_or(skipped), false)
FROM fits

-- name: claimCapped
WITH cand AS (
  SELECT id, type, priority, run_at, least(weight, coalesce($4::bigint, weight)) AS w
  FROM {{errandJob}}
  WHERE queue = $1 AND state = 'pending' AND run_at <= $2
    AND NOT EXISTS (SELECT 1 FROM {{errandQueuePause}} WHERE name = $1)
    AND (expires_at IS NULL OR expires_at > $2)
    AND ($8::text[] IS NULL OR type = ANY($8::text[]))
    AND ($9::text[] IS NULL OR type <> ALL($9::text[]))
  ORDER BY priority DESC, run_at, id
  LIMIT $3
  FOR UPDATE SKIP LOCKED
), ranked AS (
  SELECT c.*, coalesce(
      row_number() OVER (PARTITION BY c.type ORDER BY c.priority DESC, c.run_at, c.id) > r.room, false
    ) AS skipped
  FROM cand c LEFT JOIN unnest($10::text[], $11::bigint[]) AS r(type, room) ON r.type = c.type
), fits AS (
  SELECT id, skipped, sum(CASE WHEN skipped THEN 0 ELSE w END)
    OVER (ORDER BY priority DESC, run_at, id ROWS UNBOUNDED PRECEDING) AS used
  FROM ranked
), upd AS (
  UPDATE {{errandJob}} j
  SET state = 'active', attempt = j.attempt + 1, worker_id = $6, lease_expires_at = $7, started_at = $2
  FROM fits f
  WHERE j.id = f.id AND NOT f.skipped AND ($5::bigint IS NULL OR f.used <= $5)
  RETURNING {{hotFieldsJ}}
)
SELECT *, NULL::boolean AS overflow, NULL::boolean AS skipped FROM upd
UNION ALL
SELECT NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
  NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
  coalesce(bool_or(NOT skipped AND $5::bigint IS NOT NULL AND used > $5), false),
  coalesce(bool_or(skipped), false)
FROM fits
