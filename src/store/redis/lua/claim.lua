--[[
  claim: Store.claim(). Leases up to `limit` ready jobs to one worker, atomically.

  Guarantees:
    - One holder: a job leaves its ready lane and becomes active (attempt + 1, lease, holder) in the
      same script, so no two claims can take it.
    - Order: priority desc, then runAt, then id, within each queue; weighted queues as planClaim.
    - Due by this claim's now: a ready job whose runAt is after ARGV[3] is left in its lane (it
      went there by the now of whoever made it ready, whose clock may be ahead of the claimer's).
      A lane is in (runAt, id) order, so its first such job ends the walk of its priority group;
      the runAt is the lane's score or, for a lane read without scores, in the hash the claim
      reads anyway: no read is added.
    - Jobs past their expiresAt are passed over (left pending for expirePending to expire).
    - Paused queues ({p}:paused, a hash of queue name -> pausedAt) give nothing; their jobs stay in
      their lanes, and the other queues of a weighted claim share the slots.
    - Cluster-wide caps: never more active jobs of a capped type than its cap ({p}:act).
    - Key rules, for a job with a key of a type that has them: under keyConcurrency, never more
      active jobs of the type and key than it ({p}:kact, counting those this claim takes); under
      ordered, only the key's earliest blocked, pending or active job by (createdAt, id) (the
      first of {p}:ko|<type>|<key>), so one at a time, in enqueue order. A job held back is parked
      (includes/job.lua): out of its lane, so no later claim walks a busy key's backlog to reach
      another key's jobs; it goes back as room opens. At most PARK_MAX are parked per run; then
      lanes of types with rules are left, and a trailing "parked" tells the store, which runs the
      claim again for the jobs it still wants (each run parks the backlog further). Fair types'
      held jobs stay in their lanes (a key's turns keep it from filling the front), at most
      HELD_MAX passed over per run.
    - Rate limits (includes/rate-limits.lua): a job of a type in the rates is taken only while
      fewer than `limit` starts of the type fall in (now - period, now], and under a key's
      keyRateLimit only while fewer than `limit` of the type and key do, counting every claim's
      starts ({p}:rate|<scope>) and this one's; each job taken records a start at now. A type
      with no room is passed over for the rest of the claim; a key with none holds its job back
      as the other key rules do. The earliest time a window that held back a ready job has room
      again is returned, so the claimer can claim again then rather than poll.
    - Fair types (includes/fair.lua): a lane entry of a fair type whose job is in its lane's fair
      set is a slot of the type, filled by the set's first job (by turn) that the rules above
      admit; the type's turn ({p}:ft) moves up to the highest taken. The entry of a job already
      taken by turn in this claim is still a slot of the type, so a claim with room for every
      ready job takes them all. One ZSCORE per such entry, one ZRANGE per slot, and the set's
      stale entries met are dropped.
    - A job's first claim frees its debounce key ({p}:deb).
    - Weight: jobs are taken in order while min(weight, weightCap) fits the budget; the first that
      does not fit ends the whole claim.
    - Delayed and retrying jobs that came due ({p}:sched, score <= now) are promoted to their lanes
      first, up to PROMOTE_MAX per claim; a larger burst is promoted over the next claims. Then
      the keys parked by a rate limit whose window has opened ({p}:pwake, WAKE_MAX per claim)
      put back as many jobs as the window holds.
  Cost: one HEXISTS per queue looked at, then O(log n) per job taken, plus the lanes and expired
  jobs passed over, and up to PARK_MAX jobs parked (each job is parked once: a HGETALL, three
  ZADDs and an HSET); never a scan of the whole queue. A lane is read page by page from its first
  (includes/pages.lua): O(log pages) to find each page, and removals touch only the pages jobs
  were taken from. A job with a key costs one HINCRBY more ({p}:kact), and under rules one
  ZRANGE or HGET per key and claim. A rate-limited scope costs a ZREMRANGEBYSCORE and a ZCOUNT
  once per claim, a ZADD per job taken and a PEXPIRE; a claim with no rate limits pays nothing for
  them.

  KEYS[1] {p}:meta
  ARGV[1] epoch  ARGV[2] fresh epoch  ARGV[3] now  ARGV[4] workerId  ARGV[5] leaseExpiresAt
  ARGV[6] limit  ARGV[7] maxWeight ("" = none)  ARGV[8] weightCap ("" = none)
  then: nTypes, type...; nCaps, (type, cap)...; nRules, (type, keyConcurrency ("" = none),
  ordered ("1" or ""), keyRateLimit's limit ("" = none), its periodMs, fair ("1" or ""))...; nRates, (type, limit,
  periodMs)...; nQueues, (queue, weight)...; nRandoms, random...
  Returns the claimed jobs as they were just before the claim ({id, field, value, ...} each); the
  client applies the claim's changes (state, attempt, holder, lease, startedAt) it knows. Then
  "parked" when the run parked PARK_MAX jobs (and the weight budget did not end it). When a rate
  limit held back a ready job (or parked jobs wait for a window), one integer follows: the
  earliest time a window has room again.
]]
--@include "includes/prelude.lua"
--@include "includes/epoch.lua"
--@include "includes/job.lua"
--@include "includes/claim-plan.lua"
--@include "includes/rate-limits.lua"
--@include "includes/fair.lua"

local err = check_epoch()
if err then
  return err
end

local PROMOTE_MAX = 1000
local PAUSED = P .. "paused"
local BUFFER = 32
local HELD_MAX = 1000
local PARK_MAX = 1000
local WAKE_MAX = 100

local now = tonumber(ARGV[3])
local worker_id = ARGV[4]
local lease_until = ARGV[5]
local limit = tonumber(ARGV[6])
local budget = ARGV[7] == "" and math.huge or tonumber(ARGV[7])
local weight_cap = ARGV[8] == "" and math.huge or tonumber(ARGV[8])

local at = 9
local wanted = nil
local n_types = tonumber(ARGV[at])
at = at + 1
if n_types > 0 then
  wanted = {}
  for i = 0, n_types - 1 do
    wanted[ARGV[at + i]] = true
  end
end
at = at + n_types
local n_caps = tonumber(ARGV[at])
at = at + 1
local room = {}
for i = 0, n_caps - 1 do
  local jtype, cap = ARGV[at + 2 * i], tonumber(ARGV[at + 2 * i + 1])
  if not wanted or wanted[jtype] then
    room[jtype] = cap - tonumber(redis.call("HGET", ACT, jtype) or "0")
  end
end
at = at + 2 * n_caps
local n_rules = tonumber(ARGV[at])
at = at + 1
local rules = {}
for i = 0, n_rules - 1 do
  local j = at + 6 * i
  local rule = { kc = tonumber(ARGV[j + 1]), ordered = ARGV[j + 2] == "1", fair = ARGV[j + 5] == "1" }
  if ARGV[j + 3] ~= "" then
    rule.rate = { limit = tonumber(ARGV[j + 3]), period = tonumber(ARGV[j + 4]) }
  end
  rules[ARGV[j]] = rule
end
at = at + 6 * n_rules
local n_rates = tonumber(ARGV[at])
at = at + 1
local rates = {}
for i = 0, n_rates - 1 do
  local j = at + 3 * i
  rates[ARGV[j]] = { limit = tonumber(ARGV[j + 1]), period = tonumber(ARGV[j + 2]) }
end
at = at + 3 * n_rates
-- Rate-limited types whose window has no room left in this claim: their lanes are passed over.
local rate_closed = {}
local n_queues = tonumber(ARGV[at])
at = at + 1
local queues = {}
for i = 0, n_queues - 1 do
  queues[#queues + 1] = { name = ARGV[at + 2 * i], weight = tonumber(ARGV[at + 2 * i + 1]) }
end
at = at + 2 * n_queues
local n_randoms = tonumber(ARGV[at])
at = at + 1
local randoms = {}
for i = 0, n_randoms - 1 do
  randoms[#randoms + 1] = tonumber(ARGV[at + i])
end

-- Promote due delayed and retrying jobs to their lanes.
local due = redis.call("ZRANGEBYSCORE", SCHED, "-inf", now, "WITHSCORES", "LIMIT", 0, PROMOTE_MAX)
if #due > 0 then
  local ids = {}
  for i = 1, #due, 2 do
    local id = due[i]
    local f = redis.call("HMGET", job_key(id), "q", "y", "t", "ft")
    if f[1] then
      add_ready_later(id, f[1], f[2] or "0", f[3], due[i + 1])
      if f[4] then
        redis.call("ZADD", fair_set_key(f[1], f[2] or "0", f[3]), f[4], fair_member(tonumber(due[i + 1]), id))
      end
    end
    ids[#ids + 1] = id
  end
  call_sliced("ZREM", SCHED, ids, 1000)
  -- In (runAt, id) order: {p}:sched's.
  flush_ready(true)
end

-- Keys parked by a rate limit whose window has opened: as many jobs as it held go back to their
-- lanes (includes/job.lua, parked jobs), up to WAKE_MAX keys per claim.
local woken = redis.call("ZRANGEBYSCORE", PARK_WAKE, "-inf", now, "LIMIT", 0, WAKE_MAX)
for _, field in ipairs(woken) do
  unpark_first(field, tonumber(redis.call("HGET", PARK_WAKE_N, field) or "1"))
  redis.call("ZREM", PARK_WAKE, field)
  redis.call("HDEL", PARK_WAKE_N, field)
end

-- {p}:lease's new entries (score, id, ...), LEASE_SENTINEL first: added before them, it makes a
-- listpack a skiplist before they go in.
local leased = { "+inf", LEASE_SENTINEL }
-- Per "<type>|<key>" under rules, as this claim goes: the key's earliest hot job, its active count.
local key_heads = {}
local key_active = {}
local held = 0
-- Jobs this claim parked (PARK_MAX at most: then lanes of types with rules are left, and the
-- reply says so, for the store to claim again).
local parked = 0
-- Whether the weight budget ended the claim: a later run must not take a lighter job past it.
local ended_full = false

-- Whether the key rules of `jtype` let job `id` with key `jkey` start now; and, when they cap the
-- key, its "<type>|<key>" and active count.
local function key_allows(id, jtype, jkey)
  local rule = rules[jtype]
  if not rule then
    return true
  end
  local field = jtype .. "|" .. jkey
  if rule.ordered then
    local head = key_heads[field]
    if not head then
      -- An empty order (its keys lost) holds nothing back: this job heads it for this claim.
      head = redis.call("ZRANGE", key_order_key(jtype, jkey), 0, 0)[1] or id
      key_heads[field] = head
    end
    if head ~= id then
      return false
    end
    -- The earliest, but a later job of the key runs (this one was retried by hand from dead or
    -- cancelled): it starts once that job has finished, which puts it back (it is then the key's
    -- earliest, and the key's active count goes down).
    local running = key_active[field] or tonumber(redis.call("HGET", KEY_ACTIVE, field) or "0")
    key_active[field] = running
    if running > 0 then
      return false
    end
  end
  local n = nil
  if rule.kc then
    n = key_active[field] or tonumber(redis.call("HGET", KEY_ACTIVE, field) or "0")
    if n >= rule.kc then
      key_active[field] = n
      return false
    end
  end
  -- Last, so that only a job nothing else holds back makes its window's refill time count.
  if rule.rate and not rate_room(field, rule.rate, now) then
    return false, "rate"
  end
  if n then
    return true, field, n
  end
  return true
end

-- The worker id's HSET fields (push_long: in pieces when long), the same for every job of the claim.
local holder_fields = {}
push_long(holder_fields, "h", worker_id)

-- Jobs taken per queue and type, counted into {p}:n and {p}:act once per claim rather than per job.
local taken_count = {}

-- Sets the wake of `field` ("<type>|<key>"), whose window is full, to when it opens (rate_opens),
-- unless a sooner one is set; then `limit` of its parked jobs go back to its lane (PARK_WAKE).
local function arm_wake(field, limit)
  local opens = rate_opens[field]
  local at = redis.call("ZSCORE", PARK_WAKE, field)
  if opens and (not at or opens < tonumber(at)) then
    redis.call("ZADD", PARK_WAKE, opens, field)
    redis.call("HSET", PARK_WAKE_N, field, limit)
  end
end

-- Claims one job whose hash `key` read `flat` (HGETALL): "taken", or why not ("skip": expired,
-- "held": its key's rules, "closed": its type's rate limit, "full": the weight budget).
local function claim_one(id, key, flat, jtype, queue)
  local weight, expires, attempt, jkey, debounce = 1, nil, 0, nil, nil
  for i = 1, #flat, 2 do
    local f = flat[i]
    if f == "w" then
      weight = tonumber(flat[i + 1])
    elseif f == "v" then
      expires = tonumber(flat[i + 1])
    elseif f == "a" then
      attempt = tonumber(flat[i + 1])
    elseif f == "ky" then
      jkey = flat[i + 1]
    elseif f == "dk" then
      debounce = flat[i + 1]
    end
  end
  if expires and expires <= now then
    return "skip"
  end
  local rate = rates[jtype]
  if rate and not rate_room(jtype, rate, now) then
    rate_closed[jtype] = true
    return "closed"
  end
  local capped_field, capped_n = nil, nil
  if jkey then
    local ok, second, third = key_allows(id, jtype, jkey)
    if not ok then
      -- Why, for a parked job: "rate" when its key's window is full.
      return "held", jkey, second
    end
    capped_field, capped_n = second, third
  end
  local w = math.min(weight, weight_cap)
  if w > budget then
    return "full"
  end
  budget = budget - w
  if room[jtype] then
    room[jtype] = room[jtype] - 1
  end
  if jkey then
    count_key_active(jtype, jkey, 1)
    if capped_field then
      key_active[capped_field] = capped_n + 1
    end
  end
  if rate then
    rate_start(jtype, rate, now, id, attempt + 1)
  end
  if jkey and rules[jtype] and rules[jtype].rate then
    local field, key_rate = jtype .. "|" .. jkey, rules[jtype].rate
    rate_start(field, key_rate, now, id, attempt + 1)
    -- A start that fills the window of a key with parked jobs sets its next wake: those jobs come
    -- back only by one (the walk no longer meets them), so without it the key's backlog would stop
    -- after the wake that brought these back.
    if rate_n[field] >= key_rate.limit and redis.call("EXISTS", park_key(field)) == 1 then
      rate_room(field, key_rate, now)
      arm_wake(field, key_rate.limit)
    end
  end
  if debounce and attempt == 0 then
    release_debounce(id, debounce)
  end
  -- A first attempt's number as text: Redis formats a Lua number with printf's %.17g.
  redis.call(
    "HSET",
    key,
    "s",
    "a",
    "a",
    attempt == 0 and "1" or attempt + 1,
    "l",
    lease_until,
    "g",
    ARGV[3],
    unpack(holder_fields)
  )
  if expires then
    redis.call("ZREM", EXP, id)
  end
  leased[#leased + 1] = lease_until
  leased[#leased + 1] = id
  tally(taken_count, queue, jtype)
  if attempt > 0 then
    bump("retrying", -1)
  end
  return "taken"
end

-- A field's value in an HGETALL reply, or nil.
local function field_of(flat, name)
  for i = 1, #flat, 2 do
    if flat[i] == name then
      return flat[i + 1]
    end
  end
  return nil
end

-- The highest turn taken per fair type, for {p}:ft at the end.
local turns_taken = {}
-- The jobs taken by turn in this claim: when the lane walk reaches one, its slot is still the
-- type's (as in the SQL stores), so the next job whose turn it is takes it.
local taken_by_turn = {}

-- Fills the slot lane `lane`'s head job `x_id` (hash `x_flat`, with a turn) holds for its fair type
-- with the first job of the lane's fair set the claim's rules admit, appended to `fair_out`.
-- Returns "taken" (another job took it), "self" (the head did), "held" (too many held back),
-- "closed" or "full" (claim_one's), or nil when the set offers none (the head is then taken as
-- usual). Entries whose job is no longer ready in this lane leave the set.
local fair_out = nil
local function fair_take(lane, queue, x_id, x_flat)
  local set = fair_set_key(queue, lane.prio, lane.jtype)
  -- The set's entries before this rank were held back earlier in this claim, and still are (a
  -- claim only uses room up): each slot starts past them rather than walking them again.
  local offset = lane.fair_offset or 0
  while true do
    local ids = redis.call("ZRANGE", set, offset, offset + 15, "WITHSCORES")
    if #ids == 0 then
      lane.fair_offset = offset
      return nil
    end
    for k = 1, #ids, 2 do
      local member = ids[k]
      local y = fair_member_id(member)
      local ykey = job_key(y)
      local yflat = y == x_id and x_flat or redis.call("HGETALL", ykey)
      local s, q, r, c = nil, nil, nil, nil
      for i = 1, #yflat, 2 do
        local f = yflat[i]
        if f == "s" then
          s = yflat[i + 1]
        elseif f == "q" then
          q = yflat[i + 1]
        elseif f == "r" then
          r = yflat[i + 1]
        elseif f == "c" then
          c = yflat[i + 1]
        end
      end
      local run_at = tonumber(r or c or "0")
      local outcome = "stale"
      if s == "p" and q == queue and run_at <= now then
        outcome = claim_one(y, ykey, yflat, lane.jtype, queue)
      end
      lane.fair_offset = offset
      if outcome == "stale" or outcome == "skip" then
        -- Gone, waiting again (promotion brings it back) or expired: out of the set; the next
        -- entry now has this rank.
        redis.call("ZREM", set, member)
      elseif outcome == "taken" then
        redis.call("ZREM", set, member)
        taken_by_turn[y] = true
        local turn = tonumber(ids[k + 1])
        if not turns_taken[lane.jtype] or turn > turns_taken[lane.jtype] then
          turns_taken[lane.jtype] = turn
        end
        table.insert(yflat, 1, y)
        fair_out[#fair_out + 1] = yflat
        if y == x_id then
          return "self"
        end
        -- Out of the lane when the reader is done (found by its runAt).
        local fence = page_for(lane.index, run_at, y)
        if fence then
          lane.remove[fence] = lane.remove[fence] or {}
          table.insert(lane.remove[fence], y)
        end
        return "taken"
      elseif outcome == "held" then
        held = held + 1
        offset = offset + 1
        lane.fair_offset = offset
        if held >= HELD_MAX then
          return "held"
        end
      else
        return outcome
      end
    end
  end
end

-- Parks job `id` (out of its lane already), held back by its key's rules; `by_rate` when its
-- key's window is full: the key then wakes when the window opens, with room for the window's limit.
local function park_held(id, key, jtype, jkey, prio, flat, by_rate)
  park(id, key, jtype, jkey, prio, run_at_of({ r = field_of(flat, "r"), c = field_of(flat, "c") }))
  parked = parked + 1
  if by_rate then
    arm_wake(jtype .. "|" .. jkey, rules[jtype].rate.limit)
  end
end

-- Takes up to `want` jobs from one queue: its lanes by priority, and lanes of equal priority merged
-- by (runAt, id). Returns the jobs and whether the weight budget is spent.
local function take(queue, want)
  local out = {}
  fair_out = out
  local full = false
  if redis.call("HEXISTS", PAUSED, queue) == 1 then
    return out, false
  end
  local index = redis.call("ZRANGE", lanes_key(queue), 0, -1, "WITHSCORES")
  local lanes = {}
  for i = 1, #index, 2 do
    local member = index[i]
    local bar = string.find(member, "|", 1, true)
    local prio, jtype = string.sub(member, 1, bar - 1), string.sub(member, bar + 1)
    if not wanted or wanted[jtype] then
      local lane_index, lane_pages = lane_keys(queue, prio, jtype)
      local reader = paged_reader(lane_index, lane_pages, BUFFER)
      reader.member = member
      reader.jtype = jtype
      reader.prio = prio
      reader.score = index[i + 1]
      reader.used = false
      lanes[#lanes + 1] = reader
    end
  end
  -- Only lanes that share a priority are merged by runAt; a lane alone in its priority is read
  -- without scores.
  for i, lane in ipairs(lanes) do
    local before, after = lanes[i - 1], lanes[i + 1]
    if not (before and before.score == lane.score) and not (after and after.score == lane.score) then
      lane.step = 1
    end
  end

  local g = 1
  while g <= #lanes and #out < want and not full do
    -- One priority group: lanes with the same score in the index.
    local group = {}
    local score = lanes[g].score
    while g <= #lanes and lanes[g].score == score do
      group[#group + 1] = lanes[g]
      g = g + 1
    end
    while #out < want do
      local best, best_id, best_run = nil, nil, nil
      for _, lane in ipairs(group) do
        if
          (room[lane.jtype] == nil or room[lane.jtype] > 0)
          and not rate_closed[lane.jtype]
          and not ((held >= HELD_MAX or parked >= PARK_MAX) and rules[lane.jtype])
        then
          lane.used = true
          local id, run_at = paged_head(lane)
          if id and (not best or run_at < best_run or (run_at == best_run and id_less(id, best_id))) then
            best, best_id, best_run = lane, id, run_at
          end
        end
      end
      -- Lanes hold (runAt, id) in order, so a head due after this claim's now (the enqueuer's
      -- clock ahead of the claimer's, or a clock stepped back) has nothing due behind it: the
      -- group gives this claim nothing more, as the SQL stores' run_at <= now would.
      if not best or (best_run and best_run > now) then
        break
      end
      local best_key = job_key(best_id)
      local flat = redis.call("HGETALL", best_key)
      local pending = false
      for i = 1, #flat, 2 do
        if flat[i] == "s" then
          pending = flat[i + 1] == "p"
          break
        end
      end
      -- A lane alone in its priority is read without scores: its head's runAt is in the hash,
      -- read already.
      if pending and not best_run and tonumber(field_of(flat, "r") or field_of(flat, "c") or "0") > now then
        break
      end
      local turn = pending and rules[best.jtype] and rules[best.jtype].fair and field_of(flat, "ft")
      local sub = nil
      -- A job with a turn but out of the fair set (made ready otherwise) is taken as usual.
      local fair_set = turn and fair_set_key(queue, best.prio, best.jtype)
      if
        turn
        and (
          redis.call(
            "ZSCORE",
            fair_set,
            fair_member(tonumber(run_at_of({ r = field_of(flat, "r"), c = field_of(flat, "c") })), best_id)
          )
          -- A set written before fair_member's form holds bare ids.
          or redis.call("ZSCORE", fair_set, best_id)
        )
      then
        -- The slot is the fair type's: the job whose turn it is takes it (perhaps this one).
        sub = fair_take(best, queue, best_id, flat)
      elseif not pending and taken_by_turn[best_id] then
        -- Taken by turn in an earlier slot (its lane entry already noted for removal): its own
        -- slot goes to the next turn, so a claim with room takes every ready job.
        sub = fair_take(best, queue, best_id, flat) or "taken"
      end
      if sub == "taken" or sub == "closed" then
        -- Another job took the head's slot (the head stays in the lane and the fair set, for a
        -- later turn), or none may (the type is passed over from now on): on to the next entry.
      elseif sub == "full" then
        full = true
        break
      elseif sub == "held" then
        held = held + 1
      elseif sub == "self" then
        paged_take(best)
      elseif not pending then
        -- A lane entry without its pending job (keys lost): drop it.
        paged_take(best)
      else
        local outcome, jkey, why = claim_one(best_id, best_key, flat, best.jtype, queue)
        if outcome == "full" then
          full = true
          break
        elseif outcome == "held" then
          if rules[best.jtype].fair then
            held = held + 1
          else
            paged_take(best)
            park_held(best_id, best_key, best.jtype, jkey, best.prio, flat, why == "rate")
          end
        elseif outcome == "taken" then
          paged_take(best)
          table.insert(flat, 1, best_id)
          out[#out + 1] = flat
        end
      end
      best.pos = best.pos + best.step
    end
  end

  for _, lane in ipairs(lanes) do
    if lane.used and paged_done(lane) then
      redis.call("ZREM", lanes_key(queue), lane.member)
    end
  end
  if full or budget <= 0 then
    ended_full = true
  end
  return out, full or budget <= 0
end

local claimed = plan_claim(queues, limit, randoms, take)
for jtype, turn in pairs(turns_taken) do
  if turn > tonumber(redis.call("HGET", FAIR_TURN, jtype) or "0") then
    redis.call("HSET", FAIR_TURN, jtype, turn)
  end
end
if #leased > 2 then
  call_sliced("ZADD", LEASE, leased, 1000)
end
count_moves(taken_count, "pending", "active")
flush_counts()
if parked >= PARK_MAX and not ended_full then
  claimed[#claimed + 1] = "parked"
end
-- Jobs parked by a rate limit are not met by the walk: their keys' windows open as {p}:pwake says.
local wake_at = tonumber(redis.call("ZRANGE", PARK_WAKE, 0, 0, "WITHSCORES")[2])
if wake_at and (not rate_held_until or wake_at < rate_held_until) then
  rate_held_until = wake_at
end
if rate_held_until then
  claimed[#claimed + 1] = rate_held_until
end
return claimed
