-- putJobType: Store.putJobType(). Creates a job type, or replaces the config of one of that name.
--
-- Guarantees: one row per name; a replaced type keeps its created_at.
--
-- Why: xmax is 0 only on a row this statement inserted (an update leaves its own transaction id),
-- so one statement both writes and says which it did.
--
-- $1 name, $2 config (JSON text), $3 created_at, $4 updated_at.
-- Returns one row: inserted (true when the type is new).

-- name: putJobType
INSERT INTO {{errandJobType}} (name, config, created_at, updated_at) VALUES ($1, $2, $3, $4)
ON CONFLICT (name) DO UPDATE SET config = excluded.config, updated_at = excluded.updated_at
RETURNING (xmax = 0) AS inserted
