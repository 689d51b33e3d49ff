--[[
  prune: Store.prune(). Deletes finished jobs older than their state's retention.

  Guarantees: reads only the retention indexes ({p}:f:<state>, by finishedAt), so the cost is the
  number deleted (and kept, below); blocked, pending and active jobs are never in them. Deletes at
  most `limit` per call so one call never holds Redis long. A job is deleted when finishedAt <
  now - retention, unless some blocked job depends on it (it would lose the outcome it waits
  for): such a job is kept and passed over, at most `limit` of them per state and call. A deleted
  job's dependency edges go with it (includes/dependencies.lua).

  KEYS[1] {p}:meta
  ARGV[1] epoch  ARGV[2] fresh epoch  ARGV[3] now  ARGV[4] limit
  ARGV[5..8] cut-off (now - retention) for completed, dead, cancelled, expired
  Returns how many were deleted.
]]
--@include "includes/prelude.lua"
--@include "includes/epoch.lua"
--@include "includes/job.lua"
--@include "includes/dependencies.lua"

local err = check_epoch()
if err then
  return err
end

local limit = tonumber(ARGV[4])
local left = limit
local deleted = 0
for s, state in ipairs({ "completed", "dead", "cancelled", "expired" }) do
  if left <= 0 then
    break
  end
  local index = finished_key(state)
  local kept = 0
  while left > 0 and kept < limit do
    local ids = redis.call("ZRANGEBYSCORE", index, "-inf", "(" .. ARGV[4 + s], "LIMIT", kept, left)
    if #ids == 0 then
      break
    end
    local gone = {}
    for _, id in ipairs(ids) do
      local key = job_key(id)
      local f = redis.call("HMGET", key, "q", "t", "hd", "dp")
      if f[3] and has_blocked_dependent(id) then
        kept = kept + 1
      else
        if f[1] then
          count(state, f[1], f[2], -1)
        end
        if f[3] or f[4] then
          drop_edges(id, get_long(key, "dp"))
        end
        redis.call("DEL", key)
        gone[#gone + 1] = id
      end
    end
    if #gone > 0 then
      call_sliced("ZREM", index, gone, 1000)
    end
    left = left - #gone
    deleted = deleted + #gone
  end
end
flush_counts()
return deleted
