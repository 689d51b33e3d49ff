--[[
  fireSchedule: Store.fireSchedule(). Enqueues one tick's job and moves the schedule to its next
  tick, only if no one else fired this tick.

  Guarantees: compare-and-set on the stored next tick (= expectedRunAt): of any number of
  schedulers racing on a tick, exactly one fires. The tick's job id is derived from the schedule
  and tick, so even a replayed call cannot enqueue it twice.

  KEYS[1] {p}:meta
  ARGV[1] epoch  ARGV[2] fresh epoch  ARGV[3] now  ARGV[4] name  ARGV[5] expectedRunAt
  ARGV[6] nextRunAt  then the job's 19 values (see includes/insert-job.lua), or none: the schedule
  only moves on (Store.fireSchedule's null job), and 0 is returned
  Returns 0 when the tick was not this call's to fire; when it fired, 1 for a job inserted as
  given, { 1, job reply } for one inserted with dependencies (as stored: blocked or cancelled), or
  { 0, job reply } for the job that kept it from being inserted (its id or unique key taken, or its
  debounce key held: the holder, as changed); { 1, "" } for a job inserted as given that freed a
  key. Each of these tables then ends with the job replies of the key holders past their
  expiresAt that the insert expired (Store.enqueueMany), and, when their expiry cancelled
  dependents, "c" and the job reply of each (Store's `cascaded`).
]]
--@include "includes/prelude.lua"
--@include "includes/epoch.lua"
--@include "includes/job.lua"
--@include "includes/dependencies.lua"
--@include "includes/insert-job.lua"

local err = check_epoch()
if err then
  return err
end

local score = redis.call("ZSCORE", SCHEDULES, ARGV[4])
if not score or tonumber(score) ~= tonumber(ARGV[5]) then
  return 0
end
if ARGV[7] ~= nil then
  local refusal = debounce_refusal(ARGV, 7, {}, tonumber(ARGV[3]))
  if refusal then
    return refusal
  end
end
redis.call("ZADD", SCHEDULES, ARGV[6], ARGV[4])
redis.call("HSET", schedule_key(ARGV[4]), "ua", ARGV[3])
if ARGV[7] == nil then
  return 0
end
local existing, with_dependencies = insert_job(ARGV, 7, tonumber(ARGV[3]), ARGV[3])
flush_ready(true)
flush_dependencies()
flush_counts()
if any_ready then
  redis.call("PUBLISH", WAKE, "")
end
local out
if existing then
  out = { 0, job_reply(existing) }
elseif with_dependencies then
  out = { 1, job_reply(ARGV[7]) }
elseif #freed > 0 then
  out = { 1, "" }
else
  return 1
end
for _, holder in ipairs(freed) do
  out[#out + 1] = job_reply(holder)
end
return append_cascaded(out)
