-- table errand_dependency
CREATE TABLE <schema>.errand_dependency (
  dep_id text COLLATE "C" NOT NULL,
  job_id text COLLATE "C" NOT NULL
);

-- table errand_done_count
CREATE TABLE <schema>.errand_done_count (
  queue text COLLATE "C" NOT NULL,
  type text COLLATE "C" NOT NULL,
  state text COLLATE "C" NOT NULL,
  n bigint NOT NULL
);

-- table errand_done_delta
CREATE TABLE <schema>.errand_done_delta (
  queue text COLLATE "C" NOT NULL,
  type text COLLATE "C" NOT NULL,
  state text COLLATE "C" NOT NULL,
  n bigint NOT NULL
);

-- table errand_fair_key
CREATE TABLE <schema>.errand_fair_key (
  type text COLLATE "C" NOT NULL,
  key text COLLATE "C" NOT NULL,
  next bigint NOT NULL
);

-- table errand_fair_type
CREATE TABLE <schema>.errand_fair_type (
  type text COLLATE "C" NOT NULL,
  turn bigint NOT NULL
);

-- table errand_job
CREATE TABLE <schema>.errand_job (
  id text COLLATE "C" NOT NULL,
  type text COLLATE "C" NOT NULL,
  queue text COLLATE "C" NOT NULL,
  state text COLLATE "C" NOT NULL,
  payload text NOT NULL,
  checkpoint text,
  priority bigint NOT NULL,
  weight bigint NOT NULL,
  run_at bigint NOT NULL,
  expires_at bigint,
  attempt integer NOT NULL DEFAULT 0,
  max_attempts bigint NOT NULL,
  backoff text NOT NULL,
  retry_queue text COLLATE "C",
  delivery text COLLATE "C" NOT NULL,
  timeout_ms bigint,
  unique_key text COLLATE "C",
  lease_expires_at bigint,
  worker_id text,
  errors text NOT NULL DEFAULT '[]'::text,
  lease_expirations integer NOT NULL DEFAULT 0,
  created_at bigint NOT NULL,
  started_at bigint,
  owner text COLLATE "C",
  depends_on text,
  blocked_by integer NOT NULL DEFAULT 0,
  on_dependency_failure text COLLATE "C" NOT NULL DEFAULT 'cancel'::text,
  has_dependents boolean NOT NULL DEFAULT false,
  key text COLLATE "C",
  debounce_key text COLLATE "C",
  snoozes integer NOT NULL DEFAULT 0,
  fair_turn bigint,
  parked smallint
) WITH (autovacuum_vacuum_scale_factor=0.01, autovacuum_vacuum_insert_scale_factor=0.01, autovacuum_analyze_scale_factor=0.02, fillfactor=50);

-- table errand_job_done
CREATE TABLE <schema>.errand_job_done (
  id text COLLATE "C" NOT NULL,
  type text COLLATE "C" NOT NULL,
  queue text COLLATE "C" NOT NULL,
  state text COLLATE "C" NOT NULL,
  payload text NOT NULL,
  checkpoint text,
  result text,
  priority bigint NOT NULL,
  weight bigint NOT NULL,
  run_at bigint NOT NULL,
  expires_at bigint,
  attempt integer NOT NULL,
  max_attempts bigint NOT NULL,
  backoff text NOT NULL,
  retry_queue text COLLATE "C",
  delivery text COLLATE "C" NOT NULL,
  timeout_ms bigint,
  unique_key text COLLATE "C",
  errors text NOT NULL,
  lease_expirations integer NOT NULL,
  created_at bigint NOT NULL,
  started_at bigint,
  finished_at bigint NOT NULL,
  owner text COLLATE "C",
  depends_on text,
  on_dependency_failure text COLLATE "C" NOT NULL DEFAULT 'cancel'::text,
  key text COLLATE "C",
  debounce_key text COLLATE "C",
  snoozes integer NOT NULL DEFAULT 0
);

-- table errand_job_type
CREATE TABLE <schema>.errand_job_type (
  name text COLLATE "C" NOT NULL,
  config text NOT NULL,
  created_at bigint NOT NULL,
  updated_at bigint NOT NULL
);

-- table errand_migration
CREATE TABLE <schema>.errand_migration (
  version integer NOT NULL,
  name text NOT NULL,
  applied_at bigint NOT NULL
);

-- table errand_park_wake
CREATE TABLE <schema>.errand_park_wake (
  type text COLLATE "C" NOT NULL,
  key text COLLATE "C" NOT NULL,
  at bigint NOT NULL,
  n integer NOT NULL
);

-- table errand_queue_pause
CREATE TABLE <schema>.errand_queue_pause (
  name text COLLATE "C" NOT NULL,
  paused_at bigint NOT NULL
);

-- table errand_rate_start
CREATE TABLE <schema>.errand_rate_start (
  scope text COLLATE "C" NOT NULL,
  at bigint NOT NULL,
  n integer NOT NULL
);

-- table errand_schedule
CREATE TABLE <schema>.errand_schedule (
  name text COLLATE "C" NOT NULL,
  cron text NOT NULL,
  timezone text NOT NULL,
  type text COLLATE "C" NOT NULL,
  payload text NOT NULL,
  options text NOT NULL,
  next_run_at bigint NOT NULL,
  created_at bigint NOT NULL,
  updated_at bigint NOT NULL
);

-- constraint errand_dependency_pkey
ALTER TABLE <schema>.errand_dependency ADD CONSTRAINT errand_dependency_pkey PRIMARY KEY (dep_id, job_id);

-- constraint errand_done_count_pkey
ALTER TABLE <schema>.errand_done_count ADD CONSTRAINT errand_done_count_pkey PRIMARY KEY (queue, type, state);

-- constraint errand_fair_key_pkey
ALTER TABLE <schema>.errand_fair_key ADD CONSTRAINT errand_fair_key_pkey PRIMARY KEY (type, key);

-- constraint errand_fair_type_pkey
ALTER TABLE <schema>.errand_fair_type ADD CONSTRAINT errand_fair_type_pkey PRIMARY KEY (type);

-- constraint errand_job_pkey
ALTER TABLE <schema>.errand_job ADD CONSTRAINT errand_job_pkey PRIMARY KEY (id);

-- constraint errand_job_state_check
ALTER TABLE <schema>.errand_job ADD CONSTRAINT errand_job_state_check CHECK ((state = ANY (ARRAY['blocked'::text, 'pending'::text, 'active'::text])));

-- constraint errand_job_done_pkey
ALTER TABLE <schema>.errand_job_done ADD CONSTRAINT errand_job_done_pkey PRIMARY KEY (id);

-- constraint errand_job_done_state_check
ALTER TABLE <schema>.errand_job_done ADD CONSTRAINT errand_job_done_state_check CHECK ((state = ANY (ARRAY['completed'::text, 'dead'::text, 'cancelled'::text, 'expired'::text])));

-- constraint errand_job_type_pkey
ALTER TABLE <schema>.errand_job_type ADD CONSTRAINT errand_job_type_pkey PRIMARY KEY (name);

-- constraint errand_migration_pkey
ALTER TABLE <schema>.errand_migration ADD CONSTRAINT errand_migration_pkey PRIMARY KEY (version);

-- constraint errand_park_wake_pkey
ALTER TABLE <schema>.errand_park_wake ADD CONSTRAINT errand_park_wake_pkey PRIMARY KEY (type, key);

-- constraint errand_queue_pause_pkey
ALTER TABLE <schema>.errand_queue_pause ADD CONSTRAINT errand_queue_pause_pkey PRIMARY KEY (name);

-- constraint errand_schedule_pkey
ALTER TABLE <schema>.errand_schedule ADD CONSTRAINT errand_schedule_pkey PRIMARY KEY (name);

-- index errand_dependency_pkey
CREATE UNIQUE INDEX errand_dependency_pkey ON <schema>.errand_dependency USING btree (dep_id, job_id);

-- index errand_done_count_pkey
CREATE UNIQUE INDEX errand_done_count_pkey ON <schema>.errand_done_count USING btree (queue, type, state);

-- index errand_fair_key_pkey
CREATE UNIQUE INDEX errand_fair_key_pkey ON <schema>.errand_fair_key USING btree (type, key);

-- index errand_fair_type_pkey
CREATE UNIQUE INDEX errand_fair_type_pkey ON <schema>.errand_fair_type USING btree (type);

-- index errand_job_claim
CREATE INDEX errand_job_claim ON <schema>.errand_job USING btree (queue, type, priority DESC, run_at, id) WHERE ((state = 'pending'::text) AND (parked IS NULL));

-- index errand_job_debounce
CREATE UNIQUE INDEX errand_job_debounce ON <schema>.errand_job USING btree (debounce_key) WHERE ((debounce_key IS NOT NULL) AND (state = 'pending'::text) AND (attempt = 0));

-- index errand_job_done_owner
CREATE INDEX errand_job_done_owner ON <schema>.errand_job_done USING btree (owner, id) WHERE (owner IS NOT NULL);

-- index errand_job_done_pkey
CREATE UNIQUE INDEX errand_job_done_pkey ON <schema>.errand_job_done USING btree (id);

-- index errand_job_done_state
CREATE INDEX errand_job_done_state ON <schema>.errand_job_done USING btree (state, finished_at);

-- index errand_job_expiry
CREATE INDEX errand_job_expiry ON <schema>.errand_job USING btree (expires_at) WHERE ((state = ANY (ARRAY['blocked'::text, 'pending'::text])) AND (expires_at IS NOT NULL));

-- index errand_job_fair
CREATE INDEX errand_job_fair ON <schema>.errand_job USING btree (queue, type, priority DESC, fair_turn, run_at, id) WHERE ((state = 'pending'::text) AND (fair_turn IS NOT NULL));

-- index errand_job_key_active
CREATE INDEX errand_job_key_active ON <schema>.errand_job USING btree (type, key) WHERE ((key IS NOT NULL) AND (state = 'active'::text));

-- index errand_job_key_order
CREATE INDEX errand_job_key_order ON <schema>.errand_job USING btree (type, key, created_at, id) WHERE (key IS NOT NULL);

-- index errand_job_key_ready
CREATE INDEX errand_job_key_ready ON <schema>.errand_job USING btree (type, key, run_at) WHERE ((state = 'pending'::text) AND (parked IS NULL) AND (key IS NOT NULL));

-- index errand_job_lease
CREATE INDEX errand_job_lease ON <schema>.errand_job USING btree (lease_expires_at) WHERE (state = 'active'::text);

-- index errand_job_owner
CREATE INDEX errand_job_owner ON <schema>.errand_job USING btree (owner, id) WHERE (owner IS NOT NULL);

-- index errand_job_parked
CREATE INDEX errand_job_parked ON <schema>.errand_job USING btree (queue, type, priority DESC, run_at, id) WHERE (parked IS NOT NULL);

-- index errand_job_parked_key
CREATE INDEX errand_job_parked_key ON <schema>.errand_job USING btree (type, key, priority DESC, run_at, id) WHERE (parked IS NOT NULL);

-- index errand_job_pkey
CREATE UNIQUE INDEX errand_job_pkey ON <schema>.errand_job USING btree (id);

-- index errand_job_type_pkey
CREATE UNIQUE INDEX errand_job_type_pkey ON <schema>.errand_job_type USING btree (name);

-- index errand_job_unique_key
CREATE UNIQUE INDEX errand_job_unique_key ON <schema>.errand_job USING btree (unique_key) WHERE (unique_key IS NOT NULL);

-- index errand_migration_pkey
CREATE UNIQUE INDEX errand_migration_pkey ON <schema>.errand_migration USING btree (version);

-- index errand_park_wake_at
CREATE INDEX errand_park_wake_at ON <schema>.errand_park_wake USING btree (at);

-- index errand_park_wake_pkey
CREATE UNIQUE INDEX errand_park_wake_pkey ON <schema>.errand_park_wake USING btree (type, key);

-- index errand_queue_pause_pkey
CREATE UNIQUE INDEX errand_queue_pause_pkey ON <schema>.errand_queue_pause USING btree (name);

-- index errand_rate_start_scope
CREATE INDEX errand_rate_start_scope ON <schema>.errand_rate_start USING btree (scope, at);

-- index errand_schedule_due
CREATE INDEX errand_schedule_due ON <schema>.errand_schedule USING btree (next_run_at);

-- index errand_schedule_pkey
CREATE UNIQUE INDEX errand_schedule_pkey ON <schema>.errand_schedule USING btree (name);

-- function errand_cap_room
CREATE OR REPLACE FUNCTION <schema>.errand_cap_room(lock_key integer, channel text, types text[])
 RETURNS TABLE(type text, active integer)
 LANGUAGE plpgsql
 ROWS 1
 SET search_path TO '<schema>'
AS $function$
BEGIN
  PERFORM pg_advisory_xact_lock(lock_key, hashtext(channel || s.t))
  FROM (SELECT u.t FROM unnest(types) AS u(t) ORDER BY u.t) AS s;
  RETURN QUERY
  SELECT u.t, (SELECT count(*) FROM errand_job a WHERE a.state = 'active' AND a.type = u.t)::integer
  FROM unnest(types) AS u(t);
END
$function$;

-- function errand_done_changed
CREATE OR REPLACE FUNCTION <schema>.errand_done_changed()
 RETURNS trigger
 LANGUAGE plpgsql
 SET search_path TO '<schema>'
AS $function$
BEGIN
  INSERT INTO errand_done_delta (queue, type, state, n)
  SELECT queue, type, state, CASE WHEN TG_OP = 'DELETE' THEN -count(*) ELSE count(*) END
  FROM changed GROUP BY queue, type, state;
  RETURN NULL;
END
$function$;

-- function errand_job_unpark
CREATE OR REPLACE FUNCTION <schema>.errand_job_unpark()
 RETURNS trigger
 LANGUAGE plpgsql
 SET search_path TO '<schema>'
AS $function$
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
$function$;

-- function errand_key_park
CREATE OR REPLACE FUNCTION <schema>.errand_key_park(types text[], keys text[], limits integer[], ordered boolean[], scopes text[], rate_limits integer[], periods bigint[], now bigint, most integer)
 RETURNS TABLE(parked integer, wake bigint)
 LANGUAGE plpgsql
 ROWS 1
 SET search_path TO '<schema>'
AS $function$
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
$function$;

-- function errand_key_room
CREATE OR REPLACE FUNCTION <schema>.errand_key_room(lock_key integer, channel text, wait boolean, types text[], keys text[], ordered text[])
 RETURNS TABLE(type text, key text, ok boolean, active integer, first text)
 LANGUAGE plpgsql
 ROWS 50
 SET search_path TO '<schema>'
AS $function$
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
$function$;

-- trigger errand_done_deleted
CREATE TRIGGER errand_done_deleted AFTER DELETE ON <schema>.errand_job_done REFERENCING OLD TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION <schema>.errand_done_changed();

-- trigger errand_done_inserted
CREATE TRIGGER errand_done_inserted AFTER INSERT ON <schema>.errand_job_done REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION <schema>.errand_done_changed();

-- trigger errand_job_unpark_gone
CREATE TRIGGER errand_job_unpark_gone AFTER DELETE ON <schema>.errand_job FOR EACH ROW WHEN ((old.key IS NOT NULL)) EXECUTE FUNCTION <schema>.errand_job_unpark();

-- trigger errand_job_unpark_moved
CREATE TRIGGER errand_job_unpark_moved AFTER UPDATE OF run_at ON <schema>.errand_job FOR EACH ROW WHEN (((old.key IS NOT NULL) AND (old.state = 'pending'::text) AND (new.state = 'pending'::text) AND (old.parked IS NULL))) EXECUTE FUNCTION <schema>.errand_job_unpark();

-- trigger errand_job_unpark_stopped
CREATE TRIGGER errand_job_unpark_stopped AFTER UPDATE OF state ON <schema>.errand_job FOR EACH ROW WHEN (((old.key IS NOT NULL) AND (old.state = 'active'::text) AND (new.state <> 'active'::text))) EXECUTE FUNCTION <schema>.errand_job_unpark();

-- migrations: [{"version":1,"name":"0001_init.sql"},{"version":2,"name":"0002_job_types_and_owner.sql"},{"version":3,"name":"0003_queue_pause.sql"},{"version":4,"name":"0004_dependencies.sql"},{"version":5,"name":"0005_keys_snooze_debounce.sql"},{"version":6,"name":"0006_rate_limits.sql"},{"version":7,"name":"0007_fair.sql"},{"version":8,"name":"0008_claim_by_type.sql"},{"version":9,"name":"0009_key_room.sql"},{"version":10,"name":"0010_job_fillfactor.sql"},{"version":11,"name":"0011_parked.sql"},{"version":12,"name":"0012_done_counts.sql"},{"version":13,"name":"0013_rate_parked_back.sql"},{"version":14,"name":"0014_rate_wake_rearm.sql"}]
