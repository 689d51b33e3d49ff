-- resumeQueue: Store.resumeQueue(). Makes a paused queue's jobs claimable again.
--
-- Guarantees: the store returns true when the queue was paused.
--
-- Params: 1 name.

-- name: resumeQueue
DELETE FROM errand_queue_pause WHERE name = ?;
