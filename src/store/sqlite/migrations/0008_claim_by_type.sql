-- errand SQLite schema, version 8.
--
-- The claim index is led by (queue, type): a claim walks each of its types' ranges and merges them
-- in claim order (queries/claim.sql), so a type held back with a large backlog (by its rate limit,
-- its cap) is never read by claims of other types. Same columns as before, plus type; no second
-- index on the hot table, so inserts and claims write as many index entries as before.

DROP INDEX errand_job_claim;
CREATE INDEX errand_job_claim ON errand_job (queue, type, priority DESC, run_at, id) WHERE state = 'pending';
