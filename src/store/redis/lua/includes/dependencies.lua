--[[
  dependencies: jobs that wait for other jobs (dependsOn), and what a dependency's end does to them.

  A job with unfinished dependencies is blocked (s = "b"): it is in {p}:blocked (score runAt, for
  list) and in no ready lane nor {p}:sched, so claims never see it; bb counts its unfinished
  dependencies. The reverse edges are {p}:dep:<dependency id> (score 0, member the dependent's id),
  and the dependency carries hd = "1" from its first dependent on: completing or failing a job
  without hd reads nothing more.

  - A completion counts one dependency fewer for each blocked dependent; none left: pending.
  - A job ending dead, cancelled or expired settles its blocked dependents: under "cancel" (the
    default) each ends cancelled with a dependency_failed error entry, and its own blocked
    dependents are settled in turn (a worklist, not recursion: chains may be long); under "run"
    each counts one dependency fewer.
  - The caller runs flush_dependencies() at the end: one wake-up when a dependent became ready.
  - The dependents a script cancelled are in `cascaded`, in order; the script answers with them
    (Store's `cascaded`), through append_cascaded() or by reading the list.
  - A job holding a unique key while blocked or pending past its expiresAt (no claim can take it,
    no sweep has reached it) holds it no longer: expire_unique_holder() expires it as
    expirePending would, for an enqueue, a retry or a replay that wants the key.

  Ids match JOB_ID_PATTERN ([A-Za-z0-9_.:@+=/-]): a dependsOn text is a JSON array of plain
  strings, read with a pattern and written by concatenation (cjson would escape "/").
]]

-- Dependents are read in slices, so a job with very many keeps the script's memory bounded.
local DEPENDENTS_SLICE = 1000
local dependency_woke = false
-- The ids of the jobs settle_dependents cancelled in this script, in order.
local cascaded = {}

local function dependency_ids(text)
  local ids = {}
  if text then
    for id in string.gmatch(text, '"([^"]*)"') do
      ids[#ids + 1] = id
    end
  end
  return ids
end

local function ids_json(ids)
  if #ids == 0 then
    return "[]"
  end
  return '["' .. table.concat(ids, '","') .. '"]'
end

-- Calls fn(id) for each dependent of `dep`, in id order.
local function each_dependent(dep, fn)
  local key = dependents_key(dep)
  local from = "-"
  while true do
    local ids = redis.call("ZRANGEBYLEX", key, from, "+", "LIMIT", 0, DEPENDENTS_SLICE)
    for _, id in ipairs(ids) do
      fn(id)
    end
    if #ids < DEPENDENTS_SLICE then
      return
    end
    from = "(" .. ids[#ids]
  end
end

-- Records that `id` depends on each of `deps`.
local function add_edges(id, deps)
  for _, dep in ipairs(deps) do
    redis.call("ZADD", dependents_key(dep), 0, id)
    redis.call("HSET", job_key(dep), "hd", "1")
  end
end

-- A blocked job with no dependency left: pending, in its lane or {p}:sched by its own runAt; a
-- fair job's turn (given at enqueue) puts it in its lane's fair set when it is ready now, as a
-- promotion from {p}:sched does. `f` holds its q, t, y, a, r, c, ft.
local function unblock(id, key, f, now)
  redis.call("ZREM", BLOCKED, id)
  redis.call("HSET", key, "s", "p")
  redis.call("HDEL", key, "bb")
  count("blocked", f.q, f.t, -1)
  count("pending", f.q, f.t, 1)
  if f.a and f.a ~= "0" then
    bump("retrying", 1)
  end
  -- Straight into its lane, not batched: a later step of the same script (an expiry sweep) may
  -- take it out again.
  local run_at = tonumber(run_at_of(f))
  if add_pending(id, f.q, f.y or "0", f.t, run_at, now) then
    if f.ft then
      redis.call("ZADD", fair_set_key(f.q, f.y or "0", f.t), f.ft, fair_member(run_at, id))
    end
    dependency_woke = true
  end
end

-- Counts one dependency of blocked job `id` as done; unblocks it when it was the last.
local function one_fewer(id, key, f, now)
  local left = tonumber(f.bb or "1") - 1
  if left <= 0 then
    unblock(id, key, f, now)
  else
    redis.call("HSET", key, "bb", left)
  end
end

local function dependency_error(attempt, dep, state, now_text)
  return '{"attempt":' .. attempt .. ',"message":"dependency ' .. dep .. " ended " .. state
    .. '","kind":"dependency_failed","dependency":"' .. dep .. '","at":' .. now_text .. "}"
end

-- MAX_ERROR_HISTORY (src/validation.ts): how many entries a job's error history keeps.
--@error-history

-- Where the JSON object that opens at `i` of `s` closes (its "}"): a brace in a string (a
-- message's text) is skipped with the string, and a quote escaped in one does not end it.
local function object_end(s, i)
  local depth = 0
  local p = i
  while true do
    p = string.find(s, '[{}"]', p)
    local c = string.byte(s, p)
    if c == 34 then
      repeat
        p = string.find(s, '["\\]', p + 1)
        local escaped = string.byte(s, p) == 92
        if escaped then
          p = p + 1
        end
      until not escaped
    elseif c == 123 then
      depth = depth + 1
    else
      depth = depth - 1
      if depth == 0 then
        return p
      end
    end
    p = p + 1
  end
end

-- Appends one entry (JSON text) to a job's error history, keeping the most recent
-- MAX_ERROR_HISTORY: the append that would pass it drops the oldest (a history stored longer
-- before the bound is cut to it). The history is trimmed as text, so the entries kept keep their
-- exact text (cjson would reorder their keys and escape "/").
local function append_error(key, entry)
  local errors = get_long(key, "e")
  if not errors or errors == "[]" then
    set_long(key, "e", "[" .. entry .. "]")
    return
  end
  -- Every entry is a flat object with one "attempt" key, so counting the key counts the entries,
  -- in C, without walking each entry's strings: a quote in a string is escaped, and no key but
  -- "attempt" ends in attempt, so no string's text can read as the key.
  local count, p = 0, 1
  while true do
    p = string.find(errors, '"attempt":', p, true)
    if not p then
      break
    end
    count = count + 1
    p = p + 10
  end
  local from = 2
  for _ = 1, count - MAX_ERROR_HISTORY + 1 do
    from = string.find(errors, "{", object_end(errors, from) + 1, true) or #errors
  end
  local kept = string.sub(errors, from, -2)
  set_long(key, "e", kept == "" and "[" .. entry .. "]" or "[" .. kept .. "," .. entry .. "]")
end

local BLOCKED_FIELDS = { "s", "bb", "df", "q", "t", "y", "a", "r", "c", "v", "hd", "ft" }

-- Job `root` just ended in `root_state` (dead, cancelled or expired): settles its blocked
-- dependents, and those of every dependent this cancels. Call only when root has hd.
local function settle_dependents(root, root_state, now, now_text)
  local work = { root, root_state }
  while #work > 0 do
    local state = table.remove(work)
    local dep = table.remove(work)
    each_dependent(dep, function(id)
      local key = job_key(id)
      local f = read_fields(key, unpack(BLOCKED_FIELDS))
      if f.s ~= "b" then
        return
      end
      if f.df == "run" then
        one_fewer(id, key, f, now)
        return
      end
      redis.call("ZREM", BLOCKED, id)
      if f.v then
        redis.call("ZREM", EXP, id)
      end
      redis.call("HDEL", key, "bb")
      append_error(key, dependency_error(f.a or "0", dep, state, now_text))
      finish(id, key, "x", now_text)
      cascaded[#cascaded + 1] = id
      count("blocked", f.q, f.t, -1)
      count("cancelled", f.q, f.t, 1)
      if f.hd then
        work[#work + 1] = id
        work[#work + 1] = "cancelled"
      end
    end)
  end
end

-- Job `dep` just completed: each blocked dependent counts one dependency fewer.
local function dependency_completed(dep, now)
  each_dependent(dep, function(id)
    local key = job_key(id)
    local f = read_fields(key, unpack(BLOCKED_FIELDS))
    if f.s == "b" then
      one_fewer(id, key, f, now)
    end
  end)
end

-- Job `dep` was retried: its blocked dependents (under "run", they had counted it finished)
-- count it unfinished again.
local function dependency_retried(dep)
  each_dependent(dep, function(id)
    local key = job_key(id)
    if redis.call("HGET", key, "s") == "b" then
      redis.call("HINCRBY", key, "bb", 1)
    end
  end)
end

-- How many of `deps` are unfinished (blocked, pending or active); a missing (pruned) one is finished.
local function unfinished_count(deps)
  local n = 0
  for _, dep in ipairs(deps) do
    local s = redis.call("HGET", job_key(dep), "s")
    if s == "b" or s == "p" or s == "a" then
      n = n + 1
    end
  end
  return n
end

-- Whether some blocked job depends on `id` (prune keeps such a job).
local function has_blocked_dependent(id)
  local key = dependents_key(id)
  local from = "-"
  while true do
    local ids = redis.call("ZRANGEBYLEX", key, from, "+", "LIMIT", 0, DEPENDENTS_SLICE)
    for _, dependent in ipairs(ids) do
      if redis.call("HGET", job_key(dependent), "s") == "b" then
        return true
      end
    end
    if #ids < DEPENDENTS_SLICE then
      return false
    end
    from = "(" .. ids[#ids]
  end
end

-- A pruned job's edges: its dependents' set, and its place in its dependencies' sets.
local function drop_edges(id, deps_text)
  redis.call("DEL", dependents_key(id))
  for _, dep in ipairs(dependency_ids(deps_text)) do
    redis.call("ZREM", dependents_key(dep), id)
  end
end

---------------------------------------------------------------------------------------------------
-- New jobs with dependencies (insert-job.lua). Within one enqueueMany call, a job skipped because
-- its unique key is taken stands for the job holding it: `stands` maps the one to the other.

local stands = {}

-- The dependencies of a new job as stored: returns the dependsOn text (rewritten only when an id
-- stood for another job, or two came to name the same job), the ids, the initial state code
-- ("p", "b" or "x"), blockedBy, and for "x" the first failed dependency and its state's name.
local function resolve_new(text, run_policy)
  local deps, seen, changed = {}, {}, false
  for dep in string.gmatch(text, '"([^"]*)"') do
    local real = stands[dep] or dep
    if real ~= dep then
      changed = true
    end
    if seen[real] then
      changed = true
    else
      seen[real] = true
      deps[#deps + 1] = real
    end
  end
  local blocked_by, failed, failed_state = 0, nil, nil
  for _, dep in ipairs(deps) do
    local s = redis.call("HGET", job_key(dep), "s")
    if s == "b" or s == "p" or s == "a" then
      blocked_by = blocked_by + 1
    elseif (s == "d" or s == "x" or s == "e") and not failed then
      failed, failed_state = dep, STATE_NAME[s]
    end
  end
  local state = "p"
  if failed and not run_policy then
    state = "x"
  elseif blocked_by > 0 then
    state = "b"
  end
  return changed and ids_json(deps) or text, deps, state, blocked_by, failed, failed_state
end

-- Appends to the reply `out` the marker "c" and the job replies of the dependents this script
-- cancelled (nothing at all when it cancelled none), and returns `out`.
local function append_cascaded(out)
  if #cascaded == 0 then
    return out
  end
  out[#out + 1] = "c"
  for _, id in ipairs(cascaded) do
    out[#out + 1] = job_reply(id)
  end
  return out
end

-- A retry's or replay's reply: 1 and the job `id`, then the marker "e" and the key holder the
-- call expired (`freed`, if any), then the dependents that expiry cancelled (append_cascaded).
local function requeue_reply(id, freed)
  local out = { 1, job_reply(id) }
  if freed then
    out[#out + 1] = "e"
    out[#out + 1] = job_reply(freed)
  end
  return append_cascaded(out)
end

-- One wake-up when dependents became ready.
local function flush_dependencies()
  if dependency_woke then
    redis.call("PUBLISH", WAKE, "")
    dependency_woke = false
  end
end

-- Expires pending or blocked job `id` (key `key`; `f` its fields "s", "a", "q", "t", "y", "r",
-- "c", "hd", "ky", "pk"): out of its lanes and {p}:exp, finished as expired, its dependents
-- settled. expirePending's move, also made by an enqueue freeing a key (includes/insert-job.lua).
local function expire_job(id, key, f, now, now_text)
  redis.call("ZREM", EXP, id)
  if f.s == "p" then
    remove_pending(id, f.q, f.y or "0", f.t, run_at_of(f), f.ky, f.pk)
    if f.a and f.a ~= "0" then
      bump("retrying", -1)
    end
  else
    redis.call("ZREM", BLOCKED, id)
    redis.call("HDEL", key, "bb")
  end
  finish(id, key, "e", now_text)
  count(STATE_NAME[f.s], f.q, f.t, -1)
  count("expired", f.q, f.t, 1)
  if f.hd then
    settle_dependents(id, "expired", now, now_text)
  end
end

-- Whether `h` (the fields "s", "a" and "v" of a job holding a unique key, or with `debounce` a
-- debounce key) is a job no claim can take: blocked or pending (for a debounce key, pending and
-- never started) past its expiresAt. Such a holder holds its key no longer (Store.enqueueMany).
local function stale_holder(h, now, debounce)
  if not h.v or tonumber(h.v) > now then
    return false
  end
  if debounce then
    return h.s == "p" and (not h.a or h.a == "0")
  end
  return h.s == "p" or h.s == "b"
end

-- Expires `holder`, which holds a unique key, when stale_holder says so: true when it did (the key
-- is then free). An enqueue's, a retry's and a replay's freeing of a key.
local function expire_unique_holder(holder, now, now_text)
  local hkey = job_key(holder)
  local f = read_fields(hkey, "s", "a", "v", "q", "t", "y", "r", "c", "hd", "ky", "pk")
  if not stale_holder(f, now, false) then
    return false
  end
  expire_job(holder, hkey, f, now, now_text)
  return true
end
