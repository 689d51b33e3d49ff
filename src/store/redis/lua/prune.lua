--[[
  prune: Store.prune(). Deletes finished jobs older than their state's retention.

  Guarantees: reads only the retention indexes ({p}:f:<state>, by finishedAt), so the cost is the
  number deleted; pending and active jobs are never in them. Deletes at most `limit` per call so
  one call never holds Redis long. A job is deleted when finishedAt < now - retention.

  KEYS[1] {p}:meta
  ARGV[1] epoch  ARGV[2] fresh epoch  ARGV[3] now  ARGV[4] limit
  ARGV[5..8] cut-off (now - retention) for completed, dead, cancelled, expired
  Returns how many were deleted.
]]
--@include "includes/prelude.lua"
--@include "includes/epoch.lua"
--@include "includes/job.lua"

local err = check_epoch()
if err then
  return err
end

local left = tonumber(ARGV[4])
local deleted = 0
for s, state in ipairs({ "completed", "dead", "cancelled", "expired" }) do
  if left <= 0 then
    break
  end
  local index = finished_key(state)
  local ids = redis.call("ZRANGEBYSCORE", index, "-inf", "(" .. ARGV[4 + s], "LIMIT", 0, left)
  for _, id in ipairs(ids) do
    local key = job_key(id)
    local f = redis.call("HMGET", key, "q", "t")
    if f[1] then
      count(state, f[1], f[2], -1)
    end
    redis.call("DEL", key)
  end
  if #ids > 0 then
    call_sliced("ZREM", index, ids, 1000)
  end
  left = left - #ids
  deleted = deleted + #ids
end
flush_counts()
return deleted
