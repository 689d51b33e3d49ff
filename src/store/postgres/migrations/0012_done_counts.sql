-- errand PostgreSQL schema, version 12.
--
-- The history's counts kept as it changes, so stats() (the dashboard every two seconds, each
-- /metrics scrape) reads a few rows for the finished jobs rather than every one of them: beside
-- 1,000,000 finished jobs a stats() took ~250 ms of the server's CPU, and the default retention
-- keeps a day of completed jobs (bench/RESULTS.md, session 36).
--
-- - errand_done_delta: one row per (queue, type, state) per statement that inserted or deleted
--   finished jobs, with how many (negative for deletes). Written by the statement triggers below,
--   from the statement's transition table, so every writer of errand_job_done (completions,
--   failures to dead, cancels, expiry, cascades, replay, retry, prune) is counted in its own
--   transaction, whoever wrote it and whatever errand version. Insert only: concurrent
--   completions never wait on one another for it, as they would on a shared counter row.
-- - errand_done_count: the deltas summed per (queue, type, state). The retention pass folds the
--   deltas into it (foldDoneCounts, postgres/queries/prune.sql), each fold in one statement, so a
--   reader sees a delta in exactly one of the two tables.
-- - stats() sums both, in its one snapshot: exact, as counting every row was.
--
-- The cost: per statement that finishes jobs, the transition table (each row kept for the trigger)
-- and one grouped insert, ~1 µs a job on a 64-job completion batch (session 36's measurement).
-- Created with the triggers first: CREATE TRIGGER waits for writers of errand_job_done to commit
-- and holds off new ones until this migration commits, so the count below (a later statement,
-- with a later snapshot) sees every finished job that the triggers will not.

CREATE TABLE errand_done_count (
  queue text COLLATE "C" NOT NULL,
  type  text COLLATE "C" NOT NULL,
  state text COLLATE "C" NOT NULL,
  n     bigint NOT NULL,
  PRIMARY KEY (queue, type, state)
);

CREATE TABLE errand_done_delta (
  queue text COLLATE "C" NOT NULL,
  type  text COLLATE "C" NOT NULL,
  state text COLLATE "C" NOT NULL,
  n     bigint NOT NULL
);

-- errand_done_changed: both triggers' work, the statement's changed rows counted per group (the
-- two name their transition table alike).

CREATE FUNCTION errand_done_changed()
RETURNS trigger
LANGUAGE plpgsql VOLATILE
SET search_path FROM CURRENT
AS $$
BEGIN
  INSERT INTO errand_done_delta (queue, type, state, n)
  SELECT queue, type, state, CASE WHEN TG_OP = 'DELETE' THEN -count(*) ELSE count(*) END
  FROM changed GROUP BY queue, type, state;
  RETURN NULL;
END
$$;

CREATE TRIGGER errand_done_inserted AFTER INSERT ON errand_job_done
REFERENCING NEW TABLE AS changed
FOR EACH STATEMENT EXECUTE FUNCTION errand_done_changed();

CREATE TRIGGER errand_done_deleted AFTER DELETE ON errand_job_done
REFERENCING OLD TABLE AS changed
FOR EACH STATEMENT EXECUTE FUNCTION errand_done_changed();

INSERT INTO errand_done_count (queue, type, state, n)
SELECT queue, type, state, count(*) FROM errand_job_done GROUP BY queue, type, state;
