--[[
  open: RedisStore.open(). Claims a fresh prefix for errand, or checks the one found.

  Guarantees: the first open of a prefix writes {p}:schema_version and the epoch in {p}:meta (see
  includes/epoch.lua) exactly once, however many processes open at the same time. A prefix at an
  older schema version that holds no job and no schedule is taken over at this version; the client
  refuses one that does (its layout cannot be read), and one written by a newer errand.

  KEYS[1] {p}:meta
  ARGV[1] a fresh epoch
  Returns {stored schema version, epoch, this script's schema version}.
]]
--@include "includes/prelude.lua"

redis.call("SETNX", SCHEMA_VERSION_KEY, SCHEMA_VERSION)
redis.call("HSETNX", META, "epoch", ARGV[1])
local stored = tonumber(redis.call("GET", SCHEMA_VERSION_KEY))
-- Every job, in any state, is in the counters ({p}:n), which are deleted when all reach zero.
if stored < SCHEMA_VERSION and redis.call("EXISTS", COUNTS, SCHEDULES) == 0 then
  redis.call("SET", SCHEMA_VERSION_KEY, SCHEMA_VERSION)
  stored = SCHEMA_VERSION
end
-- Schedules written before {p}:schn (the names' index, listSchedules) are indexed once.
if redis.call("EXISTS", SCHEDULE_NAMES) == 0 and redis.call("EXISTS", SCHEDULES) == 1 then
  redis.call("ZUNIONSTORE", SCHEDULE_NAMES, 1, SCHEDULES, "WEIGHTS", 0)
end
return { stored, redis.call("HGET", META, "epoch"), SCHEMA_VERSION }
