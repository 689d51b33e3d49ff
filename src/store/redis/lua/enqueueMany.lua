--[[
  enqueueMany: Store.enqueueMany(). Inserts a batch of jobs in one script: all of it or, on a
  fault, none (a script's writes are applied together).

  Guarantees: an id that exists (in any state, finished jobs too) is not inserted again, and a
  unique key held by a pending or active job returns that job instead; either way the batch's
  counts, lanes and indexes are untouched by the duplicate, so the queue length does not grow.
  Jobs due now go straight to their ready lane, others to {p}:sched. Claimers are woken when any
  inserted job is ready.

  KEYS[1] {p}:meta
  ARGV[1] epoch  ARGV[2] fresh epoch  ARGV[3] now  ARGV[4] n
  ARGV[5] "1" when the jobs come in (runAt, id) order, else "" (the client checks; the ready lanes
  rely on it, and sort a batch themselves without it)
  then n jobs of 15 values each (see includes/insert-job.lua)
  Returns the duplicates only: index (0-based), job reply, index, job reply, ...
]]
--@include "includes/prelude.lua"
--@include "includes/epoch.lua"
--@include "includes/job.lua"
--@include "includes/insert-job.lua"

local err = check_epoch()
if err then
  return err
end

local now = tonumber(ARGV[3])
local n = tonumber(ARGV[4])
local duplicates = {}
for j = 0, n - 1 do
  local existing = insert_job(6 + j * JOB_FIELDS, now, ARGV[3])
  if existing then
    duplicates[#duplicates + 1] = j
    duplicates[#duplicates + 1] = job_reply(existing)
  end
end
flush_ready(ARGV[5] == "1")
flush_counts()
if any_ready then
  redis.call("PUBLISH", WAKE, "")
end
return duplicates
