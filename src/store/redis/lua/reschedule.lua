--[[
  reschedule: Store.reschedule(). Moves a pending or blocked job in time, priority or queue.

  Guarantees: only a pending or blocked job changes (atomically: out of its lane or {p}:sched,
  fields updated, back where its new runAt puts it (a fair job's entry in its lane's fair set with it,
  keeping its turn); a blocked job stays blocked, its new values
  applying once it is unblocked); other states are returned unchanged. A job made due at once wakes
  claimers.

  KEYS[1] {p}:meta
  ARGV[1] epoch  ARGV[2] fresh epoch  ARGV[3] now  ARGV[4] id
  ARGV[5] runAt  ARGV[6] priority  ARGV[7] queue  ("" = unchanged)
  Returns nil (no such job) or {changed (1 or 0), job reply}. A now or runAt that is not a number
  fails the script before it writes (ERRAND_BAD_NUMBER).
]]
--@include "includes/prelude.lua"
--@include "includes/epoch.lua"
--@include "includes/job.lua"

local err = check_epoch()
if err then
  return err
end

local now = number_arg(3)
if ARGV[5] ~= "" then
  number_arg(5)
end
local id = ARGV[4]
local key = job_key(id)
local f = read_fields(key, "s", "q", "t", "y", "r", "c", "ky", "pk", "ft")
if not f.s then
  return nil
end
if f.s ~= "p" and f.s ~= "b" then
  return { 0, job_reply(id) }
end
local blocked = f.s == "b"
if not blocked then
  remove_pending(id, f.q, f.y or "0", f.t, run_at_of(f), f.ky, f.pk)
end
local run_at = ARGV[5] ~= "" and ARGV[5] or run_at_of(f)
local prio = ARGV[6] ~= "" and ARGV[6] or (f.y or "0")
local queue = ARGV[7] ~= "" and ARGV[7] or f.q
redis.call("HSET", key, "r", run_at, "q", queue)
set_or_del(key, "y", prio, "0")
if queue ~= f.q then
  local state = blocked and "blocked" or "pending"
  count(state, f.q, f.t, -1)
  count(state, queue, f.t, 1)
  flush_counts()
end
if blocked then
  redis.call("ZADD", BLOCKED, run_at, id)
else
  local ready = add_pending(id, queue, prio, f.t, tonumber(run_at), now)
  if f.ft then
    fair_move(id, f.ft, f.q, f.y or "0", f.t, run_at_of(f), queue, prio, run_at, ready)
  end
  if ready then
    redis.call("PUBLISH", WAKE, "")
  end
end
return { 1, job_reply(id) }
