-- errand SQLite schema, version 4.
--
-- Job dependencies (dependsOn, Queue.enqueueFlow). A job waiting on unfinished jobs is in the new
-- state 'blocked', in errand_job beside pending and active jobs: the claim index is partial on
-- state = 'pending', so blocked jobs cost claims nothing however many there are.
--
-- - depends_on (both tables): JSON text of the ids the job waits for, in the order given, or NULL.
-- - errand_blocked: one row per blocked job, with how many of its dependencies are unfinished
--   and its on_dependency_failure. The count is kept apart from errand_job because SQLite
--   rewrites a whole row (overflow pages included) on every UPDATE: a job waiting on 10,000 jobs
--   holds ~370 KB of depends_on, and decrementing a column of its own row at each of the 10,000
--   completions would cost O(edges) each, O(edges²) in all. Its row here is a few bytes. The row
--   exists exactly while the job is blocked, so it also answers "is anyone blocked on me?".
-- - on_dependency_failure (both tables): 'cancel' or 'run', what a failed dependency does to it.
-- - has_dependents (errand_job): 1 once some job depends on this one, so a completion looks for
--   dependents to unblock only when there are some (a flow-free completion pays nothing).
-- - errand_dependency: one row per edge, keyed (dep_id, job_id): a job's dependents are a prefix
--   scan of the primary key, in job id order (Queue.dependents pages by it). WITHOUT ROWID: the
--   key is the row.
--
-- SQLite cannot change a CHECK constraint in place, so errand_job is rebuilt (SQLite's documented
-- twelve-step procedure, inside the migration's transaction) and its indexes made again. The check
-- is written with ORs, not `state IN (…)`: SQLite compiles an IN list of three or more values to
-- an ephemeral table that every insert and update of the row builds and probes (+1 µs per claim).

CREATE TABLE errand_job_v4 (
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
);

INSERT INTO errand_job_v4 (id, type, queue, state, payload, checkpoint, priority, weight, run_at,
  expires_at, attempt, max_attempts, backoff, retry_queue, delivery, timeout_ms, unique_key,
  lease_expires_at, worker_id, errors, lease_expirations, created_at, started_at, owner)
SELECT id, type, queue, state, payload, checkpoint, priority, weight, run_at,
  expires_at, attempt, max_attempts, backoff, retry_queue, delivery, timeout_ms, unique_key,
  lease_expires_at, worker_id, errors, lease_expirations, created_at, started_at, owner
FROM errand_job;

DROP TABLE errand_job;
ALTER TABLE errand_job_v4 RENAME TO errand_job;

CREATE INDEX errand_job_claim ON errand_job (queue, priority DESC, run_at, id) WHERE state = 'pending';
CREATE INDEX errand_job_lease ON errand_job (lease_expires_at) WHERE state = 'active';
CREATE INDEX errand_job_active_type ON errand_job (type) WHERE state = 'active';
CREATE UNIQUE INDEX errand_job_unique_key ON errand_job (unique_key) WHERE unique_key IS NOT NULL;
CREATE INDEX errand_job_expiry ON errand_job (expires_at) WHERE expires_at IS NOT NULL;
CREATE INDEX errand_job_owner ON errand_job (owner, id) WHERE owner IS NOT NULL;

ALTER TABLE errand_job_done ADD COLUMN depends_on TEXT;
ALTER TABLE errand_job_done ADD COLUMN on_dependency_failure TEXT NOT NULL DEFAULT 'cancel';

CREATE TABLE errand_blocked (
  job_id                TEXT PRIMARY KEY,
  blocked_by            INTEGER NOT NULL,
  on_dependency_failure TEXT NOT NULL
) WITHOUT ROWID;

CREATE TABLE errand_dependency (
  dep_id  TEXT NOT NULL,
  job_id  TEXT NOT NULL,
  PRIMARY KEY (dep_id, job_id)
) WITHOUT ROWID;
