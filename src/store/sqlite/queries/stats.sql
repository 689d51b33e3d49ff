-- stats: Store.stats(). Job counts by state, queue and type, plus the derived views.
--
-- Guarantees:
--   - statsHot: one row per (state, queue, type) of pending and active jobs, with how many of its
--     pending jobs are scheduled (run_at > now) or retrying (attempt > 0), and its oldest ready
--     run_at (pending, run_at <= now), for the store to add up.
--   - statsDone: one row per (state, queue, type) of finished jobs.
-- Why: two GROUP BY scans, one per table, rather than a count per state, queue and type; the hot
-- table is small by design, and the done table's scan reads no payloads.
--
-- statsHot params (named): $now epoch ms. statsDone: none.

-- name: statsHot
SELECT state, queue, type, count(*) AS n,
  sum(state = 'pending' AND run_at > $now) AS scheduled,
  sum(state = 'pending' AND attempt > 0) AS retrying,
  min(CASE WHEN state = 'pending' AND run_at <= $now THEN run_at END) AS oldest
FROM errand_job
GROUP BY state, queue, type;

-- name: statsDone
SELECT state, queue, type, count(*) AS n FROM errand_job_done GROUP BY state, queue, type;
