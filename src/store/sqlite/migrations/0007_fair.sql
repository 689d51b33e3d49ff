-- errand SQLite schema, version 7.
--
-- Fair types (a type's `fair: true`, issue 15): keys take turns. Start-time fair queuing: a job of
-- a fair type gets a turn number when enqueued, max(its key's next turn, the type's turn now), and
-- its key's next turn is one more; a claim that meets a ready job of the type takes instead the
-- type's ready job of the lowest turn in the queue (at the highest priority), and moves the
-- type's turn up to it. A key that enqueues late so starts level with the keys already waiting.
-- - fair_turn (hot table only): the job's turn while it waits for it; NULL for jobs of types that
--   are not fair, and cleared when the job is taken (a retry goes in the usual order). The index
--   is partial on it alone, not on state: the claim's UPDATE of state then touches neither its
--   columns nor its condition, so SQLite leaves it out of every claim (measured: claimActivate
--   compiled to 132 steps with a `state = 'pending'` condition here, 106 with this one, 105 before).
--   Blocked jobs of a fair type are in it too, passed over by the claim.
-- - errand_fair_type: a fair type's turn now (the highest turn a claim took).
-- - errand_fair_key: a key's next turn, per fair type; jobs without a key are one group, key ''
--   (a key is a name, never empty).

ALTER TABLE errand_job ADD COLUMN fair_turn INTEGER;

CREATE INDEX errand_job_fair ON errand_job (queue, type, priority DESC, fair_turn, run_at, id)
  WHERE fair_turn IS NOT NULL;

CREATE TABLE errand_fair_type (
  type TEXT PRIMARY KEY,
  turn INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TABLE errand_fair_key (
  type TEXT NOT NULL,
  key  TEXT NOT NULL,
  next INTEGER NOT NULL,
  PRIMARY KEY (type, key)
) WITHOUT ROWID;
