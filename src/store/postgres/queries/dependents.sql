-- dependents: Store.dependents(). A page of the jobs waiting on a job (whose depends_on names it),
-- in id order, in any state.
--
-- Guarantees: ids after the cursor only, ascending, at most $3 rows (the store asks for one more
-- than the page to know whether another follows). One statement, so one snapshot: a dependent
-- moving between the job tables is listed once.
--
-- Why: errand_dependency's primary key (dep_id, job_id) gives the page's ids in order without
-- reading a job; only the page's jobs are then read, from whichever table holds each.
--
-- The cursor is `job_id > coalesce($2, '')` rather than "$2 IS NULL OR ...": a range of the
-- primary key in the generic plan too ('' is below every id).
-- $1 id, $2 cursor (the last id of the previous page; NULL: from the first), $3 limit.
-- Returns JobRecords.

-- name: dependents
WITH page AS (
  SELECT e.job_id FROM {{errandDependency}} e
  WHERE e.dep_id = $1 AND e.job_id > coalesce($2::text, '')
  ORDER BY e.job_id LIMIT $3
)
SELECT * FROM (
  SELECT {{hotFields}} FROM {{errandJob}} WHERE id IN (SELECT job_id FROM page)
  UNION ALL
  SELECT {{doneFields}} FROM {{errandJobDone}} WHERE id IN (SELECT job_id FROM page)
) AS j ORDER BY id
