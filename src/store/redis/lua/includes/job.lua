--[[
  job: the job hash and the indexes a job moves between.

  A job is one hash, {p}:j:<id>, in every state. Fields are one letter, and a field at its
  default is left out, so a waiting job stays a small listpack-encoded hash (Redis keeps a hash
  compact while it has at most hash-max-listpack-entries fields and no value longer than
  hash-max-listpack-value, 64 bytes by default):

    t type        q queue        s state: b(locked) p(ending) a(ctive) c(ompleted) d(ead) x (cancelled)
                                 e(xpired)
    p payload*    k checkpoint*  x result*              y priority (0)      w weight (1)
    r runAt (c)   v expiresAt    a attempt (0)          m maxAttempts (5)   b backoff (packed by the client;
                                                                            absent: errand's default policy)
    rq retryQueue d delivery: "1" = at_most_once (at_least_once)           o timeoutMs
    u uniqueKey*  l leaseExpiresAt  h workerId*        e errors* ("[]")     z leaseExpirations (0)
    c createdAt   g startedAt    f finishedAt        ow owner
    dp dependsOn* (JSON text of ids)  bb blockedBy (only while blocked)
    df onDependencyFailure: "run" ("cancel")
    ky key        dk debounceKey (kept after the job leaves {p}:deb)          sn snoozes (0)
    hd "1" once some job depends on this one (not a record field): a completion or failure looks
       for dependents only then, so a job without any pays nothing (includes/dependencies.lua)

  ky and dk are names and short texts, stored whole (never in pieces), so a claim compares a key
  from the one field it reads.

  * Long text. A value over CHUNK bytes (and up to CHUNKED_MAX) is stored in pieces: the first in
  the field itself, the rest in "<field>:1", "<field>:2", ..., cut between UTF-8 characters, so a
  100-byte payload does not turn the whole hash into a hashtable (about 2.3x the memory). Larger
  values are stored whole: the hash is big anyway, and many pieces would cost more than they save.

  A new job due at once has runAt = createdAt, so insert-job leaves r out (the 13 bytes bring a
  100-byte job under the next allocation class); read it with run_at_of(). Later writes of r (a
  retry, a reschedule, a release) always set it.
]]
--@include "includes/pages.lua"

local CHUNK = 64
local CHUNKED_MAX = 1024
-- The defaults a job's hash leaves out (src/job-fields.ts JOB_DEFAULTS): DEFAULT_PRIORITY,
-- DEFAULT_WEIGHT and DEFAULT_MAX_ATTEMPTS, as text, written in by npm run gen.
--@job-defaults

local STATE_NAME = { b = "blocked", p = "pending", a = "active", c = "completed", d = "dead", x = "cancelled", e = "expired" }

-- Appends field/value pairs for a long text value to `args` (an HSET argument list).
local function push_long(args, field, value)
  local n = #value
  if n <= CHUNK or n > CHUNKED_MAX then
    args[#args + 1] = field
    args[#args + 1] = value
    return 1
  end
  local i, part = 1, 0
  while i <= n do
    local j = i + CHUNK - 1
    if j < n then
      -- Back up to a character boundary: bytes 0x80-0xBF continue a UTF-8 sequence.
      while j > i do
        local b = string.byte(value, j + 1)
        if b < 128 or b >= 192 then
          break
        end
        j = j - 1
      end
    end
    args[#args + 1] = part == 0 and field or (field .. ":" .. part)
    args[#args + 1] = string.sub(value, i, j)
    part = part + 1
    i = j + 1
  end
  return part
end

-- Deletes the pieces of a long value from piece `from` on.
local function drop_pieces(key, field, from)
  local i = from
  while redis.call("HDEL", key, field .. ":" .. i) == 1 do
    i = i + 1
  end
end

local function set_long(key, field, value)
  local args = {}
  local parts = push_long(args, field, value)
  redis.call("HSET", key, unpack(args))
  drop_pieces(key, field, parts)
end

local function del_long(key, field)
  if redis.call("HDEL", key, field) == 1 then
    drop_pieces(key, field, 1)
  end
end

local function get_long(key, field)
  local value = redis.call("HGET", key, field)
  if not value then
    return nil
  end
  local i = 1
  local parts = { value }
  while true do
    local more = redis.call("HGET", key, field .. ":" .. i)
    if not more then
      break
    end
    parts[#parts + 1] = more
    i = i + 1
  end
  return table.concat(parts)
end

-- The job's runAt from fields read with read_fields(…, "r", "c", …).
local function run_at_of(f)
  return f.r or f.c
end

-- Sets `field` to `value`, or deletes it when `value` is the default (nil or equal to `default`).
local function set_or_del(key, field, value, default)
  if value == nil or value == default then
    redis.call("HDEL", key, field)
  else
    redis.call("HSET", key, field, value)
  end
end

-- A job hash as a Lua table (first pieces of long values only).
local function read_fields(key, ...)
  local values = redis.call("HMGET", key, ...)
  local out = {}
  for i, name in ipairs({ ... }) do
    out[name] = values[i]
  end
  return out
end

-- The reply for one job: its id, then the hash's field/value pairs. The client decodes it.
local function job_reply(id)
  local flat = redis.call("HGETALL", job_key(id))
  table.insert(flat, 1, id)
  return flat
end

---------------------------------------------------------------------------------------------------
-- Counters: {p}:n holds, per state, the total and the count per queue and per type; a counter that
-- reaches zero is deleted, so stats() reads exactly the non-zero ones. Changes are gathered in a
-- table and written once per script (a bulk enqueue touches each counter once, not per job).

local deltas = {}

local function bump(field, d)
  deltas[field] = (deltas[field] or 0) + d
end

local function count(state, queue, jtype, d)
  bump(state, d)
  bump("q|" .. queue .. "|" .. state, d)
  bump("t|" .. jtype .. "|" .. state, d)
end

-- Adds one to by_queue[queue][jtype]: scripts that move many jobs tally them per queue and type and
-- count each tally once (count_moves()), rather than building the counters' names for every job.
local function tally(by_queue, queue, jtype)
  local by_type = by_queue[queue]
  if not by_type then
    by_type = {}
    by_queue[queue] = by_type
  end
  by_type[jtype] = (by_type[jtype] or 0) + 1
end

local active_deltas = {}

local function count_active_type(jtype, d)
  active_deltas[jtype] = (active_deltas[jtype] or 0) + d
end

-- Counts each of by_queue's tallies (tally()) as that many jobs of its queue and type moving from
-- state `from` to state `to` (nil: the job is gone), {p}:act included.
local function count_moves(by_queue, from, to)
  for queue, by_type in pairs(by_queue) do
    for jtype, n in pairs(by_type) do
      count(from, queue, jtype, -n)
      if to then
        count(to, queue, jtype, n)
      end
      if from == "active" then
        count_active_type(jtype, -n)
      elseif to == "active" then
        count_active_type(jtype, n)
      end
    end
  end
end

-- Active jobs per (type, key), in {p}:kact: changed wherever a job with a key enters or leaves
-- active, gathered as the type's are.
local key_active_deltas = {}
-- Defined with the parked jobs, below; flush_counts puts a key's parked jobs back as room opens.
local unpark_first

local function count_key_active(jtype, jkey, d)
  local field = jtype .. "|" .. jkey
  key_active_deltas[field] = (key_active_deltas[field] or 0) + d
end

local function flush_counts()
  for field, d in pairs(key_active_deltas) do
    if d ~= 0 and redis.call("HINCRBY", KEY_ACTIVE, field, d) <= 0 then
      redis.call("HDEL", KEY_ACTIVE, field)
    end
    if d < 0 then
      -- Room for -d more of the key's jobs (includes/job.lua, parked jobs).
      unpark_first(field, -d)
    end
  end
  key_active_deltas = {}
  for field, d in pairs(deltas) do
    if d ~= 0 and redis.call("HINCRBY", COUNTS, field, d) == 0 then
      redis.call("HDEL", COUNTS, field)
    end
  end
  deltas = {}
  for jtype, d in pairs(active_deltas) do
    if d ~= 0 and redis.call("HINCRBY", ACT, jtype, d) <= 0 then
      redis.call("HDEL", ACT, jtype)
    end
  end
  active_deltas = {}
end

---------------------------------------------------------------------------------------------------
-- Where a pending job waits: in its ready lane when runAt <= now, else in {p}:sched (claims promote
-- it when due). Lanes are per queue, priority and type, so a claim for some types, or one held back
-- by a type's cap, passes over whole lanes instead of scanning their jobs.

local function add_ready(id, queue, prio, jtype, run_at)
  local index, pages = lane_keys(queue, prio, jtype)
  paged_add(index, pages, run_at, id)
  redis.call("ZADD", lanes_key(queue), -tonumber(prio), prio .. "|" .. jtype)
end

-- add_ready() for many jobs: gathered per lane, written by flush_ready() in one batch each.
local ready_batch = {}

local function add_ready_later(id, queue, prio, jtype, run_at)
  local lane = queue .. "|" .. prio .. "|" .. jtype
  local batch = ready_batch[lane]
  if not batch then
    batch = { queue = queue, prio = prio, jtype = jtype }
    ready_batch[lane] = batch
  end
  batch[#batch + 1] = run_at
  batch[#batch + 1] = id
end

-- `ordered`: the jobs were added in (runAt, id) order.
local function flush_ready(ordered)
  for _, batch in pairs(ready_batch) do
    local index, pages = lane_keys(batch.queue, batch.prio, batch.jtype)
    paged_add_many(index, pages, batch, ordered)
    redis.call("ZADD", lanes_key(batch.queue), -tonumber(batch.prio), batch.prio .. "|" .. batch.jtype)
  end
  ready_batch = {}
end

local function add_pending(id, queue, prio, jtype, run_at, now)
  if run_at <= now then
    add_ready(id, queue, prio, jtype, run_at)
    return true
  end
  redis.call("ZADD", SCHED, run_at, id)
  return false
end

-- Frees the job's unique key, if it still holds it.
local function release_unique(id, key)
  local unique = get_long(key, "u")
  if unique and redis.call("HGET", UNIQ, unique) == id then
    redis.call("HDEL", UNIQ, unique)
  end
end

---------------------------------------------------------------------------------------------------
-- Keys and debounce. Every job with a key is in its (type, key)'s {p}:ko set while blocked, pending
-- or active, whatever its type's rules: they come with each claim, not with the job.

local function enter_key_order(id, jtype, jkey, created_at)
  redis.call("ZADD", key_order_key(jtype, jkey), created_at, id)
end

---------------------------------------------------------------------------------------------------
-- Parked jobs. A ready job that a claim finds held back by its key's rules (its keyConcurrency
-- full, `ordered` and not its key's earliest, its keyRateLimit's window full) leaves its lane for
-- its key's parked set: otherwise every later claim would walk a busy key's backlog job by job
-- before reaching another key's jobs, and past HELD_MAX (claim.lua) would never reach them. A
-- parked job is pending all the while. It goes back to its lane when room may have opened, which
-- these scripts tell without the key's rules (they come with each claim, not with the job):
--   - a running job of its key stops running (kact down by n): its first n parked jobs;
--   - a job leaves its key's order (finished): the key's new earliest job, if parked;
--   - a pending job of its key that is not parked leaves its place (cancel, reschedule, expiry):
--     its first parked job;
--   - a keyRateLimit's window opens ({p}:pwake, read by claims): as many as the window holds.
-- A job put back that still cannot start is parked again by the next claim that meets it.
--   {p}:pk|<type>|<key>  zset, every score 0: the key's parked jobs in claim order, park_member()
--   {p}:pkt|<type>       zset: the same for every key of the type (stats' held-back sample)
--   {p}:parked           zset: every parked job by runAt (list, stats' oldest ready job)
--   {p}:pwake            zset: "<type>|<key>" of keys parked by a rate limit, by when it opens
--   {p}:pwaken           hash: "<type>|<key>" -> how many of its jobs to put back then
--   "pk" in the job's hash: "1" while it is parked.

local function park_key(field)
  return P .. "pk|" .. field
end

local function park_type_key(jtype)
  return P .. "pkt|" .. jtype
end

-- Members order as claims do: priority desc, then runAt, then id bytes (sortable() is fixed-width
-- within its sign class, whose first byte tells its width).
local function park_member(prio, run_at, id)
  return sortable(-tonumber(prio)) .. sortable(tonumber(run_at)) .. id
end

local function park_member_id(member)
  local at = 1
  for _ = 1, 2 do
    at = at + (string.sub(member, at, at) == "1" and 1 or 21)
  end
  return string.sub(member, at)
end

-- Parks ready job `id` (already out of its lane) of `jtype` and `jkey`.
local function park(id, key, jtype, jkey, prio, run_at)
  local member = park_member(prio, run_at, id)
  redis.call("ZADD", park_key(jtype .. "|" .. jkey), 0, member)
  redis.call("ZADD", park_type_key(jtype), 0, member)
  redis.call("ZADD", PARKED, run_at, id)
  redis.call("HSET", key, "pk", "1")
end

-- Takes parked job `id` out of the parked sets (the caller puts it elsewhere).
local function unpark_remove(id, key, jtype, jkey, prio, run_at)
  local member = park_member(prio, run_at, id)
  redis.call("ZREM", park_key(jtype .. "|" .. jkey), member)
  redis.call("ZREM", park_type_key(jtype), member)
  redis.call("ZREM", PARKED, id)
  redis.call("HDEL", key, "pk")
end

-- Puts parked job `id` back in its lane; false when it is not parked.
local function unpark_job(id)
  local key = job_key(id)
  local f = redis.call("HMGET", key, "q", "y", "t", "r", "c", "ky", "pk")
  if not f[7] then
    return false
  end
  local prio, run_at = f[2] or "0", f[4] or f[5]
  unpark_remove(id, key, f[3], f[6], prio, run_at)
  add_ready(id, f[1], prio, f[3], run_at)
  return true
end

-- Puts the first `n` parked jobs of "<type>|<key>" `field` back in their lanes. An entry whose job
-- is no longer parked (left by an errand at schema version 2 that pruned or moved the job, see
-- open.lua) is dropped and does not count, so it cannot stand in front of the key's parked jobs.
function unpark_first(field, n)
  local set = park_key(field)
  while n > 0 do
    local members = redis.call("ZRANGE", set, 0, n - 1)
    if #members == 0 then
      return
    end
    for _, member in ipairs(members) do
      if unpark_job(park_member_id(member)) then
        n = n - 1
      else
        redis.call("ZREM", set, member)
      end
    end
  end
end

-- Takes a pending job out of its lane (found by its runAt), {p}:sched or its key's parked jobs
-- (not out of {p}:exp). A job with a key that was not parked frees its place: its key's first
-- parked job goes back to its lane.
---------------------------------------------------------------------------------------------------
-- A fair type's ready jobs with a turn are also in their lane's fair set (includes/fair.lua).

local function fair_set_key(queue, prio, jtype)
  return P .. "fr|" .. queue .. "|" .. prio .. "|" .. jtype
end

-- A fair set's member: the job's runAt, zero-padded to 15 digits (epoch ms to the year 9999), "|"
-- and its id, so a turn's jobs sort by runAt, then by id's bytes. No id holds "|": a member
-- without one is a bare id, as sets written before this form hold.
local function fair_member(run_at, id)
  return string.format("%015d|%s", run_at, id)
end

-- The id of fair set member `member`, in either form.
local function fair_member_id(member)
  local bar = string.find(member, "|", 1, true)
  if bar then
    return string.sub(member, bar + 1)
  end
  return member
end

-- Moves a waiting job's fair-set entry with the job (reschedule, debounce): out of its old lane's
-- set, and into its new lane's when it is ready there now, with the same turn, so it is taken in
-- turn order at its new priority and runAt, as the SQL stores' fair index orders it. Left in the
-- old set, a claim walking that set would take it at its old place.
local function fair_move(id, turn, old_queue, old_prio, jtype, old_run_at, queue, prio, run_at, ready)
  redis.call("ZREM", fair_set_key(old_queue, old_prio, jtype), fair_member(tonumber(old_run_at), id), id)
  if ready then
    redis.call("ZADD", fair_set_key(queue, prio, jtype), turn, fair_member(tonumber(run_at), id))
  end
end

local function remove_pending(id, queue, prio, jtype, run_at, jkey, parked)
  if parked then
    unpark_remove(id, job_key(id), jtype, jkey, prio, run_at)
    return
  end
  if redis.call("ZREM", SCHED, id) ~= 1 then
    local index, pages = lane_keys(queue, prio, jtype)
    if paged_remove(index, pages, run_at, id) and redis.call("EXISTS", index) == 0 then
      redis.call("ZREM", lanes_key(queue), prio .. "|" .. jtype)
    end
  end
  if jkey then
    unpark_first(jtype .. "|" .. jkey, 1)
  end
end

local function leave_key_order(id, jtype, jkey)
  local order = key_order_key(jtype, jkey)
  redis.call("ZREM", order, id)
  if redis.call("EXISTS", park_key(jtype .. "|" .. jkey)) == 1 then
    local head = redis.call("ZRANGE", order, 0, 0)[1]
    if head then
      unpark_job(head)
    end
  end
end

-- Frees the debounce key, if the job still holds it.
local function release_debounce(id, dk)
  if redis.call("HGET", DEBOUNCE, dk) == id then
    redis.call("HDEL", DEBOUNCE, dk)
  end
end

-- Records a finished job: state, finishedAt, the state's retention index; lease fields go, and the
-- job's unique key, debounce key and place in its key's order.
local function finish(id, key, code, now)
  local f = redis.call("HMGET", key, "t", "ky", "dk")
  redis.call("HSET", key, "s", code, "f", now)
  redis.call("HDEL", key, "l")
  del_long(key, "h")
  redis.call("ZADD", finished_key(STATE_NAME[code]), now, id)
  release_unique(id, key)
  if f[2] then
    leave_key_order(id, f[1], f[2])
  end
  if f[3] then
    release_debounce(id, f[3])
  end
end
