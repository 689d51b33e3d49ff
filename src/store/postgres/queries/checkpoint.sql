-- checkpoint: Store.checkpoint(). Saves a running attempt's checkpoint.
--
-- Guarantees: compare-and-set: only the current attempt of an active job writes it; a stale
-- attempt changes nothing (no row returned).
--
-- $1 id, $2 attempt, $3 checkpoint (JSON text).
-- Returns one row when the checkpoint was saved.

-- name: checkpoint
UPDATE {{errandJob}} SET checkpoint = $3 WHERE id = $1 AND attempt = $2 AND state = 'active' RETURNING 1
