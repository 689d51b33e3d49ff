--[[
  deleteSchedule: Store.deleteSchedule(). Removes a schedule; jobs it enqueued stay.

  KEYS[1] {p}:meta
  ARGV[1] epoch  ARGV[2] fresh epoch  ARGV[3] name
  Returns 1 when it existed, else 0.
]]
--@include "includes/prelude.lua"
--@include "includes/epoch.lua"

local err = check_epoch()
if err then
  return err
end

redis.call("DEL", schedule_key(ARGV[3]))
redis.call("ZREM", SCHEDULE_NAMES, ARGV[3])
return redis.call("ZREM", SCHEDULES, ARGV[3])
