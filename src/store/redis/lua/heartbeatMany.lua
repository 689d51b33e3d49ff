--[[
  heartbeatMany: Store.heartbeatMany(). Extends the leases of running attempts.

  Guarantees, per item: compare-and-set on (id, state active, attempt): the lease moves to
  now + leaseMs, in the job and in {p}:lease, and the item returns 1. An attempt that is no longer
  current (lost, cancelled, finished, or the job is gone) returns 0 and changes nothing, which
  tells its worker to stop.

  KEYS[1] {p}:meta
  ARGV[1] epoch  ARGV[2] fresh epoch  ARGV[3] now  ARGV[4] lease until  ARGV[5] n  then n × (id, attempt)
  Returns one 1 or 0 per item.
]]
--@include "includes/prelude.lua"
--@include "includes/epoch.lua"

local err = check_epoch()
if err then
  return err
end

local until_at = ARGV[4]
local n = tonumber(ARGV[5])
local out = {}
for j = 0, n - 1 do
  local id, attempt = ARGV[6 + 2 * j], ARGV[7 + 2 * j]
  local key = job_key(id)
  local f = redis.call("HMGET", key, "s", "a")
  if f[1] == "a" and f[2] == attempt then
    redis.call("HSET", key, "l", until_at)
    redis.call("ZADD", LEASE, "XX", until_at, id)
    out[#out + 1] = 1
  else
    out[#out + 1] = 0
  end
end
return out
