--[[
  dependents: Store.dependents(). A page of the jobs whose dependsOn names a job, in id order.

  Reads {p}:dep:<id> (score 0, so its lexical order is the ids' byte order) from after the cursor:
  the cost is the page, never the number of dependents. A dependent pruned by retention has left
  the set (prune.lua); one missing anyway is passed over.

  KEYS[1] {p}:meta
  ARGV[1] id  ARGV[2] limit  ARGV[3] cursor (the last id of the previous page, "" for the first)
  Returns {job replies, next cursor or false}.
]]
--@include "includes/prelude.lua"
--@include "includes/job.lua"

local limit = tonumber(ARGV[2])
local from = ARGV[3] == "" and "-" or "(" .. ARGV[3]
local ids = redis.call("ZRANGEBYLEX", dependents_key(ARGV[1]), from, "+", "LIMIT", 0, limit + 1)
local out = {}
local last = false
for i = 1, math.min(#ids, limit) do
  local reply = job_reply(ids[i])
  if #reply > 1 then
    out[#out + 1] = reply
  end
  last = ids[i]
end
return { out, #ids > limit and last or false }
