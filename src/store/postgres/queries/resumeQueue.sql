-- resumeQueue: Store.resumeQueue(). Makes a paused queue's jobs claimable again.
--
-- $1 name. Returns one row when the queue was paused.

-- name: resumeQueue
DELETE FROM {{errandQueuePause}} WHERE name = $1 RETURNING 1
