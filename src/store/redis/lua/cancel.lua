--[[
  cancel: Store.cancel(). A blocked, pending or active job becomes cancelled.

  Guarantees: atomic with respect to claims and reports: a pending job leaves its lane (or
  {p}:sched) and can never be claimed; a blocked one leaves {p}:blocked; an active job's lease and
  cap slot are freed, and every later report of its attempt is stale (the state is no longer
  active). The job gives up its key's room and place in order, and its debounce key. Its blocked
  dependents are settled in the same script (includes/dependencies.lua). Finished jobs are
  returned unchanged.

  KEYS[1] {p}:meta
  ARGV[1] epoch  ARGV[2] fresh epoch  ARGV[3] now  ARGV[4] id
  Returns nil (no such job) or {changed (1 or 0), job reply}, then, when the cancel cancelled
  dependents, "c" and the job reply of each (Store's `cascaded`). A now that is not a number fails
  the script before it writes (ERRAND_BAD_NUMBER).
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
local f = read_fields(key, "s", "a", "q", "t", "y", "v", "r", "c", "hd", "ky", "pk")
if not f.s then
  return nil
end
if f.s == "p" then
  remove_pending(id, f.q, f.y or "0", f.t, run_at_of(f), f.ky, f.pk)
  if f.v then
    redis.call("ZREM", EXP, id)
  end
  count("pending", f.q, f.t, -1)
  if f.a and f.a ~= "0" then
    bump("retrying", -1)
  end
elseif f.s == "b" then
  redis.call("ZREM", BLOCKED, id)
  if f.v then
    redis.call("ZREM", EXP, id)
  end
  redis.call("HDEL", key, "bb")
  count("blocked", f.q, f.t, -1)
elseif f.s == "a" then
  redis.call("ZREM", LEASE, id)
  count_active_type(f.t, -1)
  if f.ky then
    count_key_active(f.t, f.ky, -1)
  end
  count("active", f.q, f.t, -1)
else
  return { 0, job_reply(id) }
end
finish(id, key, "x", ARGV[3])
count("cancelled", f.q, f.t, 1)
if f.hd then
  settle_dependents(id, "cancelled", now, ARGV[3])
  flush_dependencies()
end
flush_counts()
return append_cascaded({ 1, job_reply(id) })
