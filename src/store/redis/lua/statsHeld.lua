--[[
  statsHeld: Store.stats() with `limits`: what each given type's held-back count and busiest keys
  are made of (src/store/held-back.ts computes them from this reply; redis/held-sample.ts decodes
  it). Reads only; writes nothing.

  Per type: its first `limit` ready jobs (pending, due, not expired, queue not paused) in claim
  order (priority desc, runAt, id) across its lanes in every queue, the jobs that came due in
  {p}:sched but no claim has moved to their lane yet, and its parked jobs ({p}:pkt|<type>, in
  claim order: includes/job.lua). Due by ARGV[1], as a claim at that now judges them (claim.lua):
  a job in a lane or parked whose runAt is after it (made ready by a clock ahead of this one) is
  not ready, and a lane, in (runAt, id) order, has nothing due behind such a head. For each key
  among them, how many, whether
  its earliest hot job is among them (ordered types: the first of {p}:ko|<type>|<key>, as a claim
  reads it), its starts in its keyRateLimit window; every key with running jobs ({p}:kact); and the
  type's starts in its rateLimit window.

  Cost: bounded, whatever the backlog: per type, up to `limit` + 1 jobs read (one HMGET each) from
  the heads of its lanes (includes/pages.lua, read page by page; parked jobs not yet due by now,
  which only a claimer's clock ahead of this one leaves, are read and passed over), one ZRANGE or ZCOUNT per key met;
  once per call, the queues' lane indexes, HGETALL of {p}:kact (the running keyed jobs) and at
  most SCHED_READ due entries of {p}:sched. When more jobs came due than that, the sample may miss
  some, and every type is reported not exact.

  KEYS[1] {p}:meta
  ARGV[1] now  ARGV[2] limit  ARGV[3] nTypes, then per type: type, ordered ("1" or ""),
  keyRateLimit's periodMs ("" = none), rateLimit's periodMs ("" = none)
  Returns per type, in order: {exact (1 or 0), ready jobs without a key, the type's starts,
  {key, ready, heads, active, starts, ...}}.
]]
--@include "includes/prelude.lua"
--@include "includes/job.lua"

local SCHED_READ = 1000
local BUFFER = 32
local PAUSED = P .. "paused"

local now = tonumber(ARGV[1])
local limit = tonumber(ARGV[2])
local n_types = tonumber(ARGV[3])
local types = {}
local wanted = {}
for i = 0, n_types - 1 do
  local j = 4 + 4 * i
  local t = {
    name = ARGV[j],
    ordered = ARGV[j + 1] == "1",
    key_period = ARGV[j + 2] ~= "" and tonumber(ARGV[j + 2]) or nil,
    period = ARGV[j + 3] ~= "" and tonumber(ARGV[j + 3]) or nil,
  }
  types[#types + 1] = t
  wanted[t.name] = t
end

local paused_cache = {}
local function paused(queue)
  local p = paused_cache[queue]
  if p == nil then
    p = redis.call("HEXISTS", PAUSED, queue) == 1
    paused_cache[queue] = p
  end
  return p
end

-- A window's starts: those after now - period (and any dated later, as a claim counts them).
local function starts(scope, period)
  return redis.call("ZCOUNT", P .. "rate|" .. scope, string.format("(%.0f", now - period), "+inf")
end

-- Jobs that came due but are still in {p}:sched, per wanted type, in claim order.
local due = redis.call("ZRANGEBYSCORE", SCHED, "-inf", now, "WITHSCORES", "LIMIT", 0, SCHED_READ + 1)
local due_cut = #due > 2 * SCHED_READ
local due_of = {}
for i = 1, math.min(#due, 2 * SCHED_READ), 2 do
  local f = redis.call("HMGET", job_key(due[i]), "t", "q", "y")
  if f[1] and wanted[f[1]] and not paused(f[2]) then
    local list = due_of[f[1]] or {}
    list[#list + 1] = { due[i], tonumber(f[3] or "0"), tonumber(due[i + 1]) }
    due_of[f[1]] = list
  end
end

-- The lanes of every queue with pending jobs that is not paused: "<prio>|<type>" per queue.
local lanes_of = {}
local counters = redis.call("HGETALL", COUNTS)
for i = 1, #counters, 2 do
  local queue = string.match(counters[i], "^q|(.*)|pending$")
  if queue and not paused(queue) then
    for _, member in ipairs(redis.call("ZRANGE", lanes_key(queue), 0, -1)) do
      local bar = string.find(member, "|", 1, true)
      local jtype = string.sub(member, bar + 1)
      if wanted[jtype] then
        local list = lanes_of[jtype] or {}
        local prio = string.sub(member, 1, bar - 1)
        local index, pages = lane_keys(queue, prio, jtype)
        local reader = paged_reader(index, pages, BUFFER)
        reader.prio = tonumber(prio)
        list[#list + 1] = reader
        lanes_of[jtype] = list
      end
    end
  end
end

-- Running keyed jobs, per type: {key, n, ...}.
local active_of = {}
local kact = redis.call("HGETALL", KEY_ACTIVE)
for i = 1, #kact, 2 do
  local bar = string.find(kact[i], "|", 1, true)
  local jtype = string.sub(kact[i], 1, bar - 1)
  if wanted[jtype] then
    local list = active_of[jtype] or {}
    list[#list + 1] = string.sub(kact[i], bar + 1)
    list[#list + 1] = tonumber(kact[i + 1])
    active_of[jtype] = list
  end
end

-- A type's parked jobs (includes/job.lua), in claim order: the reader's current one
-- ({id, prio, run}), jobs of paused queues passed over; nil at the end.
local function parked_head(r)
  while true do
    if r.pos > #r.buf then
      if r.done then
        return nil
      end
      r.buf = redis.call("ZRANGE", r.key, r.offset, r.offset + BUFFER - 1)
      r.offset = r.offset + BUFFER
      r.pos = 1
      r.done = #r.buf < BUFFER
      if #r.buf == 0 then
        return nil
      end
    end
    local member = r.buf[r.pos]
    if not r.cur or r.cur.member ~= member then
      local id = park_member_id(member)
      local f = redis.call("HMGET", job_key(id), "y", "r", "c", "q")
      r.cur = { member = member, id = id, prio = tonumber(f[1] or "0"), run = tonumber(f[2] or f[3]), queue = f[4] }
    end
    if r.cur.queue and not paused(r.cur.queue) then
      return r.cur
    end
    r.pos = r.pos + 1
  end
end

local function before(prio, run, id, bprio, brun, bid)
  if prio ~= bprio then
    return prio > bprio
  end
  if run ~= brun then
    return run < brun
  end
  return id_less(id, bid)
end

local out = {}
for _, t in ipairs(types) do
  local lanes = lanes_of[t.name] or {}
  local due_list = due_of[t.name] or {}
  table.sort(due_list, function(a, b)
    return before(a[2], a[3], a[1], b[2], b[3], b[1])
  end)
  local due_at = 1
  local parked_of = { key = park_type_key(t.name), offset = 0, buf = {}, pos = 1, done = false }
  local keys = {}
  local order = {}
  local unkeyed = 0
  local taken = 0
  local exact = not due_cut
  while true do
    local best, bid, bprio, brun = nil, nil, nil, nil
    for _, lane in ipairs(lanes) do
      local id, run = paged_head(lane)
      -- A head not yet due by now ends its lane: the ones behind it are due later still.
      if id and run <= now and (not best or before(lane.prio, run, id, bprio, brun, bid)) then
        best, bid, bprio, brun = lane, id, lane.prio, run
      end
    end
    local d = due_list[due_at]
    if d and (not best or before(d[2], d[3], d[1], bprio, brun, bid)) then
      best, bid, bprio, brun = "due", d[1], d[2], d[3]
    end
    local pk = parked_head(parked_of)
    -- Parked jobs are in claim order, not by runAt: one not yet due is passed over alone.
    while pk and pk.run and pk.run > now do
      parked_of.pos = parked_of.pos + 1
      pk = parked_head(parked_of)
    end
    if pk and (not best or before(pk.prio, pk.run, pk.id, bprio, brun, bid)) then
      best, bid = "parked", pk.id
    end
    if not best then
      break
    end
    if best == "due" then
      due_at = due_at + 1
    elseif best == "parked" then
      parked_of.pos = parked_of.pos + 1
    else
      best.pos = best.pos + 2
    end
    local f = redis.call("HMGET", job_key(bid), "s", "v", "ky")
    if f[1] == "p" and not (f[2] and tonumber(f[2]) <= now) then
      if taken == limit then
        exact = false
        break
      end
      taken = taken + 1
      local jkey = f[3]
      if jkey then
        local k = keys[jkey]
        if not k then
          k = { ready = 0, heads = 0, active = 0 }
          keys[jkey] = k
          order[#order + 1] = jkey
        end
        k.ready = k.ready + 1
        if t.ordered then
          if not k.head then
            -- An empty order (its keys lost) holds nothing back, as in a claim.
            k.head = redis.call("ZRANGE", key_order_key(t.name, jkey), 0, 0)[1] or bid
          end
          if k.head == bid then
            k.heads = k.heads + 1
          end
        end
      else
        unkeyed = unkeyed + 1
      end
    end
  end
  local act = active_of[t.name] or {}
  for i = 1, #act, 2 do
    local k = keys[act[i]]
    if not k then
      k = { ready = 0, heads = 0, active = 0 }
      keys[act[i]] = k
      order[#order + 1] = act[i]
    end
    k.active = act[i + 1]
  end
  local flat = {}
  for _, jkey in ipairs(order) do
    local k = keys[jkey]
    local n = 0
    if t.key_period and k.ready > 0 then
      n = starts(t.name .. "|" .. jkey, t.key_period)
    end
    flat[#flat + 1] = jkey
    flat[#flat + 1] = k.ready
    flat[#flat + 1] = k.heads
    flat[#flat + 1] = k.active
    flat[#flat + 1] = n
  end
  out[#out + 1] = { exact and 1 or 0, unkeyed, t.period and starts(t.name, t.period) or 0, flat }
end
return out
