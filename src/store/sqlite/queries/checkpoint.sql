-- checkpoint: Store.checkpoint(). Saves a running job's checkpoint, which a retry resumes from.
--
-- Guarantees:
--   - Fencing: only while the job is active under the given attempt; a stale call changes
--     nothing and the store returns false.
-- Why: one primary-key UPDATE with the fence in its WHERE clause.
--
-- Params: 1 checkpoint (JSON text or NULL), 2 id, 3 attempt.

-- name: checkpoint
UPDATE errand_job SET checkpoint = ? WHERE id = ? AND attempt = ? AND state = 'active';
