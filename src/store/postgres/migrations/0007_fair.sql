-- errand PostgreSQL schema, version 7.
--
-- Fair types (a type's `fair: true`, issue 15): keys take turns. Start-time fair queuing: a job of
-- a fair type gets a turn number when enqueued, max(its key's next turn, the type's turn now), and
-- its key's next turn is one more; a claim gives the slots the usual order gives a fair type to
-- the type's ready jobs of the lowest turns (at the highest priority), and moves the type's turn
-- up to the highest it took. A key that enqueues late so starts level with the keys waiting.
-- - fair_turn (hot table only): the job's turn; NULL for jobs of types that are not fair, so
--   errand_job_fair, partial on it, costs them nothing. A move to the done table drops it.
-- - errand_fair_type: a fair type's turn now. errand_fair_key: a key's next turn, per fair type;
--   jobs without a key are one group, key '' (a key is a name, never empty).
-- Adding a nullable column rewrites nothing.

ALTER TABLE errand_job ADD COLUMN fair_turn bigint;

CREATE INDEX errand_job_fair ON errand_job (queue, type, priority DESC, fair_turn, run_at, id)
  WHERE state = 'pending' AND fair_turn IS NOT NULL;

CREATE TABLE errand_fair_type (
  type text COLLATE "C" PRIMARY KEY,
  turn bigint NOT NULL
);

CREATE TABLE errand_fair_key (
  type text COLLATE "C" NOT NULL,
  key  text COLLATE "C" NOT NULL,
  next bigint NOT NULL,
  PRIMARY KEY (type, key)
);
