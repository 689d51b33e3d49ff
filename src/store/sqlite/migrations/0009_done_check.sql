-- errand SQLite schema, version 9.
--
-- errand_job_done's state check is written with ORs, as errand_job's has been since version 4.
-- SQLite compiles `state IN ('completed', 'dead', 'cancelled', 'expired')` (three values or more)
-- to an ephemeral table that every insert builds and probes: a B-tree opened, a page allocated and
-- cleared, for each job moved into history. That was ~20,000 instructions of every completion,
-- ~8% of a SQLite drain (bench/RESULTS.md, session 17). The check means the same.
--
-- SQLite cannot change a CHECK constraint in place: the table is rebuilt (SQLite's documented
-- procedure, inside the migration's transaction; nothing refers to the table), its rows copied by
-- name, and its indexes made again. A database with a long history pays that copy once.

CREATE TABLE errand_job_done_v9 (
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

INSERT INTO errand_job_done_v9 (id, type, queue, state, payload, checkpoint, result, priority,
  weight, run_at, expires_at, attempt, max_attempts, backoff, retry_queue, delivery, timeout_ms,
  unique_key, errors, lease_expirations, created_at, started_at, finished_at, owner, depends_on,
  on_dependency_failure, key, debounce_key, snoozes)
SELECT id, type, queue, state, payload, checkpoint, result, priority,
  weight, run_at, expires_at, attempt, max_attempts, backoff, retry_queue, delivery, timeout_ms,
  unique_key, errors, lease_expirations, created_at, started_at, finished_at, owner, depends_on,
  on_dependency_failure, key, debounce_key, snoozes
FROM errand_job_done;

DROP TABLE errand_job_done;
ALTER TABLE errand_job_done_v9 RENAME TO errand_job_done;

CREATE INDEX errand_job_done_state ON errand_job_done (state, finished_at);
CREATE INDEX errand_job_done_owner ON errand_job_done (owner, id) WHERE owner IS NOT NULL;
