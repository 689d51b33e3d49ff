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
-- $1 state (NULL: any), $2 queue (NULL: any), $3 type (NULL: any), $4 cursor (NULL: from the
-- newest), $5 limit, $6 key (NULL: any); the *Owner statements also $7 owner.
-- Returns JobRecords.

-- name: listAll
SELECT * FROM (
  (SELECT {{hotFields}} FROM {{errandJob}}
  WHERE ($1::text IS NULL OR state = $1) AND ($2::text IS NULL OR queue = $2)
    AND ($3::text IS NULL OR type = $3) AND id < coalesce($4::text, '~')
    AND ($6::text IS NULL OR key = $6)
  ORDER BY id DESC LIMIT $5)
  UNION ALL
  (SELECT {{doneFields}} FROM {{errandJobDone}}
  WHERE ($1::text IS NULL OR state = $1) AND ($2::text IS NULL OR queue = $2)
    AND ($3::text IS NULL OR type = $3) AND id < coalesce($4::text, '~')
    AND ($6::text IS NULL OR key = $6)
  ORDER BY id DESC LIMIT $5)
) AS j ORDER BY id DESC LIMIT $5

-- name: listHot
SELECT * FROM (
  SELECT {{hotFields}} FROM {{errandJob}}
  WHERE ($1::text IS NULL OR state = $1) AND ($2::text IS NULL OR queue = $2)
    AND ($3::text IS NULL OR type = $3) AND id < coalesce($4::text, '~')
    AND ($6::text IS NULL OR key = $6)
) AS j ORDER BY id DESC LIMIT $5

-- name: listDone
SELECT * FROM (
  SELECT {{doneFields}} FROM {{errandJobDone}}
  WHERE ($1::text IS NULL OR state = $1) AND ($2::text IS NULL OR queue = $2)
    AND ($3::text IS NULL OR type = $3) AND id < coalesce($4::text, '~')
    AND ($6::text IS NULL OR key = $6)
) AS j ORDER BY id DESC LIMIT $5

-- name: listAllOwner
SELECT * FROM (
  (SELECT {{hotFields}} FROM {{errandJob}}
  WHERE ($1::text IS NULL OR state = $1) AND ($2::text IS NULL OR queue = $2)
    AND ($3::text IS NULL OR type = $3) AND id < coalesce($4::text, '~')
    AND ($6::text IS NULL OR key = $6)
    AND ($6::text IS NULL OR key = $6) AND owner = $7
  ORDER BY id DESC LIMIT $5)
  UNION ALL
  (SELECT {{doneFields}} FROM {{errandJobDone}}
  WHERE ($1::text IS NULL OR state = $1) AND ($2::text IS NULL OR queue = $2)
    AND ($3::text IS NULL OR type = $3) AND id < coalesce($4::text, '~')
    AND ($6::text IS NULL OR key = $6)
    AND ($6::text IS NULL OR key = $6) AND owner = $7
  ORDER BY id DESC LIMIT $5)
) AS j ORDER BY id DESC LIMIT $5

-- name: listHotOwner
SELECT * FROM (
  SELECT {{hotFields}} FROM {{errandJob}}
  WHERE ($1::text IS NULL OR state = $1) AND ($2::text IS NULL OR queue = $2)
    AND ($3::text IS NULL OR type = $3) AND id < coalesce($4::text, '~')
    AND ($6::text IS NULL OR key = $6)
    AND ($6::text IS NULL OR key = $6) AND owner = $7
) AS j ORDER BY id DESC LIMIT $5

-- name: listDoneOwner
SELECT * FROM (
  SELECT {{doneFields}} FROM {{errandJobDone}}
  WHERE ($1::text IS NULL OR state = $1) AND ($2::text IS NULL OR queue = $2)
    AND ($3::text IS NULL OR type = $3) AND id < coalesce($4::text, '~')
    AND ($6::text IS NULL OR key = $6)
    AND ($6::text IS NULL OR key = $6) AND owner = $7
) AS j ORDER BY id DESC LIMIT $5
