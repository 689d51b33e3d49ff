--[[
  open: RedisStore.open(). Claims a fresh prefix for errand, or checks the one found.

  Guarantees: the first open of a prefix writes {p}:schema_version and the epoch in {p}:meta (see
  includes/epoch.lua) exactly once, however many processes open at the same time. A prefix at an
  older schema version that holds no job and no schedule is taken over at this version; one at 2
  is repaired and raised to 3 (below); the client refuses one older still that holds jobs (its
  layout cannot be read), and one written by a newer errand.

  Upgrade 2 -> 3. Errands at 2 differ in which keys they keep (includes/prelude.lua), and one that
  predates a key leaves it out of step; this puts back what such an errand can have left, in the
  same script, so no claim runs in between:
    - {p}:schn is rebuilt from {p}:schd: a schedule such an errand added is missing from it (never
      listed), one it deleted is still there.
    - Every parked job goes back to its lane (includes/job.lua, parked jobs): such an errand
      finishes a key's running job without putting the key's parked jobs back, so they would wait
      for ever. Claims park again those still held back. A parked job it finished or moved to
      {p}:sched only leaves the parked sets; the id of one it pruned leaves {p}:parked, and its
      entry in its key's set is dropped by the first unpark_first() that meets it.
  Errands at 2 still running keep writing the old way until they stop (stop them before upgrading);
  those started later refuse the prefix.

  KEYS[1] {p}:meta
  ARGV[1] a fresh epoch
  Returns {stored schema version, epoch, this script's schema version}.
]]
--@include "includes/prelude.lua"
--@include "includes/job.lua"

-- Parked jobs put back per ZRANGE: each leaves {p}:parked, so the loop ends.
local UNPARK_SLICE = 1000

local function upgrade_from_2()
  redis.call("DEL", SCHEDULE_NAMES)
  if redis.call("EXISTS", SCHEDULES) == 1 then
    redis.call("ZUNIONSTORE", SCHEDULE_NAMES, 1, SCHEDULES, "WEIGHTS", 0)
  end
  while true do
    local ids = redis.call("ZRANGE", PARKED, 0, UNPARK_SLICE - 1)
    if #ids == 0 then
      break
    end
    for _, id in ipairs(ids) do
      local key = job_key(id)
      local f = redis.call("HMGET", key, "q", "y", "t", "r", "c", "ky", "pk", "s")
      if f[7] and f[8] == "p" and not redis.call("ZSCORE", SCHED, id) then
        unpark_job(id)
      elseif f[7] then
        unpark_remove(id, key, f[3], f[6], f[2] or "0", f[4] or f[5])
      else
        redis.call("ZREM", PARKED, id)
      end
    end
  end
  -- Nothing is parked now: no rate window has parked jobs to put back when it opens.
  redis.call("DEL", PARK_WAKE, PARK_WAKE_N)
end

redis.call("SETNX", SCHEMA_VERSION_KEY, SCHEMA_VERSION)
redis.call("HSETNX", META, "epoch", ARGV[1])
local stored = tonumber(redis.call("GET", SCHEMA_VERSION_KEY))
-- Every job, in any state, is in the counters ({p}:n), which are deleted when all reach zero.
if stored < SCHEMA_VERSION and redis.call("EXISTS", COUNTS, SCHEDULES) == 0 then
  redis.call("SET", SCHEMA_VERSION_KEY, SCHEMA_VERSION)
  stored = SCHEMA_VERSION
end
if stored == 2 then
  upgrade_from_2()
  redis.call("SET", SCHEMA_VERSION_KEY, 3)
  stored = 3
end
-- Schedules written before {p}:schn (the names' index, listSchedules) are indexed once.
if redis.call("EXISTS", SCHEDULE_NAMES) == 0 and redis.call("EXISTS", SCHEDULES) == 1 then
  redis.call("ZUNIONSTORE", SCHEDULE_NAMES, 1, SCHEDULES, "WEIGHTS", 0)
end
return { stored, redis.call("HGET", META, "epoch"), SCHEMA_VERSION }
