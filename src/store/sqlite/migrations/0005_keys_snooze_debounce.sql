-- errand SQLite schema, version 5.
--
-- Keys, snoozes and debounce (issue 15):
-- - key (both tables): the job's key (a tenant, an account), by which its type's per-key
--   caps, rate limits, fairness and order apply. errand_job_key_state counts a key's running jobs
--   of a type (keyConcurrency); errand_job_key_order finds its earliest job (ordered). Both are
--   partial, so jobs without a key cost nothing.
-- - debounce_key (both tables): the key an enqueue debounces on. errand_job_debounce makes it
--   unique among pending jobs never started (attempt 0): the one job a later enqueue with the key
--   replaces. A job leaves it when first claimed, so the key is free again from then on.
-- - snoozes (both tables): attempts the handler ended with ctx.snooze, which did not count.
-- Adding nullable columns, or one with a constant default, rewrites nothing.

ALTER TABLE errand_job ADD COLUMN key TEXT;
ALTER TABLE errand_job ADD COLUMN debounce_key TEXT;
ALTER TABLE errand_job ADD COLUMN snoozes INTEGER NOT NULL DEFAULT 0;
ALTER TABLE errand_job_done ADD COLUMN key TEXT;
ALTER TABLE errand_job_done ADD COLUMN debounce_key TEXT;
ALTER TABLE errand_job_done ADD COLUMN snoozes INTEGER NOT NULL DEFAULT 0;

CREATE UNIQUE INDEX errand_job_debounce ON errand_job (debounce_key)
  WHERE debounce_key IS NOT NULL AND state = 'pending' AND attempt = 0;
CREATE INDEX errand_job_key_state ON errand_job (type, key, state) WHERE key IS NOT NULL;
CREATE INDEX errand_job_key_order ON errand_job (type, key, created_at, id) WHERE key IS NOT NULL;
