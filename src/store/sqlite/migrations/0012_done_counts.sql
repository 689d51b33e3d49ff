-- errand SQLite schema, version 12.
--
-- The history's counts kept as it changes, so stats() reads a row per (queue, type, state) of
-- errand_done_count rather than every finished job: beside 1,000,000 finished jobs a count took
-- 0.5-1 s (on the reader thread, stats-reader.ts, but every two seconds while a dashboard is open),
-- and the default retention keeps a day of completed jobs.
--
-- Who counts (one writer, so a shared count costs no waiting):
--   - completions, by far the most, in the store's code (completeMany.sql countCompletedLeaves,
--     one grouped statement a batch, and countCompletedOne): a row trigger costs SQLite ~3 us a
--     row, more than a tenth of a completion (bench/RESULTS.md, session 36);
--   - every other insert (cancelled, dead, expired) by the trigger below, which leaves completed
--     rows to the code;
--   - deletes (prune, retry) in the store's code from the rows they delete.
-- The count of each state is exact as long as every writer is this version or later (stop older
-- workers before upgrading, as with every migration).

CREATE TABLE errand_done_count (
  queue TEXT NOT NULL,
  type  TEXT NOT NULL,
  state TEXT NOT NULL,
  n     INTEGER NOT NULL,
  PRIMARY KEY (queue, type, state)
) WITHOUT ROWID;

CREATE TRIGGER errand_done_inserted AFTER INSERT ON errand_job_done
WHEN NEW.state <> 'completed'
BEGIN
  INSERT INTO errand_done_count (queue, type, state, n) VALUES (NEW.queue, NEW.type, NEW.state, 1)
  ON CONFLICT (queue, type, state) DO UPDATE SET n = n + 1;
END;

INSERT INTO errand_done_count (queue, type, state, n)
SELECT queue, type, state, count(*) FROM errand_job_done WHERE true GROUP BY queue, type, state;
