-- pausedQueues: Store.pausedQueues(). The paused queues' names, in byte order.
--
-- Params: none.

-- name: pausedQueues
SELECT name FROM errand_queue_pause ORDER BY name;
