-- errand SQLite schema, version 5.
--
-- Keys, snoozes and debounce (issue 15):
-- - key (both tables): the job's key (a tenant, an account), by which its type's per-key
--   caps, rate limits, fairness and order apply. errand_job_key_order finds a key's earliest
--   job (ordered); a key's running jobs are counted through errand_job_active_type (the active
--   set is bounded by the cluster's concurrency), so no index of claim-changed columns is added.
-- - debounce_key (both tables): the key an enqueue debounces on; the pending, never started job
--   (attempt 0) holding it is the one a later enqueue with the key replaces. One writer makes it
--   unique among those (enqueueMany looks before it inserts, in the same transaction), so
--   errand_job_debounce needs no unique or state condition, and the claim's UPDATE of state and
--   attempt leaves it alone (SQLite skips an index whose columns and condition an UPDATE does
--   not touch).
-- - snoozes (both tables): attempts the handler ended with ctx.snooze, which did not count.
-- Adding nullable columns, or one with a constant default, rewrites nothing.

ALTER TABLE errand_job ADD COLUMN key TEXT;
ALTER TABLE errand_job ADD COLUMN debounce_key TEXT;
ALTER TABLE errand_job ADD COLUMN snoozes INTEGER NOT NULL DEFAULT 0;
ALTER TABLE errand_job_done ADD COLUMN key TEXT;
ALTER TABLE errand_job_done ADD COLUMN debounce_key TEXT;
ALTER TABLE errand_job_done ADD COLUMN snoozes INTEGER NOT NULL DEFAULT 0;

CREATE INDEX errand_job_debounce ON errand_job (debounce_key) WHERE debounce_key IS NOT NULL;
CREATE INDEX errand_job_key_order ON errand_job (type, key, created_at, id) WHERE key IS NOT NULL;
