--[[
  enqueueMany: Store.enqueueMany(). Inserts a batch of jobs in one script: all of it or, on a
  fault, none (a script's writes are applied together).

  Guarantees: an id that exists (in any state, finished jobs too) is not inserted again, and a
  unique key held by a blocked, pending or active job returns that job instead; either way the
  batch's counts, lanes and indexes are untouched by the duplicate, so the queue length does not
  grow. A job whose debounce key a pending, never started job holds updates that job instead (its
  payload, runAt and expiresAt; includes/insert-job.lua), returned as the duplicate. Every
  duplicate is answered as stored once the script's writes are made: jobs of the batch that
  debounce onto one job all get it as the last of them left it (as the SQL stores answer). Jobs due now go straight
  to their ready lane, others to {p}:sched, blocked ones to {p}:blocked
  (includes/dependencies.lua). Claimers are woken when any inserted or debounced job is ready.
  Every dependency of a job whose id is not stored must name a stored job or one earlier in the
  batch (a skipped one stands for the job returned in its place); otherwise the script fails with ERRAND_DEPENDENCY_NOT_FOUND
  before writing anything.

  KEYS[1] {p}:meta
  ARGV[1] epoch  ARGV[2] fresh epoch  ARGV[3] now  ARGV[4] n
  ARGV[5] "1" when the jobs come in (runAt, id) order, else "" (the client checks; the ready lanes
  rely on it, and sort a batch themselves without it)
  ARGV[6] the checks to make before any write: "1" when some job has dependencies, "d" when some
  job has a debounce key (both: "1d"), else ""
  ARGV[7] the fair types among the jobs', joined by "|" (names cannot hold it; includes/fair.lua):
  each inserted job of one gets its turn
  ARGV[8] "u" when the jobs share every value but the id and the payload (and have no unique key,
  dependencies or debounce key), else ""
  then n jobs of 19 values each (see includes/insert-job.lua); or, with "u", the first job's 19
  values and then each other job's id and payload: a bulk enqueue of one type sends two values a
  job, not nineteen (each is parsed by Redis and made a Lua string before the script starts).
  Returns the duplicates and the inserted jobs with dependencies: index (0-based) and job reply
  for a duplicate, -(index + 1) and job reply (as stored) for an inserted job with dependencies;
  and "e" .. index and job reply for each job past its expiresAt that held that job's unique or
  debounce key, expired to free it (Store.enqueueMany); "c" .. index and job reply for each
  dependent their expiry cancelled (Store's `cascaded`).
]]
--@include "includes/prelude.lua"
--@include "includes/epoch.lua"
--@include "includes/job.lua"
--@include "includes/dependencies.lua"
--@include "includes/insert-job.lua"
--@include "includes/fair.lua"

local err = check_epoch()
if err then
  return err
end

local now = tonumber(ARGV[3])
local n = tonumber(ARGV[4])
local FIRST = 9
local uniform = ARGV[8] == "u"
local fair = {}
for jtype in string.gmatch(ARGV[7], "[^|]+") do
  fair[jtype] = true
end

if string.find(ARGV[6], "1", 1, true) then
  -- Checked before any write: a script's writes cannot be taken back.
  local earlier = {}
  for j = 0, n - 1 do
    local i = FIRST + j * JOB_FIELDS
    -- A job whose id is stored already is that job, as it is: it waits on nothing new, so a
    -- re-run stays a no-op after a dependency it named was pruned.
    local deps = ARGV[i + 15]
    if deps ~= "" and redis.call("EXISTS", job_key(ARGV[i])) == 0 then
      for _, dep in ipairs(dependency_ids(deps)) do
        if not earlier[dep] and redis.call("EXISTS", job_key(dep)) == 0 then
          return redis.error_reply("ERRAND_DEPENDENCY_NOT_FOUND " .. dep)
        end
      end
    end
    earlier[ARGV[i]] = true
  end
end

if string.find(ARGV[6], "d", 1, true) then
  -- Before any write too: a debounce key a waiting job of another type holds.
  local taken = {}
  for j = 0, n - 1 do
    local refusal = debounce_refusal(ARGV, FIRST + j * JOB_FIELDS, taken, now)
    if refusal then
      return refusal
    end
  end
end

-- Job j's values as insert_job reads them: in ARGV at i, or (uniform) the first job's, given
-- this job's id and payload.
local shared = nil
if uniform then
  shared = {}
  for k = 0, JOB_FIELDS - 1 do
    shared[k + 1] = ARGV[FIRST + k]
  end
end

-- Each answer's index and the id of the job to answer with, read once every write is made: a
-- holder expired for a later job may settle a job answered earlier (it waited for that holder).
local out = {}
for j = 0, n - 1 do
  local A, i = ARGV, FIRST + j * JOB_FIELDS
  if uniform then
    A, i = shared, 1
    if j > 0 then
      local at = FIRST + JOB_FIELDS + 2 * (j - 1)
      shared[1], shared[4] = ARGV[at], ARGV[at + 1]
    end
  end
  local before, before_cascaded = #freed, #cascaded
  local existing, with_dependencies = insert_job(A, i, now, ARGV[3])
  for k = before + 1, #freed do
    out[#out + 1] = "e" .. j
    out[#out + 1] = freed[k]
  end
  for k = before_cascaded + 1, #cascaded do
    out[#out + 1] = "c" .. j
    out[#out + 1] = cascaded[k]
  end
  if not existing and fair[A[i + 1]] then
    local run_at = tonumber(A[i + 6])
    local ready = run_at <= now and redis.call("HGET", job_key(A[i]), "s") == "p"
    assign_turn(A[i], A[i + 1], A[i + 17], A[i + 2], A[i + 4], ready, run_at)
  end
  if existing then
    out[#out + 1] = j
    out[#out + 1] = existing
  elseif with_dependencies then
    out[#out + 1] = -(j + 1)
    out[#out + 1] = A[i]
  end
end
flush_turns()
flush_ready(ARGV[5] == "1")
flush_dependencies()
flush_counts()
if any_ready then
  redis.call("PUBLISH", WAKE, "")
end
for k = 2, #out, 2 do
  out[k] = job_reply(out[k])
end
return out
