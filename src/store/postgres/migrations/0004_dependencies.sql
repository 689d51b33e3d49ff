-- errand PostgreSQL schema, version 4.
--
-- Job dependencies (issue 14): a job may wait for other jobs (`dependsOn`). While some are
-- unfinished it is `blocked`, in the hot table beside pending and active jobs, but in no index a
-- claim reads: the claim index is `WHERE state = 'pending'`, so a million blocked jobs cost claims
-- nothing.
--
-- Columns (every ADD COLUMN below is nullable or has a constant default, so none rewrites the
-- table):
--   depends_on             both tables: JSON text of the ids the job waits for, NULL for none.
--   on_dependency_failure  both tables: 'cancel' or 'run', what a blocked job does when a
--                          dependency ends dead, cancelled or expired.
--   blocked_by             hot table: how many dependencies are still unfinished while blocked
--                          (0 otherwise); the done table has none, it reads as NULL there.
--   has_dependents         hot table, internal (not a job field): true once a job has been named
--                          as a dependency. The statements that finish a job read it under the
--                          job's row lock, so a completion of a job nothing waits for never
--                          touches errand_dependency (the flow-free hot path is unchanged), and
--                          one that something waits for settles its dependents in a later
--                          statement of its transaction, whose snapshot sees every dependent
--                          committed before it took the lock (enqueue sets the flag with an
--                          UPDATE, so it holds the dependency's row lock until it commits).

ALTER TABLE errand_job ADD COLUMN depends_on text;
ALTER TABLE errand_job ADD COLUMN blocked_by integer NOT NULL DEFAULT 0;
ALTER TABLE errand_job ADD COLUMN on_dependency_failure text COLLATE "C" NOT NULL DEFAULT 'cancel';
ALTER TABLE errand_job ADD COLUMN has_dependents boolean NOT NULL DEFAULT false;
ALTER TABLE errand_job_done ADD COLUMN depends_on text;
ALTER TABLE errand_job_done ADD COLUMN on_dependency_failure text COLLATE "C" NOT NULL DEFAULT 'cancel';

ALTER TABLE errand_job DROP CONSTRAINT errand_job_state_check;
ALTER TABLE errand_job ADD CONSTRAINT errand_job_state_check CHECK (state IN ('blocked', 'pending', 'active'));

-- The expiry sweeper also expires blocked jobs whose expires_at passed.
DROP INDEX errand_job_expiry;
CREATE INDEX errand_job_expiry ON errand_job (expires_at)
  WHERE state IN ('blocked', 'pending') AND expires_at IS NOT NULL;

-- The reverse index: one row per (dependency, dependent). The primary key serves "the dependents
-- of a job, in id order" (settling them when it finishes, Store.dependents' pages, retention's
-- check), and its prefix the deletes when a job is pruned. No foreign keys: a dependency may be
-- in either job table, and moves between them.
CREATE TABLE errand_dependency (
  dep_id  text COLLATE "C" NOT NULL,
  job_id  text COLLATE "C" NOT NULL,
  PRIMARY KEY (dep_id, job_id)
);
