--[[
  open: RedisStore.open(). Claims a fresh prefix for errand, or checks the one found.

  Guarantees: the first open of a prefix writes {p}:schema_version and the epoch in {p}:meta (see
  includes/epoch.lua) exactly once, however many processes open at the same time. A prefix at an
  older schema version that holds no job and no schedule is taken over at this version; one at 2
  is repaired and raised to 3 (below); the client refuses one older still that holds jobs (its
  layout cannot be read), and one written by a newer errand.

  Upgrade 2 -> 3. Errands at 2 differ in which keys they keep (includes/prelude.lua), and one that
  predates a key leaves it out of step; this puts back what such an errand can have left:
    - {p}:schn is rebuilt from {p}:schd, here: a schedule such an errand added is missing from it
      (never listed), one it deleted is still there. One ZUNIONSTORE, ~1 µs a schedule: schedules
      are few (one per recurring job, not per run).
    - Every parked job goes back to its lane (includes/job.lua, parked jobs): such an errand
      finishes a key's running job without putting the key's parked jobs back, so they would wait
      for ever. That takes ~33 µs a job, too long for one script (Redis serves no one meanwhile:
      200,000 parked jobs would block it for seconds), so this only renames {p}:parked to
      {p}:upgrade3, the jobs still to put back, and the client then calls upgradeSlice.lua until
      that set is gone, ~1,000 jobs a call. Claims run between calls: they park again in a new
      {p}:parked what is still held back, and, with the {p}:pwake entries of errands at 2 deleted
      here, no rate window puts back a job that upgradeSlice.lua will. Until a job's turn comes it
      is missing from list() and stats' oldest ready job (both read {p}:parked).
  Errands at 2 still running keep writing the old way until they stop (stop them before upgrading);
  those started later refuse the prefix.

  KEYS[1] {p}:meta
  ARGV[1] a fresh epoch
  Returns {stored schema version, epoch, this script's schema version, 1 if parked jobs of the
  upgrade from 2 are still to be put back (upgradeSlice.lua), else 0}.
]]
--@include "includes/prelude.lua"
--@include "includes/job.lua"

-- The parked jobs of the upgrade from 2 still to be put back (upgradeSlice.lua).
local UPGRADE_PARKED = P .. "upgrade3"

local function upgrade_from_2()
  redis.call("DEL", SCHEDULE_NAMES)
  if redis.call("EXISTS", SCHEDULES) == 1 then
    redis.call("ZUNIONSTORE", SCHEDULE_NAMES, 1, SCHEDULES, "WEIGHTS", 0)
  end
  if redis.call("EXISTS", PARKED) == 1 then
    redis.call("RENAME", PARKED, UPGRADE_PARKED)
  end
  -- Every job parked so far is to be put back: no rate window is left to put any back when it opens.
  redis.call("UNLINK", PARK_WAKE, PARK_WAKE_N)
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
return { stored, redis.call("HGET", META, "epoch"), SCHEMA_VERSION, redis.call("EXISTS", UPGRADE_PARKED) }
