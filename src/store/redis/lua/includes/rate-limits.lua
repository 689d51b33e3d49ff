--[[
  rate-limits: a claim's sliding windows of starts (a type's rateLimit, a type and key's
  keyRateLimit). `now` is the claim's time.

  One sorted set per scope (the type, or "<type>|<key>"; names cannot hold "|"):
    {p}:rate|<scope>   zset: the scope's starts, score the start's time, member "<id>:<attempt>"
                       (an attempt starts once, so no two starts share a member)
  A scope is counted once per claim: the starts that left every window more than
  RATE_FORGET_LAG_MS ago are dropped first, then those in the window (score > now - period) are
  counted, any future-dated by a claimer whose clock runs ahead among them, as SQLite does. The
  starts just out of the window stay because a claim's `now` is read before its script runs: a
  claim whose `now` is behind another's already run still needs the starts that left only the
  other's window (RATE_FORGET_LAG_MS in store.ts says more; the two values are the same). Later
  checks in the same claim use that count, raised by the starts the claim records.

  A scope that is never claimed from again would keep its last starts forever (a key that goes
  quiet); each start therefore also sets the set to expire RATE_IDLE_MS after its window closes.
  The margin is wide because Redis's expiry runs on its own clock while windows run on the
  claimers' (ManualClock in tests): only a set idle far longer than its period may vanish.
]]
local RATE_IDLE_MS = 3600000
local RATE_FORGET_LAG_MS = 10000

-- Per scope, as this claim goes: starts in the window (this claim's included).
local rate_n = {}
-- Scopes whose refill time is already in rate_held_until, and those whose expiry this claim set.
local rate_told = {}
local rate_kept = {}
-- The earliest time a window that held back a ready job has room again; nil when none did.
local rate_held_until = nil
-- Per scope without room in this claim: when its window has room again.
local rate_opens = {}

local function rate_key(scope)
  return P .. "rate|" .. scope
end

-- Whether `scope`'s window (`rate`: {limit, period}) has room for one more start now. When it has
-- none, rate_held_until learns when it will: the start whose leaving makes room (the
-- (n - limit)-th oldest, 0-based) plus the period.
local function rate_room(scope, rate, now)
  local key = rate_key(scope)
  local n = rate_n[scope]
  if not n then
    redis.call("ZREMRANGEBYSCORE", key, "-inf", now - rate.period - RATE_FORGET_LAG_MS)
    n = redis.call("ZCOUNT", key, "(" .. (now - rate.period), "+inf")
    rate_n[scope] = n
  end
  if n < rate.limit then
    return true
  end
  if not rate_told[scope] then
    rate_told[scope] = true
    local leaving = redis.call(
      "ZRANGEBYSCORE", key, "(" .. (now - rate.period), "+inf", "WITHSCORES", "LIMIT", n - rate.limit, 1
    )[2]
    local opens = (tonumber(leaving) or now) + rate.period
    rate_opens[scope] = opens
    if not rate_held_until or opens < rate_held_until then
      rate_held_until = opens
    end
  end
  return false
end

-- Records a start of attempt `attempt` of job `id` in `scope`, whose room rate_room just granted.
local function rate_start(scope, rate, now, id, attempt)
  local key = rate_key(scope)
  redis.call("ZADD", key, now, string.format("%s:%d", id, attempt))
  rate_n[scope] = rate_n[scope] + 1
  if not rate_kept[scope] then
    rate_kept[scope] = true
    redis.call("PEXPIRE", key, rate.period + RATE_IDLE_MS)
  end
end
