--[[
  dueSchedules: Store.dueSchedules(). Schedules whose next tick is due by now, earliest first.
  Read only: fireSchedule.lua's compare-and-set decides who fires.

  KEYS[1] {p}:meta
  ARGV[1] now  ARGV[2] limit
  Returns name, nextRunAt, {field, value, ...}, name, ...
]]
--@include "includes/prelude.lua"
--@include "includes/schedules.lua"

return schedule_replies(
  redis.call("ZRANGEBYSCORE", SCHEDULES, "-inf", ARGV[1], "WITHSCORES", "LIMIT", 0, tonumber(ARGV[2]))
)
