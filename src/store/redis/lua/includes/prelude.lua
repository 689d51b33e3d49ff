--[[
  prelude: the key layout every errand script shares. Included first by every script.

  KEYS[1] is always "{prefix}:meta". Every other key is built from the same "{prefix}:" string, so
  all of them carry the hash tag {prefix} and live in one Redis Cluster slot: a script may touch keys
  it could not declare in advance (the jobs a claim picks) and still run on a cluster.

  KEYS[2] is always "{prefix}:never", a key no script creates or reads. A Cluster node checks a
  script's declared keys before running it; while the slot is being migrated (SETSLOT MIGRATING /
  IMPORTING), a command over several keys of which one is missing is refused with TRYAGAIN (or ASK
  to the importing node, which refuses it with TRYAGAIN), so no script runs against a slot whose
  keys are split between two nodes: it would stop at the first key already moved ("non local
  key") with its writes so far kept, or run on the importing node against the keys moved so far.
  In a stable slot missing keys are no matter, and the script runs. The transport sends a refused
  script again until its retryMs has passed.

  Keys ("{p}:" stands for the prefix, "|" separates names, which may themselves contain ":"):
    {p}:meta                   hash: epoch (see includes/epoch.lua)
    {p}:schema_version         string: the layout's version (SCHEMA_VERSION), checked at open
    {p}:j:<id>                 hash: one job (field table in includes/job.lua), in every state
    {p}:rf|<queue>|<prio>|<type>
                               zset: a ready lane's page index, one fence per page (includes/pages.lua)
    {p}:r|<queue>|<prio>|<type>|<fence>
                               zset: a page of that lane: pending jobs due to run, score runAt, member id
    {p}:rl|<queue>             zset: the queue's lanes, member "<prio>|<type>", score -prio
    {p}:scratch                zset: sorts a batch inside one script, deleted before it ends
    {p}:sched                  zset: pending jobs not yet due (delayed, retrying), score runAt
    {p}:lease                  zset: active jobs, score leaseExpiresAt; and LEASE_SENTINEL at +inf
    {p}:exp                    zset: pending and blocked jobs with an expiresAt, score expiresAt
    {p}:blocked                zset: blocked jobs (waiting on dependencies), score runAt; in no lane
                               and not in {p}:sched, so claims never see them (read by list only)
    {p}:dep:<id>               zset: the jobs whose dependsOn names <id>, score 0, member id (lexical
                               order pages dependents()); see includes/dependencies.lua
    {p}:f:<state>              zset: finished jobs (completed, dead, cancelled, expired), score finishedAt
    {p}:prune                  hash: finished state -> how many jobs at the head of {p}:f:<state> the
                               last prune kept (a blocked job waits on them): the next starts past them
    {p}:uniq                   hash: uniqueKey -> id, while that job is blocked, pending or active
    {p}:act                    hash: type -> active jobs (cluster-wide concurrency caps)
    {p}:kact                   hash: "<type>|<key>" -> active jobs of the type with that key (jobs
                               with a key only; keyConcurrency)
    {p}:ko|<type>|<key>        zset: the blocked, pending and active jobs of the type with that key,
                               score createdAt, member id: its first is the key's earliest (ordered)
    {p}:deb                    hash: debounceKey -> id, while that job is pending and never started
    {p}:rate|<scope>           zset: a rate limit's starts in its window, scope "<type>" or
                               "<type>|<key>", score the start's time (includes/rate-limits.lua)
    {p}:n                      hash: counters: "<state>", "q|<queue>|<state>", "t|<type>|<state>", "retrying"
    {p}:s|<name>               hash: one recurring schedule
    {p}:schd                   zset: schedules, score nextRunAt
    {p}:types                  hash: job type name -> "<createdAt>:<updatedAt>:<config JSON>"
  Channel {p}:wake carries wake-ups (PUBLISH) after a script made jobs ready.

  Lua numbers are doubles: every time and count errand stores is an integer below 2^53, exact.
  Numbers go to redis.call as numbers (Redis formats them exactly); they are never concatenated
  into strings (Lua's tostring keeps 14 digits), so priorities travel as the strings they came as.
]]
local META = KEYS[1]
local P = string.sub(META, 1, -5)
-- 2: ready lanes kept in pages (includes/pages.lua); runAt left out of a job equal to createdAt.
-- 3: the keys errands at 2 added one by one without raising it: {p}:schn (schedule names), parked
--    jobs ({p}:parked, {p}:pk|..., {p}:pkt|..., {p}:pwake, {p}:pwaken, includes/job.lua), rate
--    windows ({p}:rate|...), fair turns ({p}:ft, {p}:fk|..., {p}:fr|...), {p}:paused, the lease
--    sentinel. An errand at 2 that predates one of them breaks it (it leaves a schedule out of
--    {p}:schn, finishes a key's running job without putting its parked jobs back), so open.lua
--    repairs a prefix at 2 and raises it to 3, and errands at 2 refuse it from then on; the parked
--    jobs it puts back wait in {p}:upgrade3 until upgradeSlice.lua has put them all back.
-- Any change to the key layout raises this and adds a step to open.lua (test/unit/redis-layout.test.ts).
local SCHEMA_VERSION = 3
local SCHEMA_VERSION_KEY = P .. "schema_version"

local SCHED = P .. "sched"
local LEASE = P .. "lease"
-- A member of {p}:lease that is no job (ids have no spaces), at score +inf, added by every claim that
-- leases jobs. Longer than zset-max-listpack-value (64 bytes by default), it keeps the set a skiplist:
-- a listpack (what Redis makes of a set of up to 128 short members, i.e. a worker's leases at
-- defaults) scans the whole set for each member a claim adds, since new leases sort last; that cost
-- ~37,000 instructions a job (bench/RESULTS.md, session 20). Readers of {p}:lease pass over it.
local LEASE_SENTINEL = "errand: keeps this index a skiplist (it is no job: job ids have no spaces), "
  .. "see includes/prelude.lua"
local EXP = P .. "exp"
local UNIQ = P .. "uniq"
local ACT = P .. "act"
local COUNTS = P .. "n"
local SCHEDULES = P .. "schd"
-- Every schedule's name, all scored 0: in byte order, for listSchedules' pages (ZRANGEBYLEX).
local SCHEDULE_NAMES = P .. "schn"
local WAKE = P .. "wake"
local SCRATCH = P .. "scratch"
local BLOCKED = P .. "blocked"
local KEY_ACTIVE = P .. "kact"
local DEBOUNCE = P .. "deb"
-- Jobs held back by their key's rules, out of their lanes (includes/job.lua, parked jobs).
local PARKED = P .. "parked"
local PARK_WAKE = P .. "pwake"
local PARK_WAKE_N = P .. "pwaken"

local function job_key(id)
  return P .. "j:" .. id
end

-- The jobs that depend on job `id` (includes/dependencies.lua).
local function dependents_key(id)
  return P .. "dep:" .. id
end

-- The hot jobs of one type and key, by (createdAt, id). Names cannot hold "|" (NAME_PATTERN).
local function key_order_key(jtype, jkey)
  return P .. "ko|" .. jtype .. "|" .. jkey
end

-- A ready lane is a paged sorted set (includes/pages.lua): its index key and its pages' prefix.
local function lane_keys(queue, prio, jtype)
  local name = queue .. "|" .. prio .. "|" .. jtype
  return P .. "rf|" .. name, P .. "r|" .. name .. "|"
end

local function lanes_key(queue)
  return P .. "rl|" .. queue
end

local function finished_key(state)
  return P .. "f:" .. state
end

local function schedule_key(name)
  return P .. "s|" .. name
end

-- Ids order by their bytes, as in sorted sets and SQLite's BINARY collation. Lua's < on strings
-- follows the server's LC_COLLATE, which Redis takes from its environment.
local function id_less(a, b)
  if a == b then
    return false
  end
  local n = math.min(#a, #b)
  local i = 1
  while i <= n do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then
      return x < y
    end
    i = i + 1
  end
  return #a < #b
end

-- Applies a command to many arguments in slices: Lua's unpack() is limited by the C stack.
local function call_sliced(cmd, key, args, per)
  local n = #args
  local i = 1
  while i <= n do
    local j = math.min(i + per - 1, n)
    redis.call(cmd, key, unpack(args, i, j))
    i = j + 1
  end
end

-- ARGV[i] as a number, for a time a script writes. Its writes are not rolled back when a later
-- command fails, so a caller's bad number (absent, not a number, NaN: the one value unequal to
-- itself) must stop it before the first: raised as ERRAND_BAD_NUMBER, nothing written.
local function number_arg(i)
  local x = tonumber(ARGV[i])
  if x == nil or x ~= x then
    error({ err = "ERRAND_BAD_NUMBER ARGV[" .. i .. "] is not a number: " .. tostring(ARGV[i]) })
  end
  return x
end
