-- errand PostgreSQL schema, version 10.
--
-- errand_job keeps half of each page free (fillfactor 50), so the version a claim writes (state
-- active, the lease, the attempt) goes on the page of the version it replaces. The claim's update
-- cannot be HOT (the state it changes is in the partial indexes' predicates), but on a full page
-- PostgreSQL also writes a second lock record for the old version, looks up free space elsewhere
-- and extends the table while the drain runs: every page a bulk insert fills is full. A claim of
-- 450 updates every row of ~18 pages in one statement, so all of a page's new versions must fit
-- at once: 50, not 70 or 90 (at 60, 1.3 lock records a job instead of 1). Measured on a 20,000-job
-- drain with prefetch 450 (bench/RESULTS.md, session 30): lock records 2 → 1 a job, PostgreSQL's
-- CPU a job −9 to −16%, the drain +8 to +12%. The cost: a waiting backlog's heap takes twice the
-- pages (~560 rather than ~280 bytes a job); the claim index, which claims walk, is unchanged.
-- Existing pages keep their fill; pages written from now on use the setting (no rewrite, a brief
-- SHARE UPDATE EXCLUSIVE lock).

ALTER TABLE errand_job SET (fillfactor = 50);
