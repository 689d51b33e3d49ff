-- index errand_job_active_type
CREATE INDEX errand_job_active_type ON errand_job (type) WHERE state = 'active';

-- index errand_job_claim
CREATE INDEX errand_job_claim ON errand_job (queue, type, priority DESC, run_at, id)
  WHERE state = 'pending' AND parked IS NULL;

-- index errand_job_debounce
CREATE INDEX errand_job_debounce ON errand_job (debounce_key) WHERE debounce_key IS NOT NULL;

-- index errand_job_done_owner
CREATE INDEX errand_job_done_owner ON errand_job_done (owner, id) WHERE owner IS NOT NULL;

-- index errand_job_done_state
CREATE INDEX errand_job_done_state ON errand_job_done (state, finished_at);

-- index errand_job_expiry
CREATE INDEX errand_job_expiry ON errand_job (expires_at) WHERE expires_at IS NOT NULL;

-- index errand_job_fair
CREATE INDEX errand_job_fair ON errand_job (queue, type, priority DESC, fair_turn, run_at, id)
  WHERE fair_turn IS NOT NULL;

-- index errand_job_key_order
CREATE INDEX errand_job_key_order ON errand_job (type, key, parked, created_at, id)
  WHERE key IS NOT NULL;

-- index errand_job_lease
CREATE INDEX errand_job_lease ON errand_job (lease_expires_at) WHERE state = 'active';

-- index errand_job_owner
CREATE INDEX errand_job_owner ON errand_job (owner, id) WHERE owner IS NOT NULL;

-- index errand_job_parked
CREATE INDEX errand_job_parked ON errand_job (queue, type, priority DESC, run_at, id)
  WHERE parked IS NOT NULL;

-- index errand_job_parked_key
CREATE INDEX errand_job_parked_key ON errand_job (type, key, priority DESC, run_at, id)
  WHERE parked IS NOT NULL;

-- index errand_job_unique_key
CREATE UNIQUE INDEX errand_job_unique_key ON errand_job (unique_key) WHERE unique_key IS NOT NULL;

-- index errand_park_wake_at
CREATE INDEX errand_park_wake_at ON errand_park_wake (at);

-- index errand_rate_start_scope
CREATE INDEX errand_rate_start_scope ON errand_rate_start (scope, at);

-- index errand_schedule_due
CREATE INDEX errand_schedule_due ON errand_schedule (next_run_at);

-- table errand_blocked
CREATE TABLE errand_blocked (
  job_id                TEXT PRIMARY KEY,
  blocked_by            INTEGER NOT NULL,
  on_dependency_failure TEXT NOT NULL
) WITHOUT ROWID;

-- table errand_dependency
CREATE TABLE errand_dependency (
  dep_id  TEXT NOT NULL,
  job_id  TEXT NOT NULL,
  PRIMARY KEY (dep_id, job_id)
) WITHOUT ROWID;

-- table errand_done_count
CREATE TABLE errand_done_count (
  queue TEXT NOT NULL,
  type  TEXT NOT NULL,
  state TEXT NOT NULL,
  n     INTEGER NOT NULL,
  PRIMARY KEY (queue, type, state)
) WITHOUT ROWID;

-- table errand_fair_key
CREATE TABLE errand_fair_key (
  type TEXT NOT NULL,
  key  TEXT NOT NULL,
  next INTEGER NOT NULL,
  PRIMARY KEY (type, key)
) WITHOUT ROWID;

-- table errand_fair_type
CREATE TABLE errand_fair_type (
  type TEXT PRIMARY KEY,
  turn INTEGER NOT NULL
) WITHOUT ROWID;

-- table errand_job
CREATE TABLE "errand_job" (
  id                    TEXT PRIMARY KEY,
  type                  TEXT NOT NULL,
  queue                 TEXT NOT NULL,
  state                 TEXT NOT NULL CHECK (state = 'pending' OR state = 'active' OR state = 'blocked'),
  payload               TEXT NOT NULL,
  checkpoint            TEXT,
  priority              INTEGER NOT NULL,
  weight                INTEGER NOT NULL,
  run_at                INTEGER NOT NULL,
  expires_at            INTEGER,
  attempt               INTEGER NOT NULL DEFAULT 0,
  max_attempts          INTEGER NOT NULL,
  backoff               TEXT NOT NULL,
  retry_queue           TEXT,
  delivery              TEXT NOT NULL,
  timeout_ms            INTEGER,
  unique_key            TEXT,
  lease_expires_at      INTEGER,
  worker_id             TEXT,
  errors                TEXT NOT NULL DEFAULT '[]',
  lease_expirations     INTEGER NOT NULL DEFAULT 0,
  created_at            INTEGER NOT NULL,
  started_at            INTEGER,
  owner                 TEXT,
  depends_on            TEXT,
  on_dependency_failure TEXT NOT NULL DEFAULT 'cancel',
  has_dependents        INTEGER NOT NULL DEFAULT 0
, key TEXT, debounce_key TEXT, snoozes INTEGER NOT NULL DEFAULT 0, fair_turn INTEGER, parked INTEGER);

-- table errand_job_done
CREATE TABLE "errand_job_done" (
  id                    TEXT PRIMARY KEY,
  type                  TEXT NOT NULL,
  queue                 TEXT NOT NULL,
  state                 TEXT NOT NULL
    CHECK (state = 'completed' OR state = 'dead' OR state = 'cancelled' OR state = 'expired'),
  payload               TEXT NOT NULL,
  checkpoint            TEXT,
  result                TEXT,
  priority              INTEGER NOT NULL,
  weight                INTEGER NOT NULL,
  run_at                INTEGER NOT NULL,
  expires_at            INTEGER,
  attempt               INTEGER NOT NULL,
  max_attempts          INTEGER NOT NULL,
  backoff               TEXT NOT NULL,
  retry_queue           TEXT,
  delivery              TEXT NOT NULL,
  timeout_ms            INTEGER,
  unique_key            TEXT,
  errors                TEXT NOT NULL,
  lease_expirations     INTEGER NOT NULL,
  created_at            INTEGER NOT NULL,
  started_at            INTEGER,
  finished_at           INTEGER NOT NULL,
  owner                 TEXT,
  depends_on            TEXT,
  on_dependency_failure TEXT NOT NULL DEFAULT 'cancel',
  key                   TEXT,
  debounce_key          TEXT,
  snoozes               INTEGER NOT NULL DEFAULT 0
);

-- table errand_job_type
CREATE TABLE errand_job_type (
  name        TEXT PRIMARY KEY,
  config      TEXT NOT NULL,
  created_at  INTEGER NOT NULL,
  updated_at  INTEGER NOT NULL
);

-- table errand_migration
CREATE TABLE errand_migration (
      version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL);

-- table errand_park_wake
CREATE TABLE errand_park_wake (
  type TEXT NOT NULL,
  key  TEXT NOT NULL,
  at   INTEGER NOT NULL,
  n    INTEGER NOT NULL,
  PRIMARY KEY (type, key)
);

-- table errand_queue_pause
CREATE TABLE errand_queue_pause (
  name       TEXT PRIMARY KEY,
  paused_at  INTEGER NOT NULL
);

-- table errand_rate_start
CREATE TABLE errand_rate_start (
  scope TEXT NOT NULL,
  at    INTEGER NOT NULL
);

-- table errand_schedule
CREATE TABLE errand_schedule (
  name        TEXT PRIMARY KEY,
  cron        TEXT NOT NULL,
  timezone    TEXT NOT NULL,
  type        TEXT NOT NULL,
  payload     TEXT NOT NULL,
  options     TEXT NOT NULL,
  next_run_at INTEGER NOT NULL,
  created_at  INTEGER NOT NULL,
  updated_at  INTEGER NOT NULL
);

-- trigger errand_done_inserted
CREATE TRIGGER errand_done_inserted AFTER INSERT ON errand_job_done
WHEN NEW.state <> 'completed'
BEGIN
  INSERT INTO errand_done_count (queue, type, state, n) VALUES (NEW.queue, NEW.type, NEW.state, 1)
  ON CONFLICT (queue, type, state) DO UPDATE SET n = n + 1;
END;

-- trigger errand_job_unpark_gone
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

-- trigger errand_job_unpark_moved
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

-- migrations: [{"version":1,"name":"0001_init.sql"},{"version":2,"name":"0002_job_types_and_owner.sql"},{"version":3,"name":"0003_queue_pause.sql"},{"version":4,"name":"0004_dependencies.sql"},{"version":5,"name":"0005_keys_snooze_debounce.sql"},{"version":6,"name":"0006_rate_limits.sql"},{"version":7,"name":"0007_fair.sql"},{"version":8,"name":"0008_claim_by_type.sql"},{"version":9,"name":"0009_done_check.sql"},{"version":10,"name":"0010_parked.sql"},{"version":11,"name":"0011_park_wake.sql"},{"version":12,"name":"0012_done_counts.sql"},{"version":13,"name":"0013_rate_parked_back.sql"}]
