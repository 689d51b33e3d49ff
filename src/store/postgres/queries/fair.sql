-- fair: turns of fair types in PostgreSQL (KeyRules.fair, EnqueueManyParams.fairTypes;
-- migrations/0007_fair.sql), used by enqueueMany (postgres-store.ts) and claim (claim.ts, fair.ts).
--
-- Guarantees:
--   - fairAssign gives each new job of a fair type its turn, max(its key's next, the type's turn
--     now) plus its place among the batch's jobs of the key, and moves the key's next past them, in
--     the enqueue's transaction (so no claim sees the jobs without their turns).
--   - fairSlots reads, without locking, the next $3 candidates of a queue share in the usual claim
--     order (each open type's first $3, merged, as claim.sql's peek) and counts those of each fair
--     type that have a turn: the slots the claim gives the type, filled by the turn-ordered
--     variants of the claim statements (fair.ts).
--   - fairAdvance moves a type's turn up to the highest a claim took (never down).
-- Why: two enqueues of one key at once may give the same turns; ties go by run_at, then id, and a
-- turn too many or too few is a small unfairness, not a lost job: no lock is taken for them.
--
-- fairAssign: $1 ids, $2 types, $3 keys ('' for none), in enqueue order. fairSlots: $1 queue,
--   $2 now, $3 limit, $4 the claim's open types (claim.sql), $5 fair types; returns (type, n). fairAdvance: $1 the ids the claim took.

-- name: fairAssign
WITH u AS (
  SELECT * FROM unnest($1::text[], $2::text[], $3::text[]) WITH ORDINALITY AS u(id, type, key, n)
), start AS (
  SELECT g.type, g.key, greatest(coalesce(k.next, 0), coalesce(t.turn, 0)) AS first
  FROM (SELECT DISTINCT type, key FROM u) AS g
  LEFT JOIN {{errandFairKey}} k ON k.type = g.type AND k.key = g.key
  LEFT JOIN {{errandFairType}} t ON t.type = g.type
), turns AS (
  SELECT u.id, u.type, u.key, s.first + row_number() OVER (PARTITION BY u.type, u.key ORDER BY u.n) - 1 AS turn
  FROM u JOIN start s ON s.type = u.type AND s.key = u.key
), upd AS (
  UPDATE {{errandJob}} j SET fair_turn = t.turn FROM turns t WHERE j.id = t.id
)
INSERT INTO {{errandFairKey}} AS k (type, key, next)
SELECT type, key, max(turn) + 1 FROM turns GROUP BY type, key
ON CONFLICT (type, key) DO UPDATE SET next = greatest(k.next, excluded.next)

-- name: fairSlots
SELECT c.type, count(*)::integer AS n FROM (
  SELECT w.type, w.fair_turn FROM unnest($4::text[]) AS t(type)
  CROSS JOIN LATERAL (
    SELECT j.type, j.fair_turn, j.id, j.priority, j.run_at FROM {{errandJob}} j
    WHERE j.queue = $1 AND j.state = 'pending' AND j.run_at <= $2
      AND NOT EXISTS (SELECT 1 FROM {{errandQueuePause}} WHERE name = $1)
      AND (j.expires_at IS NULL OR j.expires_at > $2)
      AND j.type = t.type
    ORDER BY j.priority DESC, j.run_at, j.id
    LIMIT $3
  ) AS w
  ORDER BY w.priority DESC, w.run_at, w.id
  LIMIT $3
) AS c
WHERE c.fair_turn IS NOT NULL AND c.type = ANY($5::text[])
GROUP BY c.type

-- name: fairAdvance
INSERT INTO {{errandFairType}} AS t (type, turn)
SELECT type, max(fair_turn) FROM {{errandJob}}
WHERE id = ANY($1::text[]) AND fair_turn IS NOT NULL
GROUP BY type
ON CONFLICT (type) DO UPDATE SET turn = greatest(t.turn, excluded.turn)
