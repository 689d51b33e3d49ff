--[[
  release: Store.release(). Gives a running attempt back at once (graceful shutdown) without using
  it up: the job is pending and ready again, and maxAttempts grows by one so the attempt number
  (the fencing token) still counts up on the next claim.

  Guarantees: compare-and-set on (id, state active, attempt); a stale attempt returns 0 and changes
  nothing. A released job wakes claimers.

  KEYS[1] {p}:meta
  ARGV[1] epoch  ARGV[2] fresh epoch  ARGV[3] now  ARGV[4] id  ARGV[5] attempt
  Returns 1 or 0. A now that is not a number fails the script before it writes
  (ERRAND_BAD_NUMBER).
]]
--@include "includes/prelude.lua"
--@include "includes/epoch.lua"
--@include "includes/job.lua"

local err = check_epoch()
if err then
  return err
end

local now = number_arg(3)
local id = ARGV[4]
local key = job_key(id)
local f = read_fields(key, "s", "a", "q", "t", "y", "v", "m", "ky")
if f.s ~= "a" or f.a ~= ARGV[5] then
  return 0
end
redis.call("HSET", key, "s", "p", "r", ARGV[3], "m", tonumber(f.m or DEFAULT_MAX_ATTEMPTS) + 1)
redis.call("HDEL", key, "l")
del_long(key, "h")
redis.call("ZREM", LEASE, id)
add_ready(id, f.q, f.y or "0", f.t, now)
if f.v then
  redis.call("ZADD", EXP, f.v, id)
end
count_active_type(f.t, -1)
if f.ky then
  count_key_active(f.t, f.ky, -1)
end
count("active", f.q, f.t, -1)
count("pending", f.q, f.t, 1)
bump("retrying", 1)
flush_counts()
redis.call("PUBLISH", WAKE, "")
return 1
