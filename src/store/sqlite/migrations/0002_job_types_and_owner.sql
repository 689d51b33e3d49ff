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
