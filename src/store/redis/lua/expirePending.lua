--[[
  expirePending: Store.expirePending(). Pending and blocked jobs whose expiresAt has passed become
  expired.

  Guarantees: reads {p}:exp (pending and blocked jobs with an expiresAt, by expiresAt), so the cost
  is the number expired, never the queue length; each job is expired once, atomically, and can no
  longer be claimed. Jobs already claimed keep running (only pending and blocked jobs are in
  {p}:exp). An expired job's blocked dependents are settled in the same script
  (includes/dependencies.lua).

  KEYS[1] {p}:meta
  ARGV[1] epoch  ARGV[2] fresh epoch  ARGV[3] now  ARGV[4] limit
  Returns the expired jobs (job replies), then, when their expiry cancelled dependents, "c" and
  the job reply of each (Store's `cascaded`).
]]
--@include "includes/prelude.lua"
--@include "includes/epoch.lua"
--@include "includes/job.lua"
--@include "includes/dependencies.lua"

local err = check_epoch()
if err then
  return err
end

local now = tonumber(ARGV[3])
local ids = redis.call("ZRANGEBYSCORE", EXP, "-inf", ARGV[3], "LIMIT", 0, tonumber(ARGV[4]))
local out = {}
for _, id in ipairs(ids) do
  local key = job_key(id)
  local f = read_fields(key, "s", "a", "q", "t", "y", "r", "c", "hd", "ky", "pk")
  if f.s == "p" or f.s == "b" then
    expire_job(id, key, f, now, ARGV[3])
    out[#out + 1] = job_reply(id)
  else
    redis.call("ZREM", EXP, id)
  end
end
flush_dependencies()
flush_counts()
return append_cascaded(out)
