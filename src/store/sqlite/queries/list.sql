-- list: Store.list(). A page of jobs, newest id first, filtered by state, queue, type and owner,
-- continuing below a cursor (the last id of the previous page).
--
-- Guarantees:
--   - Rows come in id order, descending; ids are time-ordered, so newest first. A page is at
--     most $limit rows: the store asks for one more than it returns, to know whether a next page
--     exists.
--   - Records carry JobRecord's keys in order (checked at open), as get.sql's.
-- Why these six statements: the state picks the table (listAll reads both, pending and active
-- read listHot, finished states listDone), so a page of finished jobs never walks the hot table,
-- nor the reverse. The owner filter is spelled out in the …ByOwner statements rather than
-- `$owner IS NULL OR owner = $owner`, because only `owner = $owner` lets SQLite use the partial
-- indexes errand_job_owner and errand_job_done_owner (owner, id), which read one owner's jobs in
-- id order. The other filters stay `$x IS NULL OR …` on purpose, also `$state` in listHot and
-- listDone: no index serves them better than walking the primary key newest first and stopping
-- after $limit matches, and a usable `state = $state` would invite errand_job_done_state
-- (state, finished_at) and a sort of every finished job of that state.
--
-- The cursor is `id < coalesce($cursor, '~')`, not "$cursor IS NULL OR id < $cursor", which SQLite
-- cannot use as a range of the primary key: a page deep in a history of 1,000,000 jobs walked
-- every newer row first (64 ms against < 1 ms). '~' sorts after every id (JOB_ID_PATTERN's
-- characters all come before it in BINARY order), so no cursor is all ids. listAll's two arms
-- have the same affinities (statements.ts nullOf), so SQLite merges both primary keys newest
-- first rather than sorting both tables.
--
-- Params (named; all but $limit may be NULL for "any"):
--   $state   a job state
--   $queue   a queue name
--   $type    a job type
--   $key     a job key
--   $cursor  list ids below this one
--   $owner   the owner (…ByOwner only; required there)
--   $limit   rows to read

-- name: listAll
SELECT * FROM (
  SELECT {{hotFields}}
  FROM errand_job
  WHERE ($state IS NULL OR state = $state) AND ($queue IS NULL OR queue = $queue)
    AND ($type IS NULL OR type = $type) AND ($key IS NULL OR key = $key)
    AND id < coalesce($cursor, '~')
  UNION ALL
  SELECT {{doneFields}}
  FROM errand_job_done
  WHERE ($state IS NULL OR state = $state) AND ($queue IS NULL OR queue = $queue)
    AND ($type IS NULL OR type = $type) AND ($key IS NULL OR key = $key)
    AND id < coalesce($cursor, '~')
)
ORDER BY id DESC
LIMIT $limit;

-- name: listAllByOwner
SELECT * FROM (
  SELECT {{hotFields}}
  FROM errand_job
  WHERE ($state IS NULL OR state = $state) AND ($queue IS NULL OR queue = $queue)
    AND ($type IS NULL OR type = $type) AND ($key IS NULL OR key = $key)
    AND id < coalesce($cursor, '~')
    AND owner = $owner
  UNION ALL
  SELECT {{doneFields}}
  FROM errand_job_done
  WHERE ($state IS NULL OR state = $state) AND ($queue IS NULL OR queue = $queue)
    AND ($type IS NULL OR type = $type) AND ($key IS NULL OR key = $key)
    AND id < coalesce($cursor, '~')
    AND owner = $owner
)
ORDER BY id DESC
LIMIT $limit;

-- name: listHot
SELECT {{hotFields}}
FROM errand_job
WHERE ($state IS NULL OR state = $state) AND ($queue IS NULL OR queue = $queue)
  AND ($type IS NULL OR type = $type) AND ($key IS NULL OR key = $key)
  AND id < coalesce($cursor, '~')
ORDER BY id DESC
LIMIT $limit;

-- name: listHotByOwner
SELECT {{hotFields}}
FROM errand_job
WHERE ($state IS NULL OR state = $state) AND ($queue IS NULL OR queue = $queue)
  AND ($type IS NULL OR type = $type) AND ($key IS NULL OR key = $key)
  AND id < coalesce($cursor, '~')
  AND owner = $owner
ORDER BY id DESC
LIMIT $limit;

-- name: listDone
SELECT {{doneFields}}
FROM errand_job_done
WHERE ($state IS NULL OR state = $state) AND ($queue IS NULL OR queue = $queue)
  AND ($type IS NULL OR type = $type) AND ($key IS NULL OR key = $key)
  AND id < coalesce($cursor, '~')
ORDER BY id DESC
LIMIT $limit;

-- name: listDoneByOwner
SELECT {{doneFields}}
FROM errand_job_done
WHERE ($state IS NULL OR state = $state) AND ($queue IS NULL OR queue = $queue)
  AND ($type IS NULL OR type = $type) AND ($key IS NULL OR key = $key)
  AND id < coalesce($cursor, '~')
  AND owner = $owner
ORDER BY id DESC
LIMIT $limit;
