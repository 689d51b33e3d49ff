-- errand SQLite schema, version 6.
--
-- Rate limits (a type's rateLimit, keyRateLimit): one row per start of a job whose type has one,
-- by scope (the type, or `type|key`; names cannot hold `|`), kept while it is inside the window.
-- A claim counts a scope's starts after now − period through the index, and drops the ones that
-- left every window first, so the table holds at most `limit` rows per scope and period.

CREATE TABLE errand_rate_start (
  scope TEXT NOT NULL,
  at    INTEGER NOT NULL
);

CREATE INDEX errand_rate_start_scope ON errand_rate_start (scope, at);
