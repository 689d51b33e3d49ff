--[[
  putSchedule: Store.putSchedule(). Creates or replaces a recurring schedule.

  A schedule is the hash {p}:s|<name> (c cron, z timezone, t type, p payload, o options,
  ca createdAt, ua updatedAt), its next tick in {p}:schd and its name in {p}:schn. All are written
  together.

  KEYS[1] {p}:meta
  ARGV[1] epoch  ARGV[2] fresh epoch  ARGV[3] name  ARGV[4] cron  ARGV[5] timezone  ARGV[6] type
  ARGV[7] payload  ARGV[8] options  ARGV[9] nextRunAt  ARGV[10] createdAt  ARGV[11] updatedAt
]]
--@include "includes/prelude.lua"
--@include "includes/epoch.lua"

local err = check_epoch()
if err then
  return err
end

redis.call(
  "HSET",
  schedule_key(ARGV[3]),
  "c",
  ARGV[4],
  "z",
  ARGV[5],
  "t",
  ARGV[6],
  "p",
  ARGV[7],
  "o",
  ARGV[8],
  "ca",
  ARGV[10],
  "ua",
  ARGV[11]
)
redis.call("ZADD", SCHEDULES, ARGV[9], ARGV[3])
redis.call("ZADD", SCHEDULE_NAMES, 0, ARGV[3])
return 1
