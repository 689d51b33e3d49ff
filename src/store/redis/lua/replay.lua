--[[
  replay: Store.replay(). Copies a finished job under a new id as a fresh pending job (attempt 0,
  no errors, checkpoint or result), ready now; the original stays as it was.

  Guarantees: atomic; a blocked, pending or active source is returned unchanged. If the new id is taken, or
  another blocked, pending or active job holds the unique key, nothing changes and the script
  fails with ERRAND_INVALID_STATE; unless that holder is past its expiresAt (no claim can take it,
  no sweep has reached it): it is expired first, its dependents settled, as an enqueue would
  (includes/dependencies.lua, expire_unique_holder). A now that is not a number fails the script
  before it writes (ERRAND_BAD_NUMBER). The copy keeps the original's expiry rule: an original with an expiresAt
  gives the copy as long to start as it had (now + v - c, held to MAX_DATE_MS as backoff and
  snooze are: no later date fits the API), and a copy of a job that ended expired
  is stored expired at once (finishedAt and expiresAt now, attempt 0): it never runs (as in
  Rickover), holds no unique key and wakes no one.

  KEYS[1] {p}:meta
  ARGV[1] epoch  ARGV[2] fresh epoch  ARGV[3] now  ARGV[4] id  ARGV[5] new id
  Returns nil (no such source) or {changed (1 or 0), job reply (the new job when changed)}, then,
  when it expired the holder of the unique key, "e" and that job's reply, and "c" and the job reply
  of each dependent its expiry cancelled (Store's `expired` and `cascaded`), each marker only when
  something follows it.
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
local id, new_id = ARGV[4], ARGV[5]
local flat = redis.call("HGETALL", job_key(id))
if #flat == 0 then
  return nil
end
local f = {}
for i = 1, #flat, 2 do
  f[flat[i]] = flat[i + 1]
end
if f.s == "p" or f.s == "a" or f.s == "b" then
  return { 0, job_reply(id) }
end
local new_key = job_key(new_id)
if redis.call("EXISTS", new_key) == 1 then
  return redis.error_reply("ERRAND_INVALID_STATE the new id is taken")
end
local expired = f.s == "e"
local unique = get_long(job_key(id), "u")
-- The holder of the unique key this replay expired, if any.
local freed = nil
if unique and not expired then
  local holder = redis.call("HGET", UNIQ, unique)
  if holder then
    if not expire_unique_holder(holder, now, ARGV[3]) then
      return redis.error_reply("ERRAND_INVALID_STATE another blocked, pending or active job holds this job's unique key")
    end
    freed = holder
  end
  redis.call("HSET", UNIQ, unique, new_id)
end
-- Kept: type, queue, payload, priority, weight, maxAttempts, backoff, retryQueue, delivery,
-- timeoutMs, uniqueKey (with the pieces of long values), owner, onDependencyFailure, key.
-- Everything else starts afresh: the copy waits for no dependency (dependsOn is not kept), is no
-- debounce target (debounceKey is not kept) and has not snoozed.
local KEEP = { t = true, q = true, p = true, y = true, w = true, m = true, b = true, rq = true, d = true, o = true, u = true, ow = true, df = true, ky = true }
local args = { "s", expired and "e" or "p", "c", ARGV[3] } -- runAt = createdAt: r left out
local expires_at = nil
if expired then
  expires_at = now
  args[#args + 1] = "f"
  args[#args + 1] = ARGV[3]
elseif f.v then
  -- MAX_DATE_MS (src/validation.ts): the end of year 9999.
  expires_at = math.min(now + (tonumber(f.v) - tonumber(f.c)), 253402300799999)
end
if expires_at then
  args[#args + 1] = "v"
  args[#args + 1] = expires_at
end
for i = 1, #flat, 2 do
  local field = flat[i]
  local base = string.match(field, "^([^:]+)") or field
  if KEEP[base] then
    args[#args + 1] = field
    args[#args + 1] = flat[i + 1]
  end
end
redis.call("HSET", new_key, unpack(args))
if expired then
  redis.call("ZADD", finished_key("expired"), now, new_id)
  count("expired", f.q, f.t, 1)
  flush_counts()
  return { 1, job_reply(new_id) }
end
if expires_at then
  redis.call("ZADD", EXP, expires_at, new_id)
end
if f.ky then
  enter_key_order(new_id, f.t, f.ky, now)
end
add_ready(new_id, f.q, f.y or "0", f.t, now)
count("pending", f.q, f.t, 1)
flush_dependencies()
flush_counts()
redis.call("PUBLISH", WAKE, "")
return requeue_reply(new_id, freed)
