-- errand SQLite schema, version 7.
--
-- The pending jobs of one queue by type, in claim order: a claim that must pass over a type
-- (at its cap, or held back by its rate limit) reads the other types' jobs from here, one range
-- per type, instead of walking errand_job_claim past every job of the type it passes over (a
-- million held jobs ahead of the others cost each claim a million index entries and rows).

CREATE INDEX errand_job_claim_type ON errand_job (queue, type, priority DESC, run_at, id) WHERE state = 'pending';
