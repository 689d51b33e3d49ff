-- errand PostgreSQL schema, version 1.
--
-- Applied by migrate() inside one transaction, under a transaction-scoped advisory lock, with
-- search_path set to errand's schema (default "errand"), so every name below is created there.
--
-- Two job tables, as in the SQLite store: errand_job holds the hot set (pending and active) and
-- stays small, so the claim index stays small and claim cost does not grow with history, and the
-- churn of finished jobs never bloats it; errand_job_done holds finished jobs until retention
-- prunes them. A job lives in exactly one of the two; ids are unique across both (enqueue checks
-- errand_job_done, see postgres-store.ts).
--
-- Times are epoch milliseconds (bigint), always the `now` errand passes in from its Clock, never
-- the database's now(). JSON fields are text: errand hands them back exactly as it stored them.
-- Ids, names and keys use the "C" collation, so ORDER BY id and cursors compare bytes, as SQLite
-- does, whatever the database's locale.

CREATE TABLE errand_job (
  id                text COLLATE "C" PRIMARY KEY,
  type              text COLLATE "C" NOT NULL,
  queue             text COLLATE "C" NOT NULL,
  state             text COLLATE "C" NOT NULL CHECK (state IN ('pending', 'active')),
  payload           text NOT NULL,
  checkpoint        text,
  priority          bigint NOT NULL,
  weight            bigint NOT NULL,
  run_at            bigint NOT NULL,
  expires_at        bigint,
  attempt           integer NOT NULL DEFAULT 0,
  max_attempts      bigint NOT NULL,
  backoff           text NOT NULL,
  retry_queue       text COLLATE "C",
  delivery          text COLLATE "C" NOT NULL,
  timeout_ms        bigint,
  unique_key        text COLLATE "C",
  lease_expires_at  bigint,
  worker_id         text,
  errors            text NOT NULL DEFAULT '[]',
  lease_expirations integer NOT NULL DEFAULT 0,
  created_at        bigint NOT NULL,
  started_at        bigint
) WITH (
  -- Every job passes through here (insert, claim, delete): vacuum early so dead tuples do not
  -- pile up under the claim index between autovacuum's default 20% thresholds.
  autovacuum_vacuum_scale_factor = 0.01,
  autovacuum_vacuum_insert_scale_factor = 0.01,
  autovacuum_analyze_scale_factor = 0.02
);

-- Serves exactly the claim query: WHERE queue = $1 AND state = 'pending' AND run_at <= $now
-- ORDER BY priority DESC, run_at, id ... FOR UPDATE SKIP LOCKED.
CREATE INDEX errand_job_claim ON errand_job (queue, priority DESC, run_at, id) WHERE state = 'pending';
-- The lease sweeper: active jobs by lease expiry. Claims under a cluster-wide cap count the active
-- jobs of the capped types through it too: the active set is bounded by the cluster's total
-- concurrency, and one index fewer to update on every claim is worth ~10% of the claim's cost.
CREATE INDEX errand_job_lease ON errand_job (lease_expires_at) WHERE state = 'active';
-- A unique key holds while its job is pending or active, i.e. while it is in this table.
CREATE UNIQUE INDEX errand_job_unique_key ON errand_job (unique_key) WHERE unique_key IS NOT NULL;
-- The expiry sweeper: pending jobs that can expire.
CREATE INDEX errand_job_expiry ON errand_job (expires_at) WHERE state = 'pending' AND expires_at IS NOT NULL;

CREATE TABLE errand_job_done (
  id                text COLLATE "C" PRIMARY KEY,
  type              text COLLATE "C" NOT NULL,
  queue             text COLLATE "C" NOT NULL,
  state             text COLLATE "C" NOT NULL CHECK (state IN ('completed', 'dead', 'cancelled', 'expired')),
  payload           text NOT NULL,
  checkpoint        text,
  result            text,
  priority          bigint NOT NULL,
  weight            bigint NOT NULL,
  run_at            bigint NOT NULL,
  expires_at        bigint,
  attempt           integer NOT NULL,
  max_attempts      bigint NOT NULL,
  backoff           text NOT NULL,
  retry_queue       text COLLATE "C",
  delivery          text COLLATE "C" NOT NULL,
  timeout_ms        bigint,
  unique_key        text COLLATE "C",
  errors            text NOT NULL,
  lease_expirations integer NOT NULL,
  created_at        bigint NOT NULL,
  started_at        bigint,
  finished_at       bigint NOT NULL
);

-- Retention pruning and per-state counts.
CREATE INDEX errand_job_done_state ON errand_job_done (state, finished_at);

CREATE TABLE errand_schedule (
  name        text COLLATE "C" PRIMARY KEY,
  cron        text NOT NULL,
  timezone    text NOT NULL,
  type        text COLLATE "C" NOT NULL,
  payload     text NOT NULL,
  options     text NOT NULL,
  next_run_at bigint NOT NULL,
  created_at  bigint NOT NULL,
  updated_at  bigint NOT NULL
);

CREATE INDEX errand_schedule_due ON errand_schedule (next_run_at);
