--[[
  failMany: Store.failMany(), one item per call: the store sends one call per failed attempt of a
  batch, all in one pipeline (one round trip; each item atomic on its own). Records a failed
  attempt: back to pending at retryAt (in the same or the retry queue), or to dead.

  Guarantees: compare-and-set on (id, state active, attempt); with leaseExpired, also on the lease
  having run out by now (the sweeper's check, so a heartbeat that won the race keeps the job). A
  stale call returns nil and changes nothing. The error is appended to the job's history; an
  expired lease also counts towards the poison-pill limit (z). A retry due at once wakes claimers.
  A job that ends dead settles its blocked dependents (includes/dependencies.lua).

  KEYS[1] {p}:meta
  ARGV[1] epoch  ARGV[2] fresh epoch  ARGV[3] now  ARGV[4] id  ARGV[5] attempt  ARGV[6] error (JSON)
  ARGV[7] retryAt ("" = dead)  ARGV[8] retryQueue ("" = same queue)  ARGV[9] leaseExpired ("1" or "")
  Returns "pending", "dead" or nil; for a job whose end cancelled dependents, { "dead", "c", job
  reply of each (Store's `cascaded`) }. A now or retryAt that is not a number fails the script
  before it writes (ERRAND_BAD_NUMBER): its writes are not rolled back, and a bad score would
  fail a ZADD after the job's fields were written.
]]
--@include "includes/prelude.lua"
--@include "includes/epoch.lua"
--@include "includes/job.lua"
--@include "includes/dependencies.lua"

local err = check_epoch()
if err then
  return err
end

local now = number_arg(3)
local id = ARGV[4]
local key = job_key(id)
local f = read_fields(key, "s", "a", "l", "q", "t", "y", "v", "z", "hd", "ky")
if f.s ~= "a" or f.a ~= ARGV[5] then
  return nil
end
-- Checked before the first write (append_error); a stale attempt is answered as before.
local retry_at = ARGV[7] ~= "" and number_arg(7) or nil
local lease_expired = ARGV[9] == "1"
if lease_expired and not (f.l and tonumber(f.l) <= now) then
  return nil
end

append_error(key, ARGV[6])
if lease_expired then
  redis.call("HSET", key, "z", tonumber(f.z or "0") + 1)
end
redis.call("ZREM", LEASE, id)
count_active_type(f.t, -1)
count("active", f.q, f.t, -1)
if f.ky then
  count_key_active(f.t, f.ky, -1)
end

if retry_at then
  local queue = ARGV[8] ~= "" and ARGV[8] or f.q
  redis.call("HSET", key, "s", "p", "r", ARGV[7], "q", queue)
  redis.call("HDEL", key, "l")
  del_long(key, "h")
  local ready = add_pending(id, queue, f.y or "0", f.t, retry_at, now)
  if f.v then
    redis.call("ZADD", EXP, f.v, id)
  end
  count("pending", queue, f.t, 1)
  bump("retrying", 1)
  flush_counts()
  if ready then
    redis.call("PUBLISH", WAKE, "")
  end
  return "pending"
end

finish(id, key, "d", ARGV[3])
count("dead", f.q, f.t, 1)
if f.hd then
  settle_dependents(id, "dead", now, ARGV[3])
  flush_dependencies()
end
flush_counts()
if #cascaded > 0 then
  return append_cascaded({ "dead" })
end
return "dead"
