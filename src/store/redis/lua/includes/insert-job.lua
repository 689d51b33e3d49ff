--[[
  insert-job: inserting new jobs (enqueueMany, fireSchedule).

  A new job is ARGV[i .. i+14]: id, type, queue, payload, priority, weight, runAt, expiresAt,
  maxAttempts, backoff, retryQueue, delivery, timeoutMs, uniqueKey, owner, with "" for null (and for
  at_least_once delivery, and for the default backoff policy). Ids are unique across live and finished jobs (the hash outlives the
  job's run), unique keys while the holder is pending or active ({p}:uniq). Jobs due now go to
  their ready lanes when the caller runs flush_ready(), in one batch per lane.
]]
-- JOB_FIELDS: the ARGV entries per new job, a NewJob's fields (written in by npm run gen).
--@new-job-fields
local any_ready = false

-- Inserts the job at ARGV[i], created at `now` (the caller's ARGV text `now_text` is stored as is);
-- returns nil, or the id of the job that already has its id or unique key.
local function insert_job(i, now, now_text)
  local id = ARGV[i]
  local key = job_key(id)
  if redis.call("EXISTS", key) == 1 then
    return id
  end
  local unique = ARGV[i + 13]
  if unique ~= "" then
    local holder = redis.call("HGET", UNIQ, unique)
    if holder then
      return holder
    end
  end
  local jtype, queue, prio = ARGV[i + 1], ARGV[i + 2], ARGV[i + 4]
  local run_at = tonumber(ARGV[i + 6])
  local args = { "t", jtype, "q", queue, "s", "p" }
  push_long(args, "p", ARGV[i + 3])
  local function put(field, value, default)
    if value ~= default then
      args[#args + 1] = field
      args[#args + 1] = value
    end
  end
  put("y", prio, DEFAULT_PRIORITY)
  put("w", ARGV[i + 5], DEFAULT_WEIGHT)
  -- Left out when equal to createdAt (see includes/job.lua).
  put("r", ARGV[i + 6], now_text)
  put("v", ARGV[i + 7], "")
  put("m", ARGV[i + 8], DEFAULT_MAX_ATTEMPTS)
  put("b", ARGV[i + 9], "")
  put("rq", ARGV[i + 10], "")
  put("d", ARGV[i + 11], "")
  put("o", ARGV[i + 12], "")
  put("ow", ARGV[i + 14], "")
  if unique ~= "" then
    push_long(args, "u", unique)
  end
  put("c", now_text, nil)
  redis.call("HSET", key, unpack(args))
  if unique ~= "" then
    redis.call("HSET", UNIQ, unique, id)
  end
  if ARGV[i + 7] ~= "" then
    redis.call("ZADD", EXP, ARGV[i + 7], id)
  end
  if run_at <= now then
    add_ready_later(id, queue, prio, jtype, run_at)
    any_ready = true
  else
    redis.call("ZADD", SCHED, run_at, id)
  end
  count("pending", queue, jtype, 1)
  return nil
end
