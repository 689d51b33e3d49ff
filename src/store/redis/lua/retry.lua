--[[
  retry: Store.retry(). A dead, cancelled or expired job goes back to pending under its id, ready
  now, with its history (errors, checkpoint, attempt) kept and at least one attempt left.

  Guarantees: atomic; other states are returned unchanged. expiresAt, result, finishedAt and the
  expired-lease count are cleared, as for a fresh job. If another pending or active job holds the
  job's unique key, nothing changes and the script fails with ERRAND_INVALID_STATE.

  KEYS[1] {p}:meta
  ARGV[1] epoch  ARGV[2] fresh epoch  ARGV[3] now  ARGV[4] id
  Returns nil (no such job) or {changed (1 or 0), job reply}.
]]
--@include "includes/prelude.lua"
--@include "includes/epoch.lua"
--@include "includes/job.lua"

local err = check_epoch()
if err then
  return err
end

local now = tonumber(ARGV[3])
local id = ARGV[4]
local key = job_key(id)
local f = read_fields(key, "s", "a", "m", "q", "t", "y")
if not f.s then
  return nil
end
if f.s ~= "d" and f.s ~= "x" and f.s ~= "e" then
  return { 0, job_reply(id) }
end
local unique = get_long(key, "u")
if unique then
  local holder = redis.call("HGET", UNIQ, unique)
  if holder and holder ~= id then
    return redis.error_reply("ERRAND_INVALID_STATE another pending or active job holds this job's unique key")
  end
  redis.call("HSET", UNIQ, unique, id)
end
local attempt = tonumber(f.a or "0")
redis.call("ZREM", finished_key(STATE_NAME[f.s]), id)
redis.call("HSET", key, "s", "p", "r", ARGV[3], "m", math.max(tonumber(f.m or DEFAULT_MAX_ATTEMPTS), attempt + 1))
redis.call("HDEL", key, "v", "z", "f")
del_long(key, "x")
add_ready(id, f.q, f.y or "0", f.t, now)
count(STATE_NAME[f.s], f.q, f.t, -1)
count("pending", f.q, f.t, 1)
if attempt > 0 then
  bump("retrying", 1)
end
flush_counts()
redis.call("PUBLISH", WAKE, "")
return { 1, job_reply(id) }
