-- pausedQueues: Store.pausedQueues(). The paused queues' names, in byte order (COLLATE "C").
--
-- No params. Returns rows of (name).

-- name: pausedQueues
SELECT name FROM {{errandQueuePause}} ORDER BY name
