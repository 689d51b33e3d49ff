-- errand PostgreSQL schema, version 8.
--
-- The claim index led by (queue, type) (issue 15: a type held back by its rate limit, or at its
-- cap, with a million jobs waiting must not slow the claims of another type). Every claim knows
-- the types it may take (claim.ts: the types it names, or the queue's pending types, less those
-- held back), and walks each one's jobs from the first in claim order (priority desc, run_at, id),
-- merging them (queries/claim.sql). With the queue alone leading, a claim of type B behind a
-- million held jobs of type A read the million rows on every claim to filter them out. The index
-- keeps the same name and is still the only claim index on the hot table: a second index by type
-- would cost every job another index entry on insert and on claim.

DROP INDEX errand_job_claim;
CREATE INDEX errand_job_claim ON errand_job (queue, type, priority DESC, run_at, id) WHERE state = 'pending';
