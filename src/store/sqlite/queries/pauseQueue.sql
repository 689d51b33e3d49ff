-- pauseQueue: Store.pauseQueue(). Marks a queue paused: claims pass its jobs over.
--
-- Guarantees: one row per paused queue; pausing a paused queue keeps its first paused_at. The
-- store returns true when the row is new. claimArm reads this table in the claim's write
-- transaction, so a claim that starts after this commits sees the pause.
--
-- Params: 1 name, 2 pausedAt.

-- name: pauseQueue
INSERT INTO errand_queue_pause (name, paused_at) VALUES (?, ?) ON CONFLICT (name) DO NOTHING;
