--[[
  prune: Store.prune(). Deletes finished jobs older than their state's retention.

  Guarantees: reads only the retention indexes ({p}:f:<state>, by finishedAt), so the cost is the
  number deleted (and kept, below); blocked, pending and active jobs are never in them. Deletes at
  most `limit` per call so one call never holds Redis long. A job is deleted when finishedAt <
  now - retention, unless some blocked job depends on it (it would lose the outcome it waits
  for): such a job is kept and passed over, at most ARGV[9] of them per state and call. The
  kept ones stay at the head of their index (the oldest), so each state's call starts past those
  the last call kept ({p}:prune, state -> how many), and starts over from the head once it has
  read the index to the cut-off; a call that stops at ARGV[9] kept jobs says so, and the store
  calls again (redis-store.ts prune), so however many jobs are kept one prune() deletes what it
  can find past them, a chunk of Redis's time a call, and a kept job whose dependents stopped
  waiting is found again on the next round. (Started at the head every time, `limit` kept jobs
  stopped every call before the rest: retention stopped for good.) The place is a count, so a kept
  job leaving the index meanwhile (a dead one retried) makes the next call start one job late:
  that job waits for the next round, never deleted unchecked. A deleted job's dependency edges go
  with it (includes/dependencies.lua).
  Then fair keys' next turns ({p}:fk|<type>) at or below their type's turn now ({p}:ft) go: a
  key's next turn only matters above it (a new job gets max(the key's next, the type's turn), and
  the type's turn never goes down), so they change no turn, and without this a fair type keeps a
  field for every key it ever saw. An HSCAN of `limit` per fair type and call, its cursor kept in
  {p}:fkc between calls.

  KEYS[1] {p}:meta
  ARGV[1] epoch  ARGV[2] fresh epoch  ARGV[3] now  ARGV[4] limit (deletions)
  ARGV[5..8] cut-off (now - retention) for completed, dead, cancelled, expired
  ARGV[9] how many kept jobs a state's walk passes at most this call
  ARGV[10] "1" for the store's next call after one that reported kept jobs: a state whose walk
  is at the head (it read to its cut-off earlier in this prune(), or had nothing to read) is left
  alone, so two states that each keep many jobs cannot send the store round them for ever
  Returns {how many were deleted, 1 when a state's walk stopped at ARGV[9] kept jobs with
  deletions still to make (the store calls again, so one prune() gets past them), else 0}.
]]
--@include "includes/prelude.lua"
--@include "includes/epoch.lua"
--@include "includes/job.lua"
--@include "includes/dependencies.lua"
--@include "includes/fair.lua"

local err = check_epoch()
if err then
  return err
end

local PRUNE_AT = P .. "prune"
local limit = tonumber(ARGV[4])
local keep_max = tonumber(ARGV[9])
local follow_up = ARGV[10] == "1"
local left = limit
local deleted = 0
local more = 0
for s, state in ipairs({ "completed", "dead", "cancelled", "expired" }) do
  if left <= 0 then
    break
  end
  local index = finished_key(state)
  -- Where the last call stopped: past the kept jobs it read (which stay at the head).
  local at = tonumber(redis.call("HGET", PRUNE_AT, state) or "0")
  if not (follow_up and at == 0) then
    local kept = 0
    while left > 0 and kept < keep_max do
      local ids = redis.call("ZRANGEBYSCORE", index, "-inf", "(" .. ARGV[4 + s], "LIMIT", at, left)
      if #ids == 0 then
        -- Read to the cut-off: the next call starts over, looking at the kept ones again.
        at = 0
        break
      end
      local gone = {}
      for _, id in ipairs(ids) do
        local key = job_key(id)
        local f = redis.call("HMGET", key, "q", "t", "hd", "dp")
        if f[3] and has_blocked_dependent(id) then
          kept = kept + 1
          at = at + 1
        else
          if f[1] then
            count(state, f[1], f[2], -1)
          end
          if f[3] or f[4] then
            drop_edges(id, get_long(key, "dp"))
          end
          redis.call("DEL", key)
          gone[#gone + 1] = id
        end
      end
      if #gone > 0 then
        call_sliced("ZREM", index, gone, 1000)
      end
      left = left - #gone
      deleted = deleted + #gone
    end
    if left > 0 and kept >= keep_max then
      more = 1
    end
    if at > 0 then
      redis.call("HSET", PRUNE_AT, state, at)
    else
      redis.call("HDEL", PRUNE_AT, state)
    end
  end
end
flush_counts()

local FAIR_CURSOR = P .. "fkc"
local turns = redis.call("HGETALL", FAIR_TURN)
for i = 1, #turns, 2 do
  local jtype, turn = turns[i], tonumber(turns[i + 1])
  local hash = fair_next_key(jtype)
  local page = redis.call("HSCAN", hash, redis.call("HGET", FAIR_CURSOR, jtype) or "0", "COUNT", limit)
  local drop = {}
  for j = 1, #page[2], 2 do
    if tonumber(page[2][j + 1]) <= turn then
      drop[#drop + 1] = page[2][j]
    end
  end
  if #drop > 0 then
    call_sliced("HDEL", hash, drop, 1000)
  end
  if page[1] == "0" then
    redis.call("HDEL", FAIR_CURSOR, jtype)
  else
    redis.call("HSET", FAIR_CURSOR, jtype, page[1])
  end
end
return { deleted, more }
