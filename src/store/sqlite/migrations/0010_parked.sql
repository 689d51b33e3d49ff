-- errand SQLite schema, version 10.
--
-- Parked jobs: a busy key's ready jobs out of the claim index. A claim walks the claim index in
-- claim order and passes over, row by row, the jobs of keys that cannot start another job (their
-- keyConcurrency full, or `ordered` and not their key's earliest): beside 20,000 of them a claim
-- took 9.2 ms, and a worker that claims as its slots free paid that on every claim (a drain of
-- 100 keys x 200 jobs enqueued key by key ran at 280 jobs/s; bench/RESULTS.md, session 33). Now a
-- claim that closes such a key parks the key's ready jobs: `parked` is set, which takes them out
-- of errand_job_claim, so later claims do not read them. They come back (parked = NULL) when the
-- key may have room again, by the triggers below, whatever changed the job that made it:
--   - a job of the key leaves the hot set (completed, dead, cancelled, expired: deleted from this
--     table): the key's first job parked by keyConcurrency, in claim order, and the key's earliest
--     hot job if it is parked (under `ordered`, the next to start);
--   - a running job of the key goes back to pending (a retry, a release, a snooze), or a waiting
--     job of the key that is not parked moves (reschedule, debounce): its first job parked by
--     keyConcurrency. Every one of those statements sets run_at, and a claim does not: the trigger
--     is on run_at, so claims run none (one on state cost a drain ~2% in a subprogram call a row).
-- A job put back that still cannot start is parked again by the next claim that meets it. Each
-- parking reads only the key's jobs not parked yet (errand_job_key_order, now led by parked), so a
-- key's backlog is parked once, not once a claim.
--
-- - parked: NULL, or why: 1 keyConcurrency (any one of them may start when room opens), 2 order
--   (only the key's earliest may start; the earliest itself is never parked by order).
-- - errand_job_claim's predicate gains `parked IS NULL`; every statement that names the index says
--   so too (SQLite uses a partial index only for a WHERE that implies its predicate).
-- - errand_job_key_order is (type, key, parked, created_at, id): a key's jobs not parked are one
--   range of it, for the parking UPDATE; its earliest hot job (under `ordered`, the only one that
--   may start) is the first of three ranges (claimKeyEarliest). No new index on every keyed job:
--   a separate index of a key's ready jobs (state in its predicate, so written at each claim too)
--   cost a keyed drain 8% (bench keys-drain, 1,000 keys, keyConcurrency 1, fair: 32,078 -> 28,461
--   jobs/s); this one is written only when a job is parked or put back.
-- - errand_job_parked_key: a key's parked jobs in claim order (the triggers' first one);
--   errand_job_parked: by queue and type in claim order (stats' held-back sample, which the claim
--   index no longer shows them to). Only parked rows have entries.
-- - Types with `fair` and keyRateLimit are not parked: a fair key's turns keep it from filling the
--   front, and a rate window opens with time, not with a change to a row.

ALTER TABLE errand_job ADD COLUMN parked INTEGER;

DROP INDEX errand_job_claim;
CREATE INDEX errand_job_claim ON errand_job (queue, type, priority DESC, run_at, id)
  WHERE state = 'pending' AND parked IS NULL;

DROP INDEX errand_job_key_order;
CREATE INDEX errand_job_key_order ON errand_job (type, key, parked, created_at, id)
  WHERE key IS NOT NULL;

CREATE INDEX errand_job_parked_key ON errand_job (type, key, priority DESC, run_at, id)
  WHERE parked IS NOT NULL;

CREATE INDEX errand_job_parked ON errand_job (queue, type, priority DESC, run_at, id)
  WHERE parked IS NOT NULL;

CREATE TRIGGER errand_job_unpark_gone AFTER DELETE ON errand_job
WHEN OLD.key IS NOT NULL AND EXISTS (
  SELECT 1 FROM errand_job INDEXED BY errand_job_parked_key
  WHERE type = OLD.type AND key = OLD.key AND parked IS NOT NULL
)
BEGIN
  UPDATE errand_job SET parked = NULL
  WHERE rowid IN (
    (SELECT rowid FROM errand_job INDEXED BY errand_job_parked_key
     WHERE type = OLD.type AND key = OLD.key AND parked IS NOT NULL AND parked = 1
     ORDER BY priority DESC, run_at, id LIMIT 1),
    (SELECT rowid FROM (
       SELECT * FROM (SELECT rowid, created_at, id FROM errand_job INDEXED BY errand_job_key_order
         WHERE type = OLD.type AND key = OLD.key AND key IS NOT NULL AND parked IS NULL
         ORDER BY created_at, id LIMIT 1)
       UNION ALL
       SELECT * FROM (SELECT rowid, created_at, id FROM errand_job INDEXED BY errand_job_key_order
         WHERE type = OLD.type AND key = OLD.key AND key IS NOT NULL AND parked = 1
         ORDER BY created_at, id LIMIT 1)
       UNION ALL
       SELECT * FROM (SELECT rowid, created_at, id FROM errand_job INDEXED BY errand_job_key_order
         WHERE type = OLD.type AND key = OLD.key AND key IS NOT NULL AND parked = 2
         ORDER BY created_at, id LIMIT 1)
     ) ORDER BY created_at, id LIMIT 1)
  ) AND parked IS NOT NULL;
END;

CREATE TRIGGER errand_job_unpark_moved AFTER UPDATE OF run_at ON errand_job
WHEN NEW.state = 'pending' AND NEW.key IS NOT NULL AND (OLD.state = 'active' OR OLD.parked IS NULL)
  AND EXISTS (
    SELECT 1 FROM errand_job INDEXED BY errand_job_parked_key
    WHERE type = NEW.type AND key = NEW.key AND parked IS NOT NULL AND parked = 1
  )
BEGIN
  UPDATE errand_job SET parked = NULL
  WHERE rowid = (
    SELECT rowid FROM errand_job INDEXED BY errand_job_parked_key
    WHERE type = NEW.type AND key = NEW.key AND parked IS NOT NULL AND parked = 1
    ORDER BY priority DESC, run_at, id LIMIT 1
  );
END;
