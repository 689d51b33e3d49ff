-- list: Store.list(). A page of jobs, newest id first, filtered by state, queue, type, key and
-- owner.
--
-- Guarantees: ids below the cursor only, in descending id order, at most $5 rows (the store asks
-- for one more than the page to know whether another follows). listAll reads both tables in one
-- statement, so one snapshot: a job moving between them is listed once.
--
-- Why:
--   - listHot and listDone read only the table that can hold the state asked for; listAll (no
--     state) reads both.
--   - The owner filter has statements of its own (*Owner), not "$6 IS NULL OR ...", so even a
--     generic plan can use the owner indexes.
--   - The cursor is `id < coalesce($4, '~')`, not "$4 IS NULL OR id < $4": a range on the primary
--     key in every plan, the generic one too. '~' sorts after every id in the column's "C"
--     collation (JOB_ID_PATTERN's characters all come before it), so no cursor is all ids. As
--     "$4 IS NULL OR ...", once a connection kept the generic plan a page deep in a history of
--     1,000,000 jobs read every newer row first (300 ms against 1 ms).
--   - listAll's arms each read their table's primary key newest first up to $5 rows (each has
--     its own ORDER BY and LIMIT), and the page is the newest $5 of both. As one UNION ALL under
--     the outer ORDER BY, the generic plan read both tables whole and sorted them (in parallel),
--     691 ms a page beside 1,000,000 finished jobs; so, ~1 ms. The arms' column types agree
--     (columns.ts MISSING_TYPES), so the UNION ALL is one append and not a coercion of each row.
--
--   - A filter (state, queue, type, key) is checked row by row and few rows may match it: a rare
--     type read the whole history for one page. So a filtered page reads at most LIST_SCAN
--     (store.ts) ids of each table, down to $7, the floor listFloor finds (the LIST_SCAN-th id
--     below the cursor, the greater of both tables' for listAll); when the page is not full the
--     store answers the floor as the next cursor, so paging on finds every match, a stretch per
--     call. An unfiltered page matches every row it reads and has no floor.
--
-- $1 state (NULL: any), $2 queue (NULL: any), $3 type (NULL: any), $4 cursor (NULL: from the
-- newest), $5 limit, $6 key (NULL: any), $7 floor (NULL: none); the *Owner statements also $8
-- owner.
-- Returns JobRecords.

-- name: listAll
SELECT * FROM (
  (SELECT {{hotFields}} FROM {{errandJob}}
  WHERE ($1::text IS NULL OR state = $1) AND ($2::text IS NULL OR queue = $2)
    AND ($3::text IS NULL OR type = $3) AND id < coalesce($4::text, '~') AND id >= coalesce($7::text, '')
    AND ($6::text IS NULL OR key = $6)
  ORDER BY id DESC LIMIT $5)
  UNION ALL
  (SELECT {{doneFields}} FROM {{errandJobDone}}
  WHERE ($1::text IS NULL OR state = $1) AND ($2::text IS NULL OR queue = $2)
    AND ($3::text IS NULL OR type = $3) AND id < coalesce($4::text, '~') AND id >= coalesce($7::text, '')
    AND ($6::text IS NULL OR key = $6)
  ORDER BY id DESC LIMIT $5)
) AS j ORDER BY id DESC LIMIT $5

-- name: listHot
SELECT * FROM (
  SELECT {{hotFields}} FROM {{errandJob}}
  WHERE ($1::text IS NULL OR state = $1) AND ($2::text IS NULL OR queue = $2)
    AND ($3::text IS NULL OR type = $3) AND id < coalesce($4::text, '~') AND id >= coalesce($7::text, '')
    AND ($6::text IS NULL OR key = $6)
) AS j ORDER BY id DESC LIMIT $5

-- name: listDone
SELECT * FROM (
  SELECT {{doneFields}} FROM {{errandJobDone}}
  WHERE ($1::text IS NULL OR state = $1) AND ($2::text IS NULL OR queue = $2)
    AND ($3::text IS NULL OR type = $3) AND id < coalesce($4::text, '~') AND id >= coalesce($7::text, '')
    AND ($6::text IS NULL OR key = $6)
) AS j ORDER BY id DESC LIMIT $5

-- name: listAllOwner
SELECT * FROM (
  (SELECT {{hotFields}} FROM {{errandJob}}
  WHERE ($1::text IS NULL OR state = $1) AND ($2::text IS NULL OR queue = $2)
    AND ($3::text IS NULL OR type = $3) AND id < coalesce($4::text, '~') AND id >= coalesce($7::text, '')
    AND ($6::text IS NULL OR key = $6) AND owner = $8
  ORDER BY id DESC LIMIT $5)
  UNION ALL
  (SELECT {{doneFields}} FROM {{errandJobDone}}
  WHERE ($1::text IS NULL OR state = $1) AND ($2::text IS NULL OR queue = $2)
    AND ($3::text IS NULL OR type = $3) AND id < coalesce($4::text, '~') AND id >= coalesce($7::text, '')
    AND ($6::text IS NULL OR key = $6) AND owner = $8
  ORDER BY id DESC LIMIT $5)
) AS j ORDER BY id DESC LIMIT $5

-- name: listHotOwner
SELECT * FROM (
  SELECT {{hotFields}} FROM {{errandJob}}
  WHERE ($1::text IS NULL OR state = $1) AND ($2::text IS NULL OR queue = $2)
    AND ($3::text IS NULL OR type = $3) AND id < coalesce($4::text, '~') AND id >= coalesce($7::text, '')
    AND ($6::text IS NULL OR key = $6) AND owner = $8
) AS j ORDER BY id DESC LIMIT $5

-- name: listDoneOwner
SELECT * FROM (
  SELECT {{doneFields}} FROM {{errandJobDone}}
  WHERE ($1::text IS NULL OR state = $1) AND ($2::text IS NULL OR queue = $2)
    AND ($3::text IS NULL OR type = $3) AND id < coalesce($4::text, '~') AND id >= coalesce($7::text, '')
    AND ($6::text IS NULL OR key = $6) AND owner = $8
) AS j ORDER BY id DESC LIMIT $5

-- name: listFloor
-- The id LIST_SCAN rows below the cursor ($1) in each table read ($3 the hot one, $4 the
-- history), the greater of the two; NULL where a table has fewer. $2 = LIST_SCAN - 1. Only the
-- primary keys are walked (an index-only scan where the visibility map allows).
SELECT greatest(
  CASE WHEN $3::boolean THEN (SELECT id FROM {{errandJob}} WHERE id < coalesce($1::text, '~')
    ORDER BY id DESC OFFSET $2 LIMIT 1) END,
  CASE WHEN $4::boolean THEN (SELECT id FROM {{errandJobDone}} WHERE id < coalesce($1::text, '~')
    ORDER BY id DESC OFFSET $2 LIMIT 1) END
) AS floor

-- name: listFloorOwner
-- listFloor over one owner's jobs ($5), along the owner indexes.
SELECT greatest(
  CASE WHEN $3::boolean THEN (SELECT id FROM {{errandJob}} WHERE owner = $5 AND id < coalesce($1::text, '~')
    ORDER BY id DESC OFFSET $2 LIMIT 1) END,
  CASE WHEN $4::boolean THEN (SELECT id FROM {{errandJobDone}} WHERE owner = $5 AND id < coalesce($1::text, '~')
    ORDER BY id DESC OFFSET $2 LIMIT 1) END
) AS floor
