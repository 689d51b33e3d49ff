--[[
  upgradeSlice: RedisStore.open(), after open.lua. Puts back in their lanes up to `limit` of the
  jobs parked when the prefix was raised from schema version 2 to 3 ({p}:upgrade3, see open.lua):
  an errand at 2 could finish a key's running job without putting the key's parked jobs back, so
  they would wait for ever. The client calls it until it returns 0; each call is short (~33 µs a
  job), so Redis serves other clients in between.

  Guarantees: each job of {p}:upgrade3 is handled once and leaves the set, which is deleted once
  empty, so any number of processes may call this at once, or one may stop half way and another
  finish (each open goes on while the set exists). A job still parked and pending goes back to its
  lane (a claim parks it again if it is still held back); one an errand at 2 finished or moved to
  {p}:sched only leaves the parked sets; one it pruned only leaves {p}:upgrade3 (its entry in its
  key's set is dropped by the first unpark_first() that meets it). A job put back meanwhile by
  an errand at 3 is not parked, and only leaves {p}:upgrade3; one parked again since is put back.

  KEYS[1] {p}:meta
  ARGV[1] limit: at most this many jobs handled
  Returns how many are left to handle.
]]
--@include "includes/prelude.lua"
--@include "includes/job.lua"

local UPGRADE_PARKED = P .. "upgrade3"

local ids = redis.call("ZRANGE", UPGRADE_PARKED, 0, tonumber(ARGV[1]) - 1)
for _, id in ipairs(ids) do
  local key = job_key(id)
  local f = redis.call("HMGET", key, "q", "y", "t", "r", "c", "ky", "pk", "s")
  if f[7] and f[8] == "p" and not redis.call("ZSCORE", SCHED, id) then
    unpark_job(id)
  elseif f[7] then
    unpark_remove(id, key, f[3], f[6], f[2] or "0", f[4] or f[5])
  end
  redis.call("ZREM", UPGRADE_PARKED, id)
end
return redis.call("ZCARD", UPGRADE_PARKED)
