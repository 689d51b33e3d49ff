--[[
  listSchedules: Store.listSchedules(). Every schedule with its next tick, read together.

  KEYS[1] {p}:meta
  Returns name, nextRunAt, {field, value, ...}, name, ... (by next tick; the client sorts by name).
]]
--@include "includes/prelude.lua"
--@include "includes/schedules.lua"

return schedule_replies(redis.call("ZRANGE", SCHEDULES, 0, -1, "WITHSCORES"))
