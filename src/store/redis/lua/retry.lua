--[[
  retry: Store.retry(). A dead, cancelled or expired job goes back to pending under its id, ready
  now, with its history (errors, checkpoint, attempt) kept and at least one attempt left; or to
  blocked, when some of its own dependencies are unfinished (blocked, pending or active; a pruned
  one counts as finished).

  Guarantees: atomic; other states are returned unchanged. expiresAt, result, finishedAt and the
  expired-lease count are cleared, as for a fresh job, and the debounce key: the job is no debounce
  target. With a key, it takes its place in the key's order again by its createdAt. If another blocked, pending or active job
  holds the job's unique key, nothing changes and the script fails with ERRAND_INVALID_STATE;
  unless that holder is past its expiresAt (no claim can take it, no sweep has reached it): it is
  expired first, its dependents settled, as an enqueue would (includes/dependencies.lua,
  expire_unique_holder). Its blocked dependents (under "run", they had counted it finished) count
  it unfinished again; dependents it cancelled stay cancelled. A now that is not a number fails
  the script before it writes (ERRAND_BAD_NUMBER).

  KEYS[1] {p}:meta
  ARGV[1] epoch  ARGV[2] fresh epoch  ARGV[3] now  ARGV[4] id
  Returns nil (no such job) or {changed (1 or 0), job reply}, then, when it expired the holder of
  the job's unique key, "e" and that job's reply, and "c" and the job reply of each dependent its
  expiry cancelled (Store's `expired` and `cascaded`), each marker only when something follows it.
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
local f = read_fields(key, "s", "a", "m", "q", "t", "y", "hd", "ky", "c")
if not f.s then
  return nil
end
if f.s ~= "d" and f.s ~= "x" and f.s ~= "e" then
  return { 0, job_reply(id) }
end
local unique = get_long(key, "u")
-- The holder of its unique key this retry expired, if any.
local freed = nil
if unique then
  local holder = redis.call("HGET", UNIQ, unique)
  if holder and holder ~= id then
    if not expire_unique_holder(holder, now, ARGV[3]) then
      return redis.error_reply("ERRAND_INVALID_STATE another blocked, pending or active job holds this job's unique key")
    end
    freed = holder
  end
  redis.call("HSET", UNIQ, unique, id)
end

-- The reply: the job, then the holder it expired and the dependents that expiry cancelled.
local function answer()
  flush_dependencies()
  flush_counts()
  return requeue_reply(id, freed)
end

local attempt = tonumber(f.a or "0")
local blocked_by = unfinished_count(dependency_ids(get_long(key, "dp")))
redis.call("ZREM", finished_key(STATE_NAME[f.s]), id)
redis.call("HSET", key, "s", blocked_by > 0 and "b" or "p", "r", ARGV[3], "m", math.max(tonumber(f.m or DEFAULT_MAX_ATTEMPTS), attempt + 1))
-- dk: a job retried by hand is no debounce target.
redis.call("HDEL", key, "v", "z", "f", "dk")
del_long(key, "x")
if f.ky then
  enter_key_order(id, f.t, f.ky, f.c)
end
count(STATE_NAME[f.s], f.q, f.t, -1)
if f.hd then
  dependency_retried(id)
end
if blocked_by > 0 then
  redis.call("HSET", key, "bb", blocked_by)
  redis.call("ZADD", BLOCKED, now, id)
  count("blocked", f.q, f.t, 1)
  return answer()
end
add_ready(id, f.q, f.y or "0", f.t, now)
count("pending", f.q, f.t, 1)
if attempt > 0 then
  bump("retrying", 1)
end
redis.call("PUBLISH", WAKE, "")
return answer()
