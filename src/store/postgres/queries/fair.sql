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

-- fairClaimKeyed: the turn step of a claim share whose one open type, $8, is fair and has per-key
-- rules (keyConcurrency, ordered) and nothing that needs counting before the statement (no cap, no
-- rate limit, no key rate limit): claim.ts runs it instead of fairSlots, keyPeek and claimKeyed's
-- turn variant, one round trip for three. It counts the type's slots (fairSlots' count, for one
-- type), peeks at its first $3 turned jobs' keys (closed keys $9 left out of the window), hands
-- them to errand_key_room to be locked and counted (waiting, $11, or trying: claim.ts KeyRoom
-- says when), derives each key's room from the type's rules ($12 keyConcurrency, NULL: none; $13
-- ordered) as KeyRoom does, and leases up to `slots` turned jobs in turn order within those rooms.
--   Why one statement is enough: the counts are read by errand_key_room's own statement, after its
-- locks (migration 0009); this statement's older snapshot only decides which rows it tries, and
-- FOR UPDATE re-reads a row changed since (a job another claimer leased is passed over). The
-- function runs once, before any row is locked: `open` is read by the first candidate's filter
-- and kept (as two hashed sets: a key whose jobs may start, or, under `ordered`, the one job).
-- With $14, the statement is its own transaction (claim.ts claimFairKeyedAlone) and moves the
-- type's turn itself (`adv`, its last lock); without, the claim runs fairAdvance at its commit,
-- as that must come last.
--   $1-$7 as claim; $8 the type; $9 closed keys; $10 KEY_LOCK; $14 advance the turn here. Returns claim's rows and flags, and
-- on the flags' row: `slots`, `closed` (the keys without room left: not locked, or their room
-- taken), `seen` (the keys peeked at), `parkable` (the locked keys without room left that had
-- more of the window's jobs than the statement took: claim.ts parks them, migration 0011).

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
    WHERE j.queue = $1 AND j.state = 'pending' AND j.parked IS NULL AND j.run_at <= $2
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

-- name: fairClaimKeyed
WITH slots AS (
  SELECT count(*)::integer AS n FROM (
    SELECT j.fair_turn FROM {{errandJob}} j
    WHERE j.queue = $1 AND j.state = 'pending' AND j.parked IS NULL AND j.run_at <= $2
      AND NOT EXISTS (SELECT 1 FROM {{errandQueuePause}} WHERE name = $1)
      AND (j.expires_at IS NULL OR j.expires_at > $2)
      AND j.type = $8::text
    ORDER BY j.priority DESC, j.run_at, j.id
    LIMIT $3
  ) AS w
  WHERE w.fair_turn IS NOT NULL
), seen AS (
  SELECT w.key, count(*)::integer AS n FROM (
    SELECT j.key FROM {{errandJob}} j
    WHERE j.queue = $1 AND j.state = 'pending' AND j.parked IS NULL AND j.run_at <= $2
      AND NOT EXISTS (SELECT 1 FROM {{errandQueuePause}} WHERE name = $1)
      AND (j.expires_at IS NULL OR j.expires_at > $2)
      AND j.type = $8::text AND j.fair_turn IS NOT NULL
      AND (j.key IS NULL OR j.key <> ALL($9::text[]))
    ORDER BY j.priority DESC, j.fair_turn, j.run_at, j.id
    LIMIT $3
  ) AS w
  WHERE w.key IS NOT NULL
  GROUP BY w.key
), open AS (
  SELECT r.key, r.ok, r.first,
    CASE
      WHEN NOT r.ok OR ($13::boolean AND (r.first IS NULL OR r.active > 0)) THEN 0
      ELSE least(coalesce($12::integer - r.active, 2147483647), CASE WHEN $13::boolean THEN 1 ELSE 2147483647 END)
    END AS room
  FROM {{errandKeyRoom}}($10::integer, {{channel}}, $11::boolean,
    ARRAY(SELECT $8::text FROM seen), ARRAY(SELECT key FROM seen ORDER BY key),
    CASE WHEN $13::boolean THEN ARRAY[$8::text] ELSE ARRAY[]::text[] END) AS r
), cand AS (
  SELECT j.id, j.key, j.priority, j.fair_turn, j.run_at, least(j.weight, coalesce($4::bigint, j.weight)) AS w
  FROM {{errandJob}} j
  WHERE j.queue = $1 AND j.state = 'pending' AND j.parked IS NULL AND j.run_at <= $2
    AND NOT EXISTS (SELECT 1 FROM {{errandQueuePause}} WHERE name = $1)
    AND (j.expires_at IS NULL OR j.expires_at > $2)
    AND j.type = $8::text AND j.fair_turn IS NOT NULL
    AND (j.key IS NULL OR j.key IN (SELECT key FROM open WHERE room > 0 AND first IS NULL)
      OR j.id IN (SELECT first FROM open WHERE room > 0))
  ORDER BY j.priority DESC, j.fair_turn, j.run_at, j.id
  LIMIT (SELECT n FROM slots)
  FOR UPDATE OF j SKIP LOCKED
), ranked AS (
  SELECT c.*, coalesce(
      row_number() OVER (PARTITION BY c.key ORDER BY c.priority DESC, c.fair_turn, c.run_at, c.id) > o.room, false
    ) AS skipped
  FROM cand c LEFT JOIN open o ON o.key = c.key
), fits AS (
  SELECT id, skipped, sum(CASE WHEN skipped THEN 0 ELSE w END)
    OVER (ORDER BY priority DESC, fair_turn, run_at, id ROWS UNBOUNDED PRECEDING) AS used
  FROM ranked
), {{leaseFits}}, adv AS (
  INSERT INTO {{errandFairType}} AS t (type, turn)
  SELECT $8::text, max(c.fair_turn) FROM cand c WHERE $14::boolean AND c.id IN (SELECT id FROM upd)
  HAVING count(*) > 0
  ON CONFLICT (type) DO UPDATE SET turn = greatest(t.turn, excluded.turn)
)
SELECT *, NULL::boolean AS overflow, NULL::boolean AS skipped,
  NULL::integer AS slots, NULL::text[] AS closed, NULL::text[] AS seen, NULL::text[] AS parkable
FROM upd
UNION ALL
SELECT {{claimedNulls}},
  coalesce(bool_or(NOT skipped AND $5::bigint IS NOT NULL AND used > $5), false),
  coalesce(bool_or(skipped), false),
  (SELECT n FROM slots),
  ARRAY(
    SELECT o.key FROM open o LEFT JOIN (SELECT key, count(*) AS n FROM upd GROUP BY key) AS t ON t.key = o.key
    WHERE o.room <= coalesce(t.n, 0)
  ),
  ARRAY(SELECT key FROM seen),
  ARRAY(
    SELECT s.key FROM seen s JOIN open o ON o.key = s.key
    LEFT JOIN (SELECT key, count(*) AS n FROM upd GROUP BY key) AS t ON t.key = s.key
    WHERE o.ok AND o.room <= coalesce(t.n, 0) AND s.n > coalesce(t.n, 0)
  )
FROM fits
