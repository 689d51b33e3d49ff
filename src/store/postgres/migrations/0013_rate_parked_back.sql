-- errand PostgreSQL schema, version 13.
--
-- Jobs parked by a key's keyRateLimit (parked = 3, migration 0011) came back only by their wake
-- (errand_park_wake), which puts back as many as the window holds and is forgotten; the claim that
-- fills the window again sets a new one, but only when it parks the key by its rate limit. A key
-- that also has keyConcurrency is parked by that first when its room is full (the woken job the
-- claim just started fills it), so no wake was set, and the unpark trigger put back only jobs
-- parked by keyConcurrency. When that job then stopped without leaving the table (a failure to
-- retry, a snooze, a release, a lost lease), or when a woken job moved out of reach before it
-- started (reschedule, debounce), the key's other rate-parked jobs had no way back: they waited
-- for the next change to a job of the key, an hour on for a retry, while nothing of the key ran and
-- its window had room (define-job.ts promises they start as soon as the window allows).
--
-- Now the trigger's put-back (errand_job_unpark, replaced) takes, in claim order, the key's first
-- job parked by keyConcurrency or, while the key has no wake, by its rate limit: nothing else would
-- put that one back. A job so put back that its window still holds off is parked again by the next
-- claim that meets it, by its rate limit, and that parking sets the wake. The triggers that call it
-- are unchanged.
--
-- Why a key's rate-parked jobs cannot be left without a way back now: while any are parked the key
-- has a wake, or a job of it not parked (pending: a claim meets it when it is due, or a trigger
-- fires when it moves or leaves), or a running job (its stop fires the trigger, which puts back
-- one). A wake's put-back leaves jobs not parked; a claim that parks them by keyConcurrency holds a
-- share lock on the running jobs that fill the key (so their stop's trigger sees the parking), by
-- order leaves the key's earliest job not parked, and by its rate limit sets the wake. The wake
-- read here is one probe of its primary key, only for a key with parked jobs.
--
-- Keys left so by an earlier version (rate-parked jobs, no wake) get a wake due at once, for one
-- job (the limit is the workers' to know): the next claim of the type, or the lease sweep, puts
-- it back, and from there the key's jobs come back as above.

CREATE OR REPLACE FUNCTION errand_job_unpark()
RETURNS trigger
LANGUAGE plpgsql VOLATILE
SET search_path FROM CURRENT
AS $$
DECLARE
  first_id text;
  waking boolean;
BEGIN
  IF NOT EXISTS (
    SELECT 1 FROM errand_job p WHERE p.type = OLD.type AND p.key = OLD.key AND p.parked IS NOT NULL
  ) THEN
    RETURN NULL;
  END IF;
  waking := EXISTS (SELECT 1 FROM errand_park_wake w WHERE w.type = OLD.type AND w.key = OLD.key);
  UPDATE errand_job j SET parked = NULL
  WHERE j.id = ANY (ARRAY(
    SELECT p.id FROM errand_job p
    WHERE p.type = OLD.type AND p.key = OLD.key AND p.parked IS NOT NULL
      AND (p.parked = 1 OR (p.parked = 3 AND NOT waking))
    ORDER BY p.priority DESC, p.run_at, p.id LIMIT 1
    FOR UPDATE SKIP LOCKED
  ));
  IF TG_OP = 'DELETE' THEN
    SELECT f.id INTO first_id FROM errand_job f WHERE f.type = OLD.type AND f.key = OLD.key
    ORDER BY f.created_at, f.id LIMIT 1;
    IF first_id IS NOT NULL THEN
      UPDATE errand_job j SET parked = NULL
      WHERE j.id = ANY (ARRAY(
        SELECT f.id FROM errand_job f WHERE f.id = first_id AND f.parked IS NOT NULL FOR UPDATE SKIP LOCKED
      ));
    END IF;
  END IF;
  RETURN NULL;
END
$$;

INSERT INTO errand_park_wake (type, key, at, n)
SELECT DISTINCT p.type, p.key, 0, 1 FROM errand_job p
WHERE p.parked IS NOT NULL AND p.parked = 3
  AND NOT EXISTS (SELECT 1 FROM errand_park_wake w WHERE w.type = p.type AND w.key = p.key)
ON CONFLICT (type, key) DO NOTHING;
