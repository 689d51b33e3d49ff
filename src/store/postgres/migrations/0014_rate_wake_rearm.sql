-- errand PostgreSQL schema, version 14.
--
-- A key's rate wake re-armed over one already due. wakeParked (queries/claim.sql) keeps a due wake
-- whose key's parked jobs another transaction held when it ran (a cancel, a reschedule, a
-- debounced enqueue inside a caller's transaction), so that a job the holder gives back unchanged
-- is not left parked for good. errand_key_park, re-arming the key's wake when a claim fills its
-- window again, kept the sooner of the two times (least(w.at, excluded.at)): the due one. The
-- wake then stayed due, and every claim of the type put the key's parked jobs back only for the
-- claim to park them again, its window full, for as long as the holder held.
--
-- Now a wake already due when the key is parked again takes the time the window opens: no job
-- of the key can start before then, and the put-back then finds the held job too if it is free.
-- A wake still ahead keeps the sooner time, as before. The function is otherwise unchanged.

CREATE OR REPLACE FUNCTION errand_key_park(
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
      ON CONFLICT (type, key) DO UPDATE
        SET at = CASE WHEN w.at <= now THEN excluded.at ELSE least(w.at, excluded.at) END, n = excluded.n;
      soonest := least(soonest, opens);
    END IF;
  END LOOP;
  RETURN QUERY SELECT total, soonest;
END
$$;
