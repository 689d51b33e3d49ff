--[[
  stats: Store.stats(). Counts for humans and autoscalers, in O(queues × types), independent of the
  number of jobs: the counters in {p}:n are kept by every script that moves a job.

  KEYS[1] {p}:meta
  ARGV[1] now
  Returns {counters (field, value, ...), scheduled (pending not yet due), oldest ready runAt or nil}.
]]
--@include "includes/prelude.lua"
--@include "includes/pages.lua"

local now = tonumber(ARGV[1])
local counters = redis.call("HGETALL", COUNTS)
local scheduled = redis.call("ZCOUNT", SCHED, "(" .. ARGV[1], "+inf")
local oldest = nil
local due = redis.call("ZRANGEBYSCORE", SCHED, "-inf", ARGV[1], "WITHSCORES", "LIMIT", 0, 1)
if #due > 0 then
  oldest = tonumber(due[2])
end
for i = 1, #counters, 2 do
  local queue = string.match(counters[i], "^q|(.*)|pending$")
  if queue then
    for _, member in ipairs(redis.call("ZRANGE", lanes_key(queue), 0, -1)) do
      local bar = string.find(member, "|", 1, true)
      local head = paged_min_score(lane_keys(queue, string.sub(member, 1, bar - 1), string.sub(member, bar + 1)))
      if head and (oldest == nil or head < oldest) then
        oldest = head
      end
    end
  end
end
-- Ready jobs held back by their key's rules (includes/job.lua, parked jobs).
local parked = redis.call("ZRANGE", PARKED, 0, 0, "WITHSCORES")[2]
if parked and (oldest == nil or tonumber(parked) < oldest) then
  oldest = tonumber(parked)
end
return { counters, scheduled, oldest and string.format("%.0f", oldest) or false }
