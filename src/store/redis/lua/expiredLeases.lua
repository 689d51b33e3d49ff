--[[
  expiredLeases: Store.expiredLeases(). Active jobs whose lease ran out by now, oldest lease
  first. Read only: the caller fails each with leaseExpired (failMany.lua re-checks the lease, so any
  number of sweepers may race).

  KEYS[1] {p}:meta
  ARGV[1] now  ARGV[2] limit
  Returns job replies.
]]
--@include "includes/prelude.lua"
--@include "includes/job.lua"

local ids = redis.call("ZRANGEBYSCORE", LEASE, "-inf", ARGV[1], "LIMIT", 0, tonumber(ARGV[2]))
local out = {}
for _, id in ipairs(ids) do
  local reply = job_reply(id)
  if #reply > 1 then
    out[#out + 1] = reply
  end
end
return out
