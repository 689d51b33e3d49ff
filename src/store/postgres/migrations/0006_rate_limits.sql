-- errand PostgreSQL schema, version 6.
--
-- Rate limits (a type's rateLimit, keyRateLimit; issue 15): the starts of jobs whose type has one,
-- by scope (the type, or `type|key`; names cannot hold `|`). A row is one claim's `n` starts of
-- the scope at `at` (a claim taking many jobs of a scope writes one row, not many), so a scope
-- holds at most one row per claim in its window. A claim that takes jobs of a scope holds the
-- scope's advisory lock (claim.ts), deletes the rows that left every window, sums the rest
-- through the index and adds its own; nothing else reads or writes the table.

CREATE TABLE errand_rate_start (
  scope text COLLATE "C" NOT NULL,
  at    bigint NOT NULL,
  n     integer NOT NULL
);

CREATE INDEX errand_rate_start_scope ON errand_rate_start (scope, at);
