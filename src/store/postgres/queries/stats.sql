-- stats: Store.stats(). Job counts by state, queue and type, plus the backlog's shape.
--
-- Guarantees: one statement, so one snapshot across the tables: a job moving between them is
-- counted once, and a delta being folded (foldDoneCounts) in exactly one of its two tables.
--
-- Why: grouped by (state, queue, type) so one scan serves every breakdown; the store sums the
-- groups. The finished jobs are counted from errand_done_count and errand_done_delta (migration
-- 12), kept by triggers as the history changes: a few rows per (queue, type, state) rather than
-- one per finished job. A group whose count has come back to 0 is left out, as it would be if
-- its rows were counted. Only pending jobs are scheduled (run_at in the future), retrying (attempt > 0) or ready
-- (the oldest ready run_at), so the blocked and finished groups report 0 and NULL for those: a
-- blocked job's run_at applies only once it is unblocked.
--
-- $1 now.
-- Returns (state, queue, type, n, scheduled, retrying, oldest) per group.

-- name: stats
SELECT state, queue, type, count(*) AS n,
  count(*) FILTER (WHERE state = 'pending' AND run_at > $1) AS scheduled,
  count(*) FILTER (WHERE state = 'pending' AND attempt > 0) AS retrying,
  min(run_at) FILTER (WHERE state = 'pending' AND run_at <= $1) AS oldest
FROM {{errandJob}} GROUP BY state, queue, type
UNION ALL
SELECT state, queue, type, sum(n)::bigint, 0, 0, NULL FROM (
  SELECT state, queue, type, n FROM {{errandDoneCount}}
  UNION ALL
  SELECT state, queue, type, n FROM {{errandDoneDelta}}
) AS d GROUP BY state, queue, type HAVING sum(n) <> 0
