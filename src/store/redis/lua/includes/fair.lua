---------------------------------------------------------------------------------------------------
-- Fair types (KeyRules.fair): keys take turns. A new job of a fair type gets a turn (hash field
-- "ft"), max(its key's next turn ({p}:fk|<type>, key "" for jobs without one), the type's turn now
-- ({p}:ft)), and its key's next turn is one more. While it is ready it is also in its lane's fair
-- set {p}:fr|<queue>|<priority>|<type>, by turn (its member is fair_member's: the jobs of one turn
-- go by runAt, then id, as the SQL stores' fair index orders them); a claim that meets a job of the set in the lane
-- takes, in its place, the set's first job the claim's rules admit, and moves the type's turn up.
-- The set holds the jobs that were ready when enqueued, promoted from {p}:sched or unblocked by
-- their dependencies (dependencies.lua's unblock); a rescheduled or
-- debounced job's entry moves with it (job.lua's fair_move); a job that left it otherwise (taken,
-- cancelled) is dropped from it when a claim meets it there. A
-- job made ready another way (released, retried at once) is taken in its lane's order.

local FAIR_TURN = P .. "ft"

-- fair_set_key, fair_member and fair_member_id are job.lua's (reschedule and debounce move a job's
-- entry without this file).

local function fair_next_key(jtype)
  return P .. "fk|" .. jtype
end

-- Per "<type>|<key>": the key's next turn, this script's jobs counted; per type, its turn now.
local fair_next = {}
local fair_now = {}

-- Gives new job `id` (due at `run_at`) its turn; `ready`: it is in its lane now.
local function assign_turn(id, jtype, jkey, queue, prio, ready, run_at)
  local now_turn = fair_now[jtype]
  if not now_turn then
    now_turn = tonumber(redis.call("HGET", FAIR_TURN, jtype) or "0")
    fair_now[jtype] = now_turn
  end
  local slot = jtype .. "|" .. jkey
  local next_turn = fair_next[slot]
  if not next_turn then
    next_turn = tonumber(redis.call("HGET", fair_next_key(jtype), jkey) or "0")
  end
  local turn = math.max(next_turn, now_turn)
  redis.call("HSET", job_key(id), "ft", turn)
  fair_next[slot] = turn + 1
  if ready then
    redis.call("ZADD", fair_set_key(queue, prio, jtype), turn, fair_member(run_at, id))
  end
end

local function flush_turns()
  for slot, next_turn in pairs(fair_next) do
    local bar = string.find(slot, "|", 1, true)
    redis.call("HSET", fair_next_key(string.sub(slot, 1, bar - 1)), string.sub(slot, bar + 1), next_turn)
  end
end
