--[[
  checkpoint: Store.checkpoint(). Saves a running attempt's progress; a retry resumes from it.

  Guarantees: compare-and-set on (id, state active, attempt); a stale attempt returns 0 and
  changes nothing.

  KEYS[1] {p}:meta
  ARGV[1] epoch  ARGV[2] fresh epoch  ARGV[3] now  ARGV[4] id  ARGV[5] attempt  ARGV[6] checkpoint (JSON)
  Returns 1 or 0.
]]
--@include "includes/prelude.lua"
--@include "includes/epoch.lua"
--@include "includes/job.lua"

local err = check_epoch()
if err then
  return err
end

local key = job_key(ARGV[4])
local f = redis.call("HMGET", key, "s", "a")
if f[1] ~= "a" or f[2] ~= ARGV[5] then
  return 0
end
set_long(key, "k", ARGV[6])
return 1
