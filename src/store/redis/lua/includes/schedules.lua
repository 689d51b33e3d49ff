--[[
  schedules: the reply for a set of schedules: name, nextRunAt, {field, value, ...} of {p}:s|<name>,
  for each (name, score) pair of `names`.
]]
local function schedule_replies(names)
  local out = {}
  for i = 1, #names, 2 do
    out[#out + 1] = names[i]
    out[#out + 1] = names[i + 1]
    out[#out + 1] = redis.call("HGETALL", schedule_key(names[i]))
  end
  return out
end
