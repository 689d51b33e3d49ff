-- errand SQLite schema, version 13.
--
-- Jobs parked by a key's keyRateLimit (parked = 3, migration 0011) came back only by their wake
-- (errand_park_wake), which puts back as many as the window holds and is forgotten; a claim sets
-- a new one only when it leaves the key's window full. When the jobs so put back left without
-- filling it (a woken job moved out of reach before it started, by reschedule or debounce; with a
-- limit above 1 and keyConcurrency, a claim that started one and parked the rest by
-- keyConcurrency), the key's other rate-parked jobs had no way back: the triggers of migration
-- 0010 put back only jobs parked by keyConcurrency and the key's earliest among those not parked
-- by its rate limit. They waited, with nothing of the key running and its window open, for the
-- next change to a job of the key (define-job.ts promises they start as soon as the window
-- allows).
--
-- Now both triggers put back, in claim order, the key's first job parked by keyConcurrency or,
-- while the key has no wake, by its rate limit: nothing else would put that one back. A job so put
-- back that its window still holds off is parked again by the next claim that meets it, which sets
-- the wake. The moved trigger runs for any parked job of the key (it ran only when one was parked
-- by keyConcurrency); each is otherwise as in migration 0010. PostgreSQL's migration 0013 does the
-- same.
--
-- Keys left so by an earlier version (rate-parked jobs, no wake) get a wake due at once, for one
-- job (the limit is the workers' to know): the next claim of the type, or the pending-expiry
-- sweep, puts it back, and from there the key's jobs come back as above.

DROP TRIGGER errand_job_unpark_gone;

CREATE TRIGGER errand_job_unpark_gone AFTER DELETE ON errand_job
WHEN OLD.key IS NOT NULL AND EXISTS (
  SELECT 1 FROM errand_job INDEXED BY errand_job_parked_key
  WHERE type = OLD.type AND key = OLD.key AND parked IS NOT NULL
)
BEGIN
  UPDATE errand_job SET parked = NULL
  WHERE rowid IN (
    (SELECT rowid FROM errand_job INDEXED BY errand_job_parked_key
     WHERE type = OLD.type AND key = OLD.key AND parked IS NOT NULL
       AND (parked = 1 OR (parked = 3 AND NOT EXISTS (
         SELECT 1 FROM errand_park_wake w WHERE w.type = OLD.type AND w.key = OLD.key)))
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

DROP TRIGGER errand_job_unpark_moved;

CREATE TRIGGER errand_job_unpark_moved AFTER UPDATE OF run_at ON errand_job
WHEN NEW.state = 'pending' AND NEW.key IS NOT NULL AND (OLD.state = 'active' OR OLD.parked IS NULL)
  AND EXISTS (
    SELECT 1 FROM errand_job INDEXED BY errand_job_parked_key
    WHERE type = NEW.type AND key = NEW.key AND parked IS NOT NULL
  )
BEGIN
  UPDATE errand_job SET parked = NULL
  WHERE rowid = (
    SELECT rowid FROM errand_job INDEXED BY errand_job_parked_key
    WHERE type = NEW.type AND key = NEW.key AND parked IS NOT NULL
      AND (parked = 1 OR (parked = 3 AND NOT EXISTS (
        SELECT 1 FROM errand_park_wake w WHERE w.type = NEW.type AND w.key = NEW.key)))
    ORDER BY priority DESC, run_at, id LIMIT 1
  );
END;

INSERT OR IGNORE INTO errand_park_wake (type, key, at, n)
SELECT DISTINCT p.type, p.key, 0, 1 FROM errand_job p INDEXED BY errand_job_parked
WHERE p.parked IS NOT NULL AND p.parked = 3
  AND NOT EXISTS (SELECT 1 FROM errand_park_wake w WHERE w.type = p.type AND w.key = p.key);
