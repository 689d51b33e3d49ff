-- errand SQLite schema, version 11.
--
-- A key's jobs held back by its keyRateLimit are parked too (parked = 3), as on Redis and
-- PostgreSQL: beside 20,000 of them a claim of the type read past every one (14 ms a claim). A
-- window opens with time, not with a change to a row, so no trigger can put them back:
-- errand_park_wake keeps, per (type, key), when its window opens (`at`) and how many of its jobs
-- the window then holds (`n`, its limit). A claim of a type with keyRateLimit first puts that many
-- back, in claim order, for each key due of its types (claimWakeDue, claimWakeKey), and the
-- pending-expiry sweep does it for every type (a type whose workers no longer have the rule still
-- gets its jobs back). The claim that leaves a key's window full parks its ready jobs and, while
-- any stay parked, sets the wake (kept if sooner). The single writer makes it exact: windows
-- change only by claims' starts.
--
-- The triggers of migration 0010 leave these jobs alone (they put back jobs parked by
-- keyConcurrency, and a key's earliest job whatever parked it).

CREATE TABLE errand_park_wake (
  type TEXT NOT NULL,
  key  TEXT NOT NULL,
  at   INTEGER NOT NULL,
  n    INTEGER NOT NULL,
  PRIMARY KEY (type, key)
);

CREATE INDEX errand_park_wake_at ON errand_park_wake (at);
