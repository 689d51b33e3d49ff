--[[
  getSchedule: Store.getSchedule(). One schedule with its next tick, read together.

  KEYS[1] {p}:meta
  ARGV[1] name
  Returns name, nextRunAt, {field, value, ...}, or an empty reply.
]]
--@include "includes/prelude.lua"
--@include "includes/schedules.lua"

local score = redis.call("ZSCORE", SCHEDULES, ARGV[1])
return schedule_replies(score and { ARGV[1], score } or {})
