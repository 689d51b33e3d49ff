-- stats: Store.stats(). Job counts by state, queue and type, plus the derived views.
--
-- Guarantees:
--   - statsHot: one row per (state, queue, type) of pending and active jobs, with how many of its
--     pending jobs are scheduled (run_at > now) or retrying (attempt > 0), and its oldest ready
--     run_at (pending, run_at <= now), for the store to add up.
--   - statsDone: one row per (state, queue, type) of finished jobs, from errand_done_count (kept
--     as the history changes, migration 12), not from the history's rows. Never a negative count:
--     an errand older than migration 12 still writing to the file completes jobs without counting
--     them, and a prune here then subtracts them; such a count shows as 0 (no row), not below.
-- Why: a GROUP BY scan of the hot table, small by design, rather than a count per state, queue and
-- type; the history's counts are kept.
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
SELECT state, queue, type, n FROM errand_done_count WHERE n > 0;
