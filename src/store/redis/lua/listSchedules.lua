--[[
  listSchedules: Store.listSchedules(). A page of schedules by name, each with its next tick.

  Guarantees: the schedules named after ARGV[1] (from the first when ""; no name is empty), in
  byte order, at most ARGV[2]. Why: {p}:schn holds every name scored 0, which ZRANGEBYLEX reads in
  byte order (memcmp, whatever the server's locale) from the cursor on: a page costs its own
  schedules, however many there are.

  KEYS[1] {p}:meta
  ARGV[1] after ("" = from the first)  ARGV[2] limit
  Returns name, nextRunAt, {field, value, ...}, name, ... in name order.
]]
--@include "includes/prelude.lua"
--@include "includes/schedules.lua"

local names = redis.call(
  "ZRANGEBYLEX",
  SCHEDULE_NAMES,
  ARGV[1] == "" and "-" or "(" .. ARGV[1],
  "+",
  "LIMIT",
  0,
  tonumber(ARGV[2])
)
local found = {}
for _, name in ipairs(names) do
  local at = redis.call("ZSCORE", SCHEDULES, name)
  if at then
    found[#found + 1] = name
    found[#found + 1] = at
  end
end
return schedule_replies(found)
