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
--
-- $1 state (NULL: any), $2 queue (NULL: any), $3 type (NULL: any), $4 cursor (NULL: from the
-- newest), $5 limit, $6 key (NULL: any); the *Owner statements also $7 owner.
-- Returns JobRecords.

-- name: listAll
SELECT * FROM (
  SELECT {{hotFields}} FROM {{errandJob}}
  WHERE ($1::text IS NULL OR state = $1) AND ($2::text IS NULL OR queue = $2)
    AND ($3::text IS NULL OR type = $3) AND ($4::text IS NULL OR id < $4)
    AND ($6::text IS NULL OR key = $6)
  UNION ALL
  SELECT {{doneFields}} FROM {{errandJobDone}}
  WHERE ($1::text IS NULL OR state = $1) AND ($2::text IS NULL OR queue = $2)
    AND ($3::text IS NULL OR type = $3) AND ($4::text IS NULL OR id < $4)
    AND ($6::text IS NULL OR key = $6)
) AS j ORDER BY id DESC LIMIT $5

-- name: listHot
SELECT * FROM (
  SELECT {{hotFields}} FROM {{errandJob}}
  WHERE ($1::text IS NULL OR state = $1) AND ($2::text IS NULL OR queue = $2)
    AND ($3::text IS NULL OR type = $3) AND ($4::text IS NULL OR id < $4)
    AND ($6::text IS NULL OR key = $6)
) AS j ORDER BY id DESC LIMIT $5

-- name: listDone
SELECT * FROM (
  SELECT {{doneFields}} FROM {{errandJobDone}}
  WHERE ($1::text IS NULL OR state = $1) AND ($2::text IS NULL OR queue = $2)
    AND ($3::text IS NULL OR type = $3) AND ($4::text IS NULL OR id < $4)
    AND ($6::text IS NULL OR key = $6)
) AS j ORDER BY id DESC LIMIT $5

-- name: listAllOwner
SELECT * FROM (
  SELECT {{hotFields}} FROM {{errandJob}}
  WHERE ($1::text IS NULL OR state = $1) AND ($2::text IS NULL OR queue = $2)
    AND ($3::text IS NULL OR type = $3) AND ($4::text IS NULL OR id < $4)
    AND ($6::text IS NULL OR key = $6)
    AND ($6::text IS NULL OR key = $6) AND owner = $7
  UNION ALL
  SELECT {{doneFields}} FROM {{errandJobDone}}
  WHERE ($1::text IS NULL OR state = $1) AND ($2::text IS NULL OR queue = $2)
    AND ($3::text IS NULL OR type = $3) AND ($4::text IS NULL OR id < $4)
    AND ($6::text IS NULL OR key = $6)
    AND ($6::text IS NULL OR key = $6) AND owner = $7
) AS j ORDER BY id DESC LIMIT $5

-- name: listHotOwner
SELECT * FROM (
  SELECT {{hotFields}} FROM {{errandJob}}
  WHERE ($1::text IS NULL OR state = $1) AND ($2::text IS NULL OR queue = $2)
    AND ($3::text IS NULL OR type = $3) AND ($4::text IS NULL OR id < $4)
    AND ($6::text IS NULL OR key = $6)
    AND ($6::text IS NULL OR key = $6) AND owner = $7
) AS j ORDER BY id DESC LIMIT $5

-- name: listDoneOwner
SELECT * FROM (
  SELECT {{doneFields}} FROM {{errandJobDone}}
  WHERE ($1::text IS NULL OR state = $1) AND ($2::text IS NULL OR queue = $2)
    AND ($3::text IS NULL OR type = $3) AND ($4::text IS NULL OR id < $4)
    AND ($6::text IS NULL OR key = $6)
    AND ($6::text IS NULL OR key = $6) AND owner = $7
) AS j ORDER BY id DESC LIMIT $5
