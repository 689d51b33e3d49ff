-- errand SQLite schema, version 1.
--
-- Two job tables: errand_job holds the hot set (pending and active) and stays small, so the claim
-- index is small and claim cost does not grow with history; errand_job_done holds finished jobs
-- until retention prunes them. A job lives in exactly one of the two; ids are unique across both
-- (enqueue checks errand_job_done before inserting).
--
-- Times are epoch milliseconds (INTEGER). JSON fields are TEXT.

CREATE TABLE errand_job (
  id                TEXT PRIMARY KEY,
  type              TEXT NOT NULL,
  queue             TEXT NOT NULL,
  state             TEXT NOT NULL CHECK (state IN ('pending', 'active')),
  payload           TEXT NOT NULL,
  checkpoint        TEXT,
  priority          INTEGER NOT NULL,
  weight            INTEGER NOT NULL,
  run_at            INTEGER NOT NULL,
  expires_at        INTEGER,
  attempt           INTEGER NOT NULL DEFAULT 0,
  max_attempts      INTEGER NOT NULL,
  backoff           TEXT NOT NULL,
  retry_queue       TEXT,
  delivery          TEXT NOT NULL,
  timeout_ms        INTEGER,
  unique_key        TEXT,
  lease_expires_at  INTEGER,
  worker_id         TEXT,
  errors            TEXT NOT NULL DEFAULT '[]',
  lease_expirations INTEGER NOT NULL DEFAULT 0,
  created_at        INTEGER NOT NULL,
  started_at        INTEGER
);

-- Serves exactly the claim query: WHERE queue = ? AND state = 'pending' AND run_at <= ?
-- ORDER BY priority DESC, run_at, id.
CREATE INDEX errand_job_claim ON errand_job (queue, priority DESC, run_at, id) WHERE state = 'pending';
-- The lease sweeper: active jobs by lease expiry.
CREATE INDEX errand_job_lease ON errand_job (lease_expires_at) WHERE state = 'active';
-- Cluster-wide per-type caps count active jobs by type.
CREATE INDEX errand_job_active_type ON errand_job (type) WHERE state = 'active';
-- A unique key holds while its job is pending or active, i.e. while it is in this table.
CREATE UNIQUE INDEX errand_job_unique_key ON errand_job (unique_key) WHERE unique_key IS NOT NULL;
-- The expiry sweeper.
CREATE INDEX errand_job_expiry ON errand_job (expires_at) WHERE expires_at IS NOT NULL;

CREATE TABLE errand_job_done (
  id                TEXT PRIMARY KEY,
  type              TEXT NOT NULL,
  queue             TEXT NOT NULL,
  state             TEXT NOT NULL CHECK (state IN ('completed', 'dead', 'cancelled', 'expired')),
  payload           TEXT NOT NULL,
  checkpoint        TEXT,
  result            TEXT,
  priority          INTEGER NOT NULL,
  weight            INTEGER NOT NULL,
  run_at            INTEGER NOT NULL,
  expires_at        INTEGER,
  attempt           INTEGER NOT NULL,
  max_attempts      INTEGER NOT NULL,
  backoff           TEXT NOT NULL,
  retry_queue       TEXT,
  delivery          TEXT NOT NULL,
  timeout_ms        INTEGER,
  unique_key        TEXT,
  errors            TEXT NOT NULL,
  lease_expirations INTEGER NOT NULL,
  created_at        INTEGER NOT NULL,
  started_at        INTEGER,
  finished_at       INTEGER NOT NULL
);

-- Retention pruning and per-state counts.
CREATE INDEX errand_job_done_state ON errand_job_done (state, finished_at);

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

CREATE INDEX errand_schedule_due ON errand_schedule (next_run_at);
