--[[
  list: Store.list(). A page of jobs, latest first, with optional state, queue, type, owner and
  key filters.

  There is no index of every job by id (it would cost a waiting job about 140 bytes more); each
  state is listed from the index it already has, in that index's time order:
    pending  the ready lanes (page by page, see includes/pages.lua), {p}:sched and {p}:parked, by runAt
    blocked  {p}:blocked, by runAt
    active   {p}:lease, by leaseExpiresAt
    finished {p}:f:<state>, by finishedAt
  and several states are merged by (time, id), latest first. The cursor is "<time>:<id>" of the
  last job returned, whatever the id's length: the position it was listed at, never looked up from
  the job again (a job rescheduled or deleted between pages would move the next page or refuse it).
  Guarantees: a page costs O(limit × sources × log n) when no filter has to be checked job by job;
  a queue or type filter on a source that does not imply it (finished jobs, {p}:sched, {p}:lease,
  {p}:blocked) reads each candidate's queue and type; an owner or key filter (no index) reads each
  candidate's owner and key. At most `budget` candidates are examined per call: a page may then
  hold fewer than `limit` jobs and still have a cursor, so Redis is never held long.

  With ARGV[9] "1" (a summary page, ListParams.summary) each job reply leaves out the fields a
  JobSummary does (payload, checkpoint, result, errors, dependsOn, and their pieces): read by name,
  so a large payload is neither copied into the script nor sent.

  KEYS[1] {p}:meta
  ARGV[1] state ("" = all)  ARGV[2] queue ("")  ARGV[3] type ("")  ARGV[4] limit  ARGV[5] cursor ("")
  ARGV[6] budget  ARGV[7] owner ("")  ARGV[8] key ("")  ARGV[9] summary ("1") or ""
  Returns {job replies, next time or false, next id or false}.
]]
--@include "includes/prelude.lua"
--@include "includes/job.lua"

local want_state, want_queue, want_type = ARGV[1], ARGV[2], ARGV[3]
local limit = tonumber(ARGV[4])
local cursor = ARGV[5]
local budget = tonumber(ARGV[6])
local want_owner = ARGV[7] or ""
local want_key = ARGV[8] or ""
local summary = ARGV[9] == "1"
local BUFFER = 64

-- A summary's reply: the job's fields but those it leaves out (a long field's pieces are "<f>:<n>").
local LEFT_OUT = { p = true, k = true, x = true, e = true, dp = true }
local function summary_reply(id)
  local key = job_key(id)
  local names = {}
  for _, name in ipairs(redis.call("HKEYS", key)) do
    if not LEFT_OUT[string.match(name, "^[^:]*")] then
      names[#names + 1] = name
    end
  end
  local reply = { id }
  if #names == 0 then
    return reply
  end
  local values = redis.call("HMGET", key, unpack(names))
  for i, name in ipairs(names) do
    reply[#reply + 1] = name
    reply[#reply + 1] = values[i]
  end
  return reply
end

-- The cursor: "<time>:<id>". Times are whole epoch ms of at most 15 digits (MAX_DATE_MS has 15);
-- a sign is taken, as a store written to directly may hold times before 1970: more digits are no
-- time this store gave.
local max_score, max_id = nil, nil
if cursor ~= "" then
  local sign, score, id = string.match(cursor, "^(%-?)(%d+):(.+)$")
  if not score or #score > 15 then
    return redis.error_reply("ERRAND_INVALID_CURSOR not a cursor this store gave")
  end
  max_score, max_id = tonumber(sign .. score), id
end

local sources = {}
local function add_source(key, check)
  local src = { key = key, check = check, buf = {}, pos = 1, offset = 0, drained = false }
  sources[#sources + 1] = src
  return src
end
-- A ready lane is read page by page, latest first, from the page that holds the cursor's job.
local function add_lane(index, pages, check)
  local rank
  if max_score then
    local fence = page_for(index, max_score, max_id)
    rank = fence and redis.call("ZRANK", index, fence)
  else
    rank = redis.call("ZCARD", index) - 1
  end
  if rank and rank >= 0 then
    local src = add_source(pages .. redis.call("ZRANGE", index, rank, rank)[1], check)
    src.index, src.pages, src.rank = index, pages, rank
  end
end
local filtered = want_queue ~= "" or want_type ~= "" or want_owner ~= "" or want_key ~= ""

if want_state == "" or want_state == "pending" then
  local queues = {}
  if want_queue ~= "" then
    queues[1] = want_queue
  else
    local counters = redis.call("HGETALL", COUNTS)
    for i = 1, #counters, 2 do
      local queue = string.match(counters[i], "^q|(.*)|pending$")
      if queue then
        queues[#queues + 1] = queue
      end
    end
  end
  for _, queue in ipairs(queues) do
    for _, member in ipairs(redis.call("ZRANGE", lanes_key(queue), 0, -1)) do
      local bar = string.find(member, "|", 1, true)
      local jtype = string.sub(member, bar + 1)
      if want_type == "" or want_type == jtype then
        local index, pages = lane_keys(queue, string.sub(member, 1, bar - 1), jtype)
        add_lane(index, pages, want_owner ~= "" or want_key ~= "")
      end
    end
  end
  add_source(SCHED, filtered)
  -- Ready jobs held back by their key's rules (includes/job.lua, parked jobs), by runAt.
  add_source(PARKED, filtered)
end
if want_state == "" or want_state == "blocked" then
  add_source(BLOCKED, filtered)
end
if want_state == "" or want_state == "active" then
  add_source(LEASE, filtered)
end
for _, state in ipairs({ "completed", "dead", "cancelled", "expired" }) do
  if want_state == "" or want_state == state then
    add_source(finished_key(state), filtered)
  end
end

local max_arg = max_score and string.format("%.0f", max_score) or "+inf"
local function head(src)
  while true do
    if src.pos > #src.buf then
      if src.drained then
        if not src.index or src.rank == 0 then
          return nil
        end
        -- A lane's page read to its end: the page before it.
        src.rank = src.rank - 1
        src.key = src.pages .. redis.call("ZRANGE", src.index, src.rank, src.rank)[1]
        src.offset = 0
        src.drained = false
      end
      src.buf = redis.call("ZREVRANGEBYSCORE", src.key, max_arg, "-inf", "WITHSCORES", "LIMIT", src.offset, BUFFER)
      src.offset = src.offset + BUFFER
      src.pos = 1
      src.drained = #src.buf < 2 * BUFFER
      if #src.buf == 0 and not (src.index and src.rank > 0) then
        return nil
      end
    else
      local id, score = src.buf[src.pos], tonumber(src.buf[src.pos + 1])
      -- At the cursor's time, skip what the previous page already gave (ids at or after the cursor's);
      -- and {p}:lease's sentinel, which is no job.
      if (max_id and score == max_score and not id_less(id, max_id)) or id == LEASE_SENTINEL then
        src.pos = src.pos + 2
      else
        return id, score, src.buf[src.pos + 1]
      end
    end
  end
end

local out = {}
local last_score, last_id = false, false
local examined = 0
while #out <= limit do
  if examined >= budget then
    break
  end
  local best, best_id, best_score, best_text = nil, nil, nil, nil
  for _, src in ipairs(sources) do
    local id, score, text = head(src)
    if id and (not best or score > best_score or (score == best_score and id_less(best_id, id))) then
      best, best_id, best_score, best_text = src, id, score, text
    end
  end
  if not best then
    last_score, last_id = false, false
    break
  end
  best.pos = best.pos + 2
  examined = examined + 1
  local keep = true
  if best.check then
    local f = redis.call("HMGET", job_key(best_id), "q", "t", "ow", "ky")
    keep = (want_queue == "" or f[1] == want_queue)
      and (want_type == "" or f[2] == want_type)
      and (want_owner == "" or f[3] == want_owner)
      and (want_key == "" or f[4] == want_key)
  end
  if keep then
    local reply = summary and summary_reply(best_id) or job_reply(best_id)
    if #reply > 1 then
      if #out == limit then
        -- One more than the page: there is a next page, starting after the last job returned.
        break
      end
      out[#out + 1] = reply
    end
  end
  last_score, last_id = best_text, best_id
end
return { out, last_score, last_id }
