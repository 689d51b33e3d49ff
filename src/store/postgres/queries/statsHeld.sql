-- statsHeld: Store.stats() with `limits`: what a type's held-back count and busiest keys are made
-- of (src/store/held-back.ts computes them; postgres/held-sample.ts runs these).
--
-- Guarantees:
--   - statsHeldReady reads at most $4 ready jobs (pending, due, not expired, queue not paused) of
--     each (type, queue) given, in claim order; the caller merges each type's queues and keeps the
--     first ones.
--   - statsHeldHeads: per (type, key) given, its earliest hot job (the only one `ordered` lets
--     start), as the claim's keyState finds it.
--   - statsHeldActive: the running jobs of the types given, per key.
--   - statsHeldStarts: per rate-limit scope given, its starts in the window (as rateCount counts,
--     without deleting anything: stats writes nothing).
-- Why: statsHeldReady walks errand_job_claim (queue, type, ...) from the type's first ready job in
-- the queue, in claim order, and errand_job_parked beside it (the jobs claims parked, migration
-- 0011, are out of the claim index), and stops after $4 rows of each, so a backlog of a million costs $4 rows,
-- whatever other types' jobs wait ahead of it; the pause check is one probe per (type, queue).
-- Running jobs come from errand_job_key_active (the active set: bounded by the cluster's
-- concurrency).
--
-- statsHeldReady: $1 types, $2 queues (pairs), $3 now, $4 limit. Returns (type, id, key, priority,
--   run_at).
-- statsHeldHeads: $1 types, $2 keys. Returns (type, key, first).
-- statsHeldActive: $1 types. Returns (type, key, n).
-- statsHeldStarts: $1 scopes, $2 now − each one's period. Returns (scope, n).

-- name: statsHeldReady
SELECT u.type, s.id, s.key, s.priority, s.run_at AS "runAt"
FROM unnest($1::text[], $2::text[]) AS u(type, queue)
CROSS JOIN LATERAL (
  SELECT m.id, m.key, m.priority, m.run_at FROM (
    (SELECT j.id, j.key, j.priority, j.run_at FROM {{errandJob}} j
    WHERE j.queue = u.queue AND j.state = 'pending' AND j.parked IS NULL AND j.run_at <= $3 AND j.type = u.type
      AND (j.expires_at IS NULL OR j.expires_at > $3)
      AND NOT EXISTS (SELECT 1 FROM {{errandQueuePause}} WHERE name = u.queue)
    ORDER BY j.priority DESC, j.run_at, j.id
    LIMIT $4)
    UNION ALL
    (SELECT j.id, j.key, j.priority, j.run_at FROM {{errandJob}} j
    WHERE j.queue = u.queue AND j.parked IS NOT NULL AND j.state = 'pending' AND j.run_at <= $3 AND j.type = u.type
      AND (j.expires_at IS NULL OR j.expires_at > $3)
      AND NOT EXISTS (SELECT 1 FROM {{errandQueuePause}} WHERE name = u.queue)
    ORDER BY j.priority DESC, j.run_at, j.id
    LIMIT $4)
  ) AS m
  ORDER BY m.priority DESC, m.run_at, m.id
  LIMIT $4
) AS s

-- name: statsHeldHeads
SELECT u.type, u.key,
  (SELECT f.id FROM {{errandJob}} f WHERE f.type = u.type AND f.key = u.key ORDER BY f.created_at, f.id LIMIT 1)
    AS first
FROM unnest($1::text[], $2::text[]) AS u(type, key)

-- name: statsHeldActive
SELECT type, key, count(*)::integer AS n FROM {{errandJob}}
WHERE state = 'active' AND key IS NOT NULL AND type = ANY($1::text[])
GROUP BY type, key

-- name: statsHeldStarts
SELECT u.scope,
  coalesce((SELECT sum(r.n) FROM {{errandRateStart}} r WHERE r.scope = u.scope AND r.at > u.since), 0)::integer
    AS n
FROM unnest($1::text[], $2::bigint[]) AS u(scope, since)
