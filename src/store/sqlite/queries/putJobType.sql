-- putJobType: Store.putJobType(). Creates or replaces a job type's settings (JSON text, kept as
-- given).
--
-- Guarantees:
--   - One row per name; a replaced type keeps its created_at.
--   - The store returns true when the type is new: putJobTypeExists runs first, in the same
--     write transaction as the upsert.
--
-- putJobTypeExists params: 1 name.
-- putJobType params: 1 name, 2 config (JSON text), 3 createdAt, 4 updatedAt.

-- name: putJobTypeExists
SELECT 1 FROM errand_job_type WHERE name = ?;

-- name: putJobType
INSERT INTO errand_job_type (name, config, created_at, updated_at) VALUES (?, ?, ?, ?)
ON CONFLICT (name) DO UPDATE SET config = excluded.config, updated_at = excluded.updated_at;
