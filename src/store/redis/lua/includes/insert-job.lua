--[[
  insert-job: inserting new jobs (enqueueMany, fireSchedule). Include includes/dependencies.lua
  before it.

  A new job is A[i .. i+18] (A: ARGV, or a table laid out as ARGV is): id, type, queue, payload,
  priority, weight, runAt, expiresAt, maxAttempts, backoff, retryQueue, delivery, timeoutMs,
  uniqueKey, owner, dependsOn, onDependencyFailure, key, debounceKey, with "" for null (and for
  at_least_once delivery, and for the default backoff policy). Ids are unique across live and
  finished jobs (the hash outlives the job's run), unique keys while the holder is blocked,
  pending or active ({p}:uniq). Jobs due now go to their ready lanes when the caller runs
  flush_ready(), in one batch per lane.

  Debounce: while the job a debounce key names in {p}:deb is pending and was never started, a new
  job with the key is not inserted; that job takes its payload, runAt and expiresAt (none when
  the new job has none: the last enqueue of a burst decides all three) and is returned in its
  place. A job with a debounce key goes into its lane at once, not in the batch, so a later job of
  the same call can move it.

  A job with dependencies starts pending when every one is completed (or, under "run", finished
  in any state), cancelled when under "cancel" one already ended dead, cancelled or expired, else
  blocked (see includes/dependencies.lua). A dependency that names no job counts as finished here:
  enqueueMany refuses such a call before inserting anything.
]]
-- JOB_FIELDS: the ARGV entries per new job, a NewJob's fields (written in by npm run gen).
--@new-job-fields
local any_ready = false
-- The key holders past their expiresAt this call expired to free a new job's key, in order (the
-- caller reports them: Store.enqueueMany).
local freed = {}

-- Expires unique key holder `holder` when stale_holder says so (the key is then free), noting it
-- in `freed`; true when it did.
local function expire_stale(holder, now, now_text)
  if not expire_unique_holder(holder, now, now_text) then
    return false
  end
  freed[#freed + 1] = holder
  return true
end

-- Appends `field` and `value` to HSET arguments `args` unless the value is the field's default.
local function put(args, field, value, default)
  if value ~= default then
    args[#args + 1] = field
    args[#args + 1] = value
  end
end

-- Inserts the job at A[i], created at `now` (the caller's ARGV text `now_text` is stored as is);
-- returns nil, or the id of the job that already has its id or unique key; and, second, true when
-- the job has dependencies (its stored state is then the caller's to report).
-- An error reply when job i's debounce key is held by a waiting (pending, never started) job of
-- another type, else nil: debouncing onto it would give that job a payload its own type never
-- checked. A caller checks every job before its first write (a script's writes cannot be taken
-- back); `taken` holds the keys the call's earlier jobs take, with their types.
-- A holder past its expiresAt refuses nothing: the insert expires it.
local function debounce_refusal(A, i, taken, now)
  local debounce = A[i + 18]
  if debounce == "" then
    return nil
  end
  -- The holder's type and owner ("" for none), as this call's earlier jobs left the key.
  local holder = taken[debounce]
  if holder == nil then
    local id = redis.call("HGET", DEBOUNCE, debounce)
    if id then
      local h = read_fields(job_key(id), "s", "a", "t", "v", "ow")
      if h.s == "p" and (not h.a or h.a == "0") and not stale_holder(h, now, true) then
        holder = { h.t, h.ow or "" }
      end
    end
  end
  if holder == nil then
    taken[debounce] = { A[i + 1], A[i + 14] }
    return nil
  end
  -- The key in hex: it may hold any character, a line break too, which an error reply cannot.
  local hex = string.gsub(debounce, ".", function(c)
    return string.format("%02x", string.byte(c))
  end)
  if holder[2] ~= A[i + 14] then
    -- Another owner's job: named by nothing (transport.ts, debounceKeyHeldByOwner).
    return redis.error_reply("ERRAND_DEBOUNCE_OWNER " .. hex)
  end
  if holder[1] ~= A[i + 1] then
    return redis.error_reply("ERRAND_DEBOUNCE_HELD " .. holder[1] .. " " .. A[i + 1] .. " " .. hex)
  end
  return nil
end

local function insert_job(A, i, now, now_text)
  local id = A[i]
  local key = job_key(id)
  local debounce = A[i + 18]
  if debounce ~= "" then
    local holder = redis.call("HGET", DEBOUNCE, debounce)
    if holder then
      local hkey = job_key(holder)
      local h = read_fields(hkey, "s", "a", "q", "t", "y", "r", "c", "ky", "pk", "ft", "v", "hd")
      if stale_holder(h, now, true) then
        -- No claim can take it: it holds the key no longer (Store.enqueueMany).
        expire_job(holder, hkey, h, now, now_text)
        freed[#freed + 1] = holder
      elseif h.s == "p" and (not h.a or h.a == "0") then
        local run_at = tonumber(A[i + 6])
        remove_pending(holder, h.q, h.y or "0", h.t, run_at_of(h), h.ky, h.pk)
        set_long(hkey, "p", A[i + 3])
        -- The latest enqueue's expiry too, or none when it sets none: keeping the holder's own
        -- while runAt moves past it would answer with a job that never runs.
        local expires_at = A[i + 7]
        if expires_at ~= "" then
          redis.call("HSET", hkey, "r", A[i + 6], "v", expires_at)
          redis.call("ZADD", EXP, expires_at, holder)
        else
          redis.call("HSET", hkey, "r", A[i + 6])
          if h.v then
            redis.call("HDEL", hkey, "v")
            redis.call("ZREM", EXP, holder)
          end
        end
        local ready = add_pending(holder, h.q, h.y or "0", h.t, run_at, now)
        if h.ft then
          fair_move(holder, h.ft, h.q, h.y or "0", h.t, run_at_of(h), h.q, h.y or "0", run_at, ready)
        end
        if ready then
          any_ready = true
        end
        stands[id] = holder
        return holder
      end
      -- Kept by a job that left without freeing it (keys lost): the new job takes the key.
    end
  end
  if redis.call("EXISTS", key) == 1 then
    return id
  end
  local unique = A[i + 13]
  if unique ~= "" then
    local holder = redis.call("HGET", UNIQ, unique)
    if holder and expire_stale(holder, now, now_text) then
      holder = nil
    end
    if holder then
      stands[id] = holder
      return holder
    end
  end
  local jtype, queue, prio = A[i + 1], A[i + 2], A[i + 4]
  local run_at = tonumber(A[i + 6])
  local deps_text = A[i + 15]
  local state, deps, blocked_by, failed, failed_state = "p", nil, 0, nil, nil
  if deps_text ~= "" then
    deps_text, deps, state, blocked_by, failed, failed_state = resolve_new(deps_text, A[i + 16] == "run")
  end
  local args = { "t", jtype, "q", queue, "s", state }
  push_long(args, "p", A[i + 3])
  put(args, "y", prio, DEFAULT_PRIORITY)
  put(args, "w", A[i + 5], DEFAULT_WEIGHT)
  -- Left out when equal to createdAt (see includes/job.lua).
  put(args, "r", A[i + 6], now_text)
  put(args, "v", A[i + 7], "")
  put(args, "m", A[i + 8], DEFAULT_MAX_ATTEMPTS)
  put(args, "b", A[i + 9], "")
  put(args, "rq", A[i + 10], "")
  put(args, "d", A[i + 11], "")
  put(args, "o", A[i + 12], "")
  put(args, "ow", A[i + 14], "")
  put(args, "df", A[i + 16], "cancel")
  put(args, "ky", A[i + 17], "")
  put(args, "dk", debounce, "")
  if unique ~= "" then
    push_long(args, "u", unique)
  end
  put(args, "c", now_text, nil)
  if deps then
    push_long(args, "dp", deps_text)
    if state == "b" then
      put(args, "bb", blocked_by, nil)
    elseif state == "x" then
      put(args, "f", now_text, nil)
      push_long(args, "e", "[" .. dependency_error(0, failed, failed_state, now_text) .. "]")
    end
  end
  redis.call("HSET", key, unpack(args))
  if deps then
    add_edges(id, deps)
    if state == "x" then
      -- Never ran and never will: no unique key held, no expiry, straight to its retention index.
      redis.call("ZADD", finished_key("cancelled"), now, id)
      count("cancelled", queue, jtype, 1)
      return nil, true
    end
  end
  if unique ~= "" then
    redis.call("HSET", UNIQ, unique, id)
  end
  if A[i + 17] ~= "" then
    enter_key_order(id, jtype, A[i + 17], now)
  end
  if A[i + 7] ~= "" then
    redis.call("ZADD", EXP, A[i + 7], id)
  end
  if state == "b" then
    redis.call("ZADD", BLOCKED, run_at, id)
    count("blocked", queue, jtype, 1)
    return nil, true
  end
  if debounce ~= "" then
    redis.call("HSET", DEBOUNCE, debounce, id)
    if add_pending(id, queue, prio, jtype, run_at, now) then
      any_ready = true
    end
  elseif run_at <= now then
    add_ready_later(id, queue, prio, jtype, run_at)
    any_ready = true
  else
    redis.call("ZADD", SCHED, run_at, id)
  end
  count("pending", queue, jtype, 1)
  return nil, deps ~= nil
end
