--[[
  completeMany: Store.completeMany(). Completes many attempts in one script (the worker's batched
  completions).

  Guarantees, per item: compare-and-set on (id, state active, attempt). Exactly one complete per
  attempt returns 1; a stale one (lease lost and the job re-claimed, cancelled, already finished,
  or the job is gone) returns 0 and changes nothing. A completed job leaves {p}:lease, frees its
  type's cap slot, its unique key and its key's room and place in order, stores its result and
  enters the completed retention index.
  Its blocked dependents each count one dependency fewer; those with none left become pending
  (claimers are woken when any is due). A job no one depends on pays only for reading one more
  field (hd).
  Discard (ARGV[5] "1": the Queue keeps no completed jobs): a completed job nothing depends on is
  deleted with its edges as a dependent, as prune would, and never counted completed; one
  something depends on is kept as above (its dependents read its result).

  KEYS[1] {p}:meta
  ARGV[1] epoch  ARGV[2] fresh epoch  ARGV[3] now  ARGV[4] n  ARGV[5] discard ("1" or "0")
  then n × (id, attempt, result JSON)
  Returns one 1 or 0 per item.
]]
--@include "includes/prelude.lua"
--@include "includes/epoch.lua"
--@include "includes/job.lua"
--@include "includes/dependencies.lua"

local err = check_epoch()
if err then
  return err
end

local now = ARGV[3]
local with_dependents = nil
local n = tonumber(ARGV[4])
local discard = ARGV[5] == "1"
local out = {}
local unleased = {}
local done = {}
-- Per queue and type: the jobs now completed, and those deleted (discard); counted into {p}:n and
-- {p}:act once per batch rather than per job.
local kept = {}
local dropped = {}
for j = 0, n - 1 do
  local i = 6 + 3 * j
  local id = ARGV[i]
  local key = job_key(id)
  -- x:1 and h:1: whether the result or the worker id is in pieces (job.lua), so a job with
  -- neither (nearly all) needs no HDEL per piece field to find out.
  local f = redis.call("HMGET", key, "s", "a", "q", "t", "u", "hd", "ky", "dp", "x:1", "h:1")
  if f[1] == "a" and f[2] == ARGV[i + 1] then
    local keep = not discard or f[6]
    if f[5] then
      release_unique(id, key)
    end
    if keep then
      local result = ARGV[i + 2]
      local parts = 1
      if #result <= CHUNK or #result > CHUNKED_MAX then
        redis.call("HSET", key, "s", "c", "f", now, "x", result)
      else
        local args = { "s", "c", "f", now }
        parts = push_long(args, "x", result)
        redis.call("HSET", key, unpack(args))
      end
      if f[9] then
        drop_pieces(key, "x", parts)
      end
      redis.call("HDEL", key, "l", "h")
      if f[10] then
        drop_pieces(key, "h", 1)
      end
      done[#done + 1] = now
      done[#done + 1] = id
    end
    tally(keep and kept or dropped, f[3], f[4])
    unleased[#unleased + 1] = id
    if f[7] then
      count_key_active(f[4], f[7], -1)
      leave_key_order(id, f[4], f[7])
    end
    if f[6] then
      with_dependents = with_dependents or {}
      with_dependents[#with_dependents + 1] = id
    end
    if not keep then
      if f[8] then
        drop_edges(id, get_long(key, "dp"))
      end
      redis.call("DEL", key)
    end
    out[#out + 1] = 1
  else
    out[#out + 1] = 0
  end
end
if #unleased > 0 then
  call_sliced("ZREM", LEASE, unleased, 1000)
  if #done > 0 then
    call_sliced("ZADD", finished_key("completed"), done, 1000)
  end
end
count_moves(kept, "active", "completed")
count_moves(dropped, "active", nil)
if with_dependents then
  local now_n = tonumber(now)
  for _, id in ipairs(with_dependents) do
    dependency_completed(id, now_n)
  end
  flush_dependencies()
end
flush_counts()
return out
