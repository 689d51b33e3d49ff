-- errand PostgreSQL schema, version 9.
--
-- Two functions that let a claim lock and then count in one round trip.
--
-- errand_key_room: a claim's per-key locks and counts in one round trip (issue 15: a drain over
-- many keys with keyConcurrency 1 and fair ran at 40% of the keyless drain, its claims spending
-- three round trips per round on keyPeek, lockKeys and keyState). The claim's keyPeek statement
-- passes it the keys it found; it locks them (waiting, in hash order, for the claim's first keys;
-- trying, for keys met later: postgres/claim.ts KeyRoom says why no deadlock can form), then counts
-- each locked key's active jobs and finds its earliest hot job.
--
-- Why a function: the count must be read after the lock is granted. Within one statement, READ
-- COMMITTED reads from the snapshot the statement began with, so a job another claimer started
-- and committed while this one waited for its key's lock would go uncounted. A VOLATILE function
-- takes a new snapshot for each statement it runs, so its count, run after its locks, sees every
-- start committed before them; it runs where the statement runs, costing no round trip.
-- `SET search_path FROM CURRENT` binds its table names to this schema (migrate.ts sets the path).
-- `ROWS`: about what a claim passes it (a claim's keys; one capped type), not the planner's 1,000
-- for a set-returning function, which made a claim's UPDATE hash the whole job table.
-- Arguments: lock_key (KEY_LOCK), channel (the schema's NOTIFY channel, part of each lock's hash, so
-- other schemas' keys do not contend), wait (lock waiting, or try), types and keys (pairs), ordered
-- (the types whose earliest job matters: `ordered` ones). Returns, per pair: ok (its lock is held),
-- and for a held key its active jobs and, for an ordered type, its earliest job id by created_at,
-- id (NULL when it has none, or the type is not ordered: the walk for it is not free).

CREATE FUNCTION errand_key_room(
  lock_key integer, channel text, wait boolean, types text[], keys text[], ordered text[]
)
RETURNS TABLE (type text, key text, ok boolean, active integer, first text)
LANGUAGE plpgsql VOLATILE
ROWS 50
SET search_path FROM CURRENT
AS $$
DECLARE
  held boolean[];
BEGIN
  IF cardinality(types) = 0 THEN
    RETURN;
  END IF;
  IF wait THEN
    PERFORM pg_advisory_xact_lock(lock_key, s.h)
    FROM (
      SELECT DISTINCT hashtext(channel || u.t || chr(31) || u.k) AS h FROM unnest(types, keys) AS u(t, k)
      ORDER BY h
    ) AS s;
    held := array_fill(true, ARRAY[cardinality(types)]);
  ELSE
    SELECT array_agg(pg_try_advisory_xact_lock(lock_key, hashtext(channel || u.t || chr(31) || u.k)) ORDER BY u.n)
    INTO held
    FROM unnest(types, keys) WITH ORDINALITY AS u(t, k, n);
  END IF;
  RETURN QUERY
  SELECT u.t, u.k, u.ok,
    CASE WHEN u.ok THEN (
      SELECT count(*) FROM errand_job a WHERE a.type = u.t AND a.key = u.k AND a.state = 'active'
    )::integer END,
    CASE WHEN u.ok AND u.t = ANY(ordered) THEN (
      SELECT f.id FROM errand_job f WHERE f.type = u.t AND f.key = u.k ORDER BY f.created_at, f.id LIMIT 1
    ) END
  FROM unnest(types, keys, held) AS u(t, k, ok);
END
$$;

-- errand_cap_room: the same for a type's cluster-wide cap (lockCaps and countActive in one call):
-- locks each type's cap lock, in type order as lockCaps does, then counts its active jobs in a
-- statement of its own, after the locks. Used by the claim of one capped type (claim.ts
-- claimCappedAlone), which so needs no transaction of its own.

CREATE FUNCTION errand_cap_room(lock_key integer, channel text, types text[])
RETURNS TABLE (type text, active integer)
LANGUAGE plpgsql VOLATILE
ROWS 1
SET search_path FROM CURRENT
AS $$
BEGIN
  PERFORM pg_advisory_xact_lock(lock_key, hashtext(channel || s.t))
  FROM (SELECT u.t FROM unnest(types) AS u(t) ORDER BY u.t) AS s;
  RETURN QUERY
  SELECT u.t, (SELECT count(*) FROM errand_job a WHERE a.state = 'active' AND a.type = u.t)::integer
  FROM unnest(types) AS u(t);
END
$$;
