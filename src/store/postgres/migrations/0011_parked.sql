-- errand PostgreSQL schema, version 11.
--
-- Parked jobs: a busy key's ready jobs out of the claim index, as SQLite's migration 0010 and
-- Redis's parking do (session 33). A claim walks the claim index in claim order and passes over,
-- row by row, the jobs of keys that cannot start another job (keyConcurrency full, `ordered` and
-- not the key's earliest, keyRateLimit's window full): beside 20,000 such jobs every claim of the
-- type took 77 ms (rate limit: 80 ms), and one that found nothing 44 ms (200,000: 725 ms and 404
-- ms), whatever other keys waited behind them.
-- Now a claim that passed over a key's jobs parks the key's ready jobs (errand_key_park): `parked`
-- is set, which takes them out of errand_job_claim, so later claims do not read them. They come
-- back (parked = NULL) one at a time as the key may start one again, by the trigger below:
--   - a running job of the key stops running (completed, failed, released, snoozed, expired,
--     cancelled: its row leaves the table or leaves state active): the key's first job parked by
--     keyConcurrency, in claim order;
--   - a job of the key leaves the table: the key's earliest hot job, if parked (under `ordered`,
--     the next to start);
--   - a waiting job of the key that is not parked moves (reschedule, debounce: it may have been
--     the one put back, now out of reach): the key's first job parked by keyConcurrency.
--     Claims set no run_at, so they run no trigger of this one.
-- A job put back that still cannot start is parked again by the next claim that meets it.
--
-- Why parking cannot lose a wake-up, with no lock in the trigger (one there would make two
-- completions of several keys each wait for the other): errand_key_park parks a key only while it
-- holds a share lock on every running job that makes the key full (FOR SHARE SKIP LOCKED: a
-- running job another transaction is changing is not waited for, and then the key is not parked),
-- and, under `ordered`, on the key's earliest job. A change to any of them (the only changes that
-- give the key room) waits for the parking transaction to commit, and its trigger, a statement of
-- its own, then sees the parked jobs. A change committed before the lock is seen by the count.
--
-- A key whose keyRateLimit window is full is parked too (3): its window opens with time, not with
-- a change to a row, so errand_park_wake keeps, per (type, key), when it opens and how many of its
-- jobs the window then holds (its limit); a claim of the type first puts that many back for each
-- key due (claim.sql wakeParked; the lease sweep does it for every type). The claim that fills the
-- window again re-arms the wake if jobs are still parked. Rate windows change only by starts, which claims make under the key's lock,
-- where the parking runs: no race with a completion.
--
-- - parked: NULL, or why: 1 keyConcurrency (any one may start when room opens), 2 order (only
--   the earliest may start; the earliest itself is never parked by order), 3 keyRateLimit (up to
--   its limit start when its window opens).
-- - errand_job_claim's predicate gains `parked IS NULL`; every statement that walks it says so
--   too (PostgreSQL uses a partial index only for a WHERE that implies its predicate).
-- - errand_job_key_ready: a key's ready jobs not parked, for the parking UPDATE, so a key's
--   backlog is parked once and a key whose jobs are parked costs a new job's parking one probe,
--   not a walk of the parked ones. Written when a keyed job is enqueued or put back, not by claims
--   (a claimed version is not pending).
-- - errand_job_parked_key: a key's parked jobs in claim order (the trigger's first one, and its
--   test that the key has any); errand_job_parked: by queue and type in claim order (stats'
--   held-back sample, which the claim index no longer shows them to). Only parked rows have
--   entries.
-- - errand_park_wake: (type, key) -> at (when its window opens), n (how many to put back then).
-- - Fair types are not parked: a fair key's turns keep it from filling the front.

ALTER TABLE errand_job ADD COLUMN parked smallint;

DROP INDEX errand_job_claim;
CREATE INDEX errand_job_claim ON errand_job (queue, type, priority DESC, run_at, id)
  WHERE state = 'pending' AND parked IS NULL;

CREATE INDEX errand_job_key_ready ON errand_job (type, key, run_at)
  WHERE state = 'pending' AND parked IS NULL AND key IS NOT NULL;

CREATE INDEX errand_job_parked_key ON errand_job (type, key, priority DESC, run_at, id)
  WHERE parked IS NOT NULL;

CREATE INDEX errand_job_parked ON errand_job (queue, type, priority DESC, run_at, id)
  WHERE parked IS NOT NULL;

CREATE TABLE errand_park_wake (
  type text COLLATE "C" NOT NULL,
  key  text COLLATE "C" NOT NULL,
  at   bigint NOT NULL,
  n    integer NOT NULL,
  PRIMARY KEY (type, key)
);

CREATE INDEX errand_park_wake_at ON errand_park_wake (at);

-- errand_key_park: parks the ready jobs of the keys given (pairs of types and keys, each with its
-- type's keyConcurrency, NULL for none, whether it is ordered, and its keyRateLimit's scope, limit
-- and period, NULL for none) that cannot start another job now, at most `most` in all. A key is
-- parked by keyConcurrency when at least its limit of running jobs are share-locked by this
-- transaction (its own claims count), else by order when its earliest hot job is share-locked
-- (every ready job but that one), else by its rate limit when its window's starts (this claim's
-- written already) fill it; then, while any of its jobs are parked by the rate limit, its wake is
-- set to when the window opens (kept if sooner). Locks are only tried: a key with a running job
-- (or an earliest job) another transaction is changing is left as it is, for a later claim. The
-- jobs are taken with SKIP LOCKED, by id, so neither a claim nor a change of one of them is waited
-- for. Returns how many it parked and the soonest wake it set (NULL: none).

CREATE FUNCTION errand_key_park(
  types text[], keys text[], limits integer[], ordered boolean[],
  scopes text[], rate_limits integer[], periods bigint[], now bigint, most integer
)
RETURNS TABLE (parked integer, wake bigint)
LANGUAGE plpgsql VOLATILE
ROWS 1
SET search_path FROM CURRENT
AS $$
DECLARE
  u record;
  held integer;
  head text;
  mark smallint;
  n integer;
  opens bigint;
  total integer := 0;
  soonest bigint;
BEGIN
  FOR u IN
    SELECT x.t, x.k, x.lim, x.ord, x.sc, x.rl, x.per
    FROM unnest(types, keys, limits, ordered, scopes, rate_limits, periods) AS x(t, k, lim, ord, sc, rl, per)
    ORDER BY x.t, x.k
  LOOP
    EXIT WHEN total >= most;
    mark := NULL;
    head := NULL;
    opens := NULL;
    IF u.lim IS NOT NULL THEN
      SELECT count(*) INTO held FROM (
        SELECT 1 FROM errand_job a WHERE a.type = u.t AND a.key = u.k AND a.state = 'active'
        ORDER BY a.id FOR SHARE SKIP LOCKED
      ) AS s;
      IF held >= u.lim THEN
        mark := 1;
      END IF;
    END IF;
    IF mark IS NULL AND u.ord THEN
      SELECT f.id INTO head FROM errand_job f WHERE f.type = u.t AND f.key = u.k
      ORDER BY f.created_at, f.id LIMIT 1;
      IF head IS NOT NULL THEN
        PERFORM 1 FROM errand_job f WHERE f.id = head FOR SHARE SKIP LOCKED;
        IF FOUND THEN
          mark := 2;
        END IF;
      END IF;
    END IF;
    IF mark IS NULL AND u.sc IS NOT NULL THEN
      -- The window opens when its (count - limit + 1)-th oldest start leaves it.
      SELECT w.at + u.per INTO opens FROM (
        SELECT r.at, sum(r.n) OVER (ORDER BY r.at ROWS UNBOUNDED PRECEDING) AS upto,
          sum(r.n) OVER () AS count
        FROM errand_rate_start r WHERE r.scope = u.sc AND r.at > now - u.per
      ) AS w
      WHERE w.count >= u.rl AND w.upto > w.count - u.rl
      ORDER BY w.at LIMIT 1;
      IF opens IS NOT NULL THEN
        mark := 3;
      END IF;
    END IF;
    CONTINUE WHEN mark IS NULL;
    UPDATE errand_job j SET parked = mark
    WHERE j.id = ANY (ARRAY(
      SELECT r.id FROM errand_job r
      WHERE r.type = u.t AND r.key = u.k AND r.state = 'pending' AND r.parked IS NULL
        AND r.run_at <= now AND r.id IS DISTINCT FROM head
      ORDER BY r.type, r.key, r.run_at
      LIMIT most - total
      FOR UPDATE SKIP LOCKED
    ));
    GET DIAGNOSTICS n = ROW_COUNT;
    total := total + n;
    IF mark = 3 AND EXISTS (
      SELECT 1 FROM errand_job p WHERE p.type = u.t AND p.key = u.k AND p.parked IS NOT NULL AND p.parked = 3
    ) THEN
      INSERT INTO errand_park_wake AS w (type, key, at, n) VALUES (u.t, u.k, opens, u.rl)
      ON CONFLICT (type, key) DO UPDATE SET at = least(w.at, excluded.at), n = excluded.n;
      soonest := least(soonest, opens);
    END IF;
  END LOOP;
  RETURN QUERY SELECT total, soonest;
END
$$;

-- errand_job_unpark: the trigger's work (see the top). Its first read, through
-- errand_job_parked_key (only parked rows), is all a key without parked jobs costs.

CREATE FUNCTION errand_job_unpark()
RETURNS trigger
LANGUAGE plpgsql VOLATILE
SET search_path FROM CURRENT
AS $$
DECLARE
  first_id text;
BEGIN
  IF NOT EXISTS (
    SELECT 1 FROM errand_job p WHERE p.type = OLD.type AND p.key = OLD.key AND p.parked IS NOT NULL
  ) THEN
    RETURN NULL;
  END IF;
  UPDATE errand_job j SET parked = NULL
  WHERE j.id = ANY (ARRAY(
    SELECT p.id FROM errand_job p
    WHERE p.type = OLD.type AND p.key = OLD.key AND p.parked IS NOT NULL AND p.parked = 1
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

CREATE TRIGGER errand_job_unpark_gone AFTER DELETE ON errand_job
FOR EACH ROW WHEN (OLD.key IS NOT NULL)
EXECUTE FUNCTION errand_job_unpark();

CREATE TRIGGER errand_job_unpark_stopped AFTER UPDATE OF state ON errand_job
FOR EACH ROW WHEN (OLD.key IS NOT NULL AND OLD.state = 'active' AND NEW.state <> 'active')
EXECUTE FUNCTION errand_job_unpark();

CREATE TRIGGER errand_job_unpark_moved AFTER UPDATE OF run_at ON errand_job
FOR EACH ROW WHEN (OLD.key IS NOT NULL AND OLD.state = 'pending' AND NEW.state = 'pending' AND OLD.parked IS NULL)
EXECUTE FUNCTION errand_job_unpark();
