-- pauseQueue: Store.pauseQueue(). Marks a queue paused: claims pass its jobs over.
--
-- Guarantees: one row per paused queue; pausing a paused queue keeps its first paused_at. Once
-- this commits, every claim statement that starts sees the pause (the claim checks the table in
-- its own snapshot); a claim already running may still take the jobs it found.
--
-- $1 name, $2 paused_at. Returns one row when the queue was not paused before.

-- name: pauseQueue
INSERT INTO {{errandQueuePause}} (name, paused_at) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING RETURNING 1
