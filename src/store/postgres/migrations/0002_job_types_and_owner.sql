-- errand PostgreSQL schema, version 2.
--
-- Job types: the HTTP server's per-type settings (defaults, a cluster-wide cap, a push target),
-- kept here so every server on this schema shares them and a restarted one keeps them. The
-- settings are JSON text, read and checked by errand/server; the store keeps them as given.

CREATE TABLE errand_job_type (
  name        text COLLATE "C" PRIMARY KEY,
  config      text NOT NULL,
  created_at  bigint NOT NULL,
  updated_at  bigint NOT NULL
);

-- A job's owner: the `owner` enqueue option (on the server, the name of the token that enqueued
-- it), kept in both job tables, and an index on each for listing one owner's jobs newest first.
-- Adding a nullable column without a default rewrites nothing. The indexes are partial: a job
-- without an owner, the common case, costs nothing more; an owned one adds an entry whenever its
-- hot row gets a new version (insert, claim, heartbeat, retry), like the table's other indexes.

ALTER TABLE errand_job ADD COLUMN owner text COLLATE "C";
ALTER TABLE errand_job_done ADD COLUMN owner text COLLATE "C";

CREATE INDEX errand_job_owner ON errand_job (owner, id) WHERE owner IS NOT NULL;
CREATE INDEX errand_job_done_owner ON errand_job_done (owner, id) WHERE owner IS NOT NULL;
