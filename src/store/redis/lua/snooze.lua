--[[
  snooze: Store.snooze(). Ends a running attempt without failing it (ctx.snooze): the job is
  pending again at runAt, its lease and holder cleared, its errors untouched.

  Guarantees: compare-and-set on (id, state active, attempt), as release; a stale attempt returns
  0 and changes nothing. The snooze does not use up an attempt: maxAttempts grows by one (the
  attempt number still counts up as the fencing token) and snoozes counts it. The job frees its
  type's cap slot and its key's room; it keeps its place in its key's order. A job due at once
  wakes claimers.

  KEYS[1] {p}:meta
  ARGV[1] epoch  ARGV[2] fresh epoch  ARGV[3] now  ARGV[4] id  ARGV[5] attempt  ARGV[6] runAt
  Returns 1 or 0. A now or runAt that is not a number fails the script before it writes
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
local f = read_fields(key, "s", "a", "q", "t", "y", "v", "m", "sn", "ky")
if f.s ~= "a" or f.a ~= ARGV[5] then
  return 0
end
local run_at = number_arg(6)
redis.call(
  "HSET",
  key,
  "s",
  "p",
  "r",
  ARGV[6],
  "m",
  tonumber(f.m or DEFAULT_MAX_ATTEMPTS) + 1,
  "sn",
  tonumber(f.sn or "0") + 1
)
redis.call("HDEL", key, "l")
del_long(key, "h")
redis.call("ZREM", LEASE, id)
local ready = add_pending(id, f.q, f.y or "0", f.t, run_at, now)
if f.v then
  redis.call("ZADD", EXP, f.v, id)
end
count_active_type(f.t, -1)
if f.ky then
  count_key_active(f.t, f.ky, -1)
end
count("active", f.q, f.t, -1)
count("pending", f.q, f.t, 1)
-- Pending with attempts behind it, as a retrying job: the claim that takes it counts it off.
bump("retrying", 1)
flush_counts()
if ready then
  redis.call("PUBLISH", WAKE, "")
end
return 1
