-- errand SQLite schema, version 2.
--
-- Job types: the HTTP server's per-type settings (defaults, a cluster-wide cap, a push target),
-- kept here so every server on this database shares them and a restarted one keeps them. The
-- settings are JSON text, read and checked by errand/server; the store keeps them as given.

CREATE TABLE errand_job_type (
  name        TEXT PRIMARY KEY,
  config      TEXT NOT NULL,
  created_at  INTEGER NOT NULL,
  updated_at  INTEGER NOT NULL
);

-- A job's owner: the `owner` enqueue option (on the server, the name of the token that enqueued
-- it), kept in both job tables, and an index on each for listing one owner's jobs newest first.
-- The indexes are partial: a job without an owner, the common case, costs nothing more to insert,
-- claim or finish; an owned one adds an entry on insert (its owner and id never change).

ALTER TABLE errand_job ADD COLUMN owner TEXT;
ALTER TABLE errand_job_done ADD COLUMN owner TEXT;

CREATE INDEX errand_job_owner ON errand_job (owner, id) WHERE owner IS NOT NULL;
CREATE INDEX errand_job_done_owner ON errand_job_done (owner, id) WHERE owner IS NOT NULL;
