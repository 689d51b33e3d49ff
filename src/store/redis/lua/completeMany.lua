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

  KEYS[1] {p}:meta
  ARGV[1] epoch  ARGV[2] fresh epoch  ARGV[3] now  ARGV[4] n  then n × (id, attempt, result JSON)
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
local out = {}
local unleased = {}
local done = {}
for j = 0, n - 1 do
  local i = 5 + 3 * j
  local id = ARGV[i]
  local key = job_key(id)
  local f = redis.call("HMGET", key, "s", "a", "q", "t", "u", "hd", "ky")
  if f[1] == "a" and f[2] == ARGV[i + 1] then
    local args = { "s", "c", "f", now }
    local parts = push_long(args, "x", ARGV[i + 2])
    redis.call("HSET", key, unpack(args))
    drop_pieces(key, "x", parts)
    redis.call("HDEL", key, "l")
    del_long(key, "h")
    if f[5] then
      release_unique(id, key)
    end
    unleased[#unleased + 1] = id
    done[#done + 1] = now
    done[#done + 1] = id
    count("active", f[3], f[4], -1)
    count("completed", f[3], f[4], 1)
    count_active_type(f[4], -1)
    if f[7] then
      count_key_active(f[4], f[7], -1)
      leave_key_order(id, f[4], f[7])
    end
    if f[6] then
      with_dependents = with_dependents or {}
      with_dependents[#with_dependents + 1] = id
    end
    out[#out + 1] = 1
  else
    out[#out + 1] = 0
  end
end
if #unleased > 0 then
  call_sliced("ZREM", LEASE, unleased, 1000)
  call_sliced("ZADD", finished_key("completed"), done, 1000)
end
if with_dependents then
  local now_n = tonumber(now)
  for _, id in ipairs(with_dependents) do
    dependency_completed(id, now_n)
  end
  flush_dependencies()
end
flush_counts()
return out
