-- errand PostgreSQL schema, version 3.
--
-- Paused queues (Queue.pauseQueue): one row per paused queue, none for the rest, so a claim
-- checks its queue with one primary-key probe of a table that is almost always empty.

CREATE TABLE errand_queue_pause (
  name       text COLLATE "C" PRIMARY KEY,
  paused_at  bigint NOT NULL
);
