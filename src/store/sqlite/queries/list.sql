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
-- A filter (state, queue, type, key) is checked row by row, and few rows may match it: a rare type
-- in a history of 1,000,000 jobs read the whole primary key for one page (273 ms on the event
-- loop). So a filtered page reads a stretch of at most LIST_SCAN (store.ts) ids of each table,
-- ending at $floor, the LIST_SCAN-th id below the cursor that listFloor* find (the greater of both
-- tables' for listAll): the page holds the matches in [$floor, $cursor), and when it is not full
-- the store answers $floor as the next cursor, so paging on finds every match, a stretch per call.
-- An unfiltered page matches every row it reads and has no floor.
--
-- Params (named; all but $limit may be NULL for "any"):
--   $state   a job state
--   $queue   a queue name
--   $type    a job type
--   $key     a job key
--   $cursor  list ids below this one
--   $floor   list ids at or above this one (a filtered page's stretch)
--   $owner   the owner (…ByOwner only; required there)
--   $limit   rows to read

-- name: listAll
SELECT * FROM (
  SELECT {{hotFields}}
  FROM errand_job
  WHERE ($state IS NULL OR state = $state) AND ($queue IS NULL OR queue = $queue)
    AND ($type IS NULL OR type = $type) AND ($key IS NULL OR key = $key)
    AND id < coalesce($cursor, '~') AND id >= coalesce($floor, '')
  UNION ALL
  SELECT {{doneFields}}
  FROM errand_job_done
  WHERE ($state IS NULL OR state = $state) AND ($queue IS NULL OR queue = $queue)
    AND ($type IS NULL OR type = $type) AND ($key IS NULL OR key = $key)
    AND id < coalesce($cursor, '~') AND id >= coalesce($floor, '')
)
ORDER BY id DESC
LIMIT $limit;

-- name: listAllByOwner
SELECT * FROM (
  SELECT {{hotFields}}
  FROM errand_job
  WHERE ($state IS NULL OR state = $state) AND ($queue IS NULL OR queue = $queue)
    AND ($type IS NULL OR type = $type) AND ($key IS NULL OR key = $key)
    AND id < coalesce($cursor, '~') AND id >= coalesce($floor, '')
    AND owner = $owner
  UNION ALL
  SELECT {{doneFields}}
  FROM errand_job_done
  WHERE ($state IS NULL OR state = $state) AND ($queue IS NULL OR queue = $queue)
    AND ($type IS NULL OR type = $type) AND ($key IS NULL OR key = $key)
    AND id < coalesce($cursor, '~') AND id >= coalesce($floor, '')
    AND owner = $owner
)
ORDER BY id DESC
LIMIT $limit;

-- name: listHot
SELECT {{hotFields}}
FROM errand_job
WHERE ($state IS NULL OR state = $state) AND ($queue IS NULL OR queue = $queue)
  AND ($type IS NULL OR type = $type) AND ($key IS NULL OR key = $key)
  AND id < coalesce($cursor, '~') AND id >= coalesce($floor, '')
ORDER BY id DESC
LIMIT $limit;

-- name: listHotByOwner
SELECT {{hotFields}}
FROM errand_job
WHERE ($state IS NULL OR state = $state) AND ($queue IS NULL OR queue = $queue)
  AND ($type IS NULL OR type = $type) AND ($key IS NULL OR key = $key)
  AND id < coalesce($cursor, '~') AND id >= coalesce($floor, '')
  AND owner = $owner
ORDER BY id DESC
LIMIT $limit;

-- name: listDone
SELECT {{doneFields}}
FROM errand_job_done
WHERE ($state IS NULL OR state = $state) AND ($queue IS NULL OR queue = $queue)
  AND ($type IS NULL OR type = $type) AND ($key IS NULL OR key = $key)
  AND id < coalesce($cursor, '~') AND id >= coalesce($floor, '')
ORDER BY id DESC
LIMIT $limit;

-- name: listDoneByOwner
SELECT {{doneFields}}
FROM errand_job_done
WHERE ($state IS NULL OR state = $state) AND ($queue IS NULL OR queue = $queue)
  AND ($type IS NULL OR type = $type) AND ($key IS NULL OR key = $key)
  AND id < coalesce($cursor, '~') AND id >= coalesce($floor, '')
  AND owner = $owner
ORDER BY id DESC
LIMIT $limit;

-- The id LIST_SCAN rows below the cursor in one table ($scan = LIST_SCAN - 1), or none when the
-- table has fewer: the primary key's (or the owner index's) entries only, no row is read.
-- $cursor as above, $scan, $owner (…ByOwner only).

-- name: listFloorHot
SELECT id FROM errand_job
WHERE id < coalesce($cursor, '~')
ORDER BY id DESC
LIMIT 1 OFFSET $scan;

-- name: listFloorHotByOwner
SELECT id FROM errand_job
WHERE owner = $owner AND id < coalesce($cursor, '~')
ORDER BY id DESC
LIMIT 1 OFFSET $scan;

-- name: listFloorDone
SELECT id FROM errand_job_done
WHERE id < coalesce($cursor, '~')
ORDER BY id DESC
LIMIT 1 OFFSET $scan;

-- name: listFloorDoneByOwner
SELECT id FROM errand_job_done
WHERE owner = $owner AND id < coalesce($cursor, '~')
ORDER BY id DESC
LIMIT 1 OFFSET $scan;
