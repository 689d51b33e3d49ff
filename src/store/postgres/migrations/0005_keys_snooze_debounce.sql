-- errand PostgreSQL schema, version 5.
--
-- Keys, snoozes and debounce (issue 15). Every ADD COLUMN below is nullable or has a constant
-- default, so none rewrites the table.
--   key           both tables: the job's key (a tenant, an account), by which its type's per-key
--                 caps and order apply.
--   debounce_key  both tables: the key an enqueue debounces on. errand_job_debounce makes it
--                 unique among pending jobs never started (attempt 0): the one job a later enqueue
--                 with the key updates. A job leaves that index when first claimed, so the key is
--                 free again from then on; a concurrent enqueue that loses the race to insert it
--                 conflicts on the index and updates the winner instead (insert.ts).
--   snoozes       both tables: attempts the handler ended with ctx.snooze, which did not count.
--
-- The key indexes are partial on key IS NOT NULL, so jobs without a key (the common case) cost
-- nothing more. errand_job_key_order serves a claim's "earliest hot job of (type, key)" (ordered
-- types) and errand_job_key_active its count of a key's running jobs (keyConcurrency), which
-- would otherwise walk every pending job of the key.

ALTER TABLE errand_job ADD COLUMN key text COLLATE "C";
ALTER TABLE errand_job ADD COLUMN debounce_key text COLLATE "C";
ALTER TABLE errand_job ADD COLUMN snoozes integer NOT NULL DEFAULT 0;
ALTER TABLE errand_job_done ADD COLUMN key text COLLATE "C";
ALTER TABLE errand_job_done ADD COLUMN debounce_key text COLLATE "C";
ALTER TABLE errand_job_done ADD COLUMN snoozes integer NOT NULL DEFAULT 0;

CREATE UNIQUE INDEX errand_job_debounce ON errand_job (debounce_key)
  WHERE debounce_key IS NOT NULL AND state = 'pending' AND attempt = 0;
CREATE INDEX errand_job_key_order ON errand_job (type, key, created_at, id) WHERE key IS NOT NULL;
CREATE INDEX errand_job_key_active ON errand_job (type, key) WHERE key IS NOT NULL AND state = 'active';
