--[[
  claim-plan: planClaim() of src/store/claim-plan.ts, line for line, so weighted queues share a
  claim the same way in every store. Each slot goes to a queue with probability proportional to its
  weight among the queues still open; a queue that gives fewer jobs than its share is closed and
  the unfilled slots are shared again among the rest.

  The random draws come from the caller (its `random()`, as integers below 2^32), in the order
  planClaim would make them; Redis's own math.random is seeded identically for every script.
]]
local function plan_claim(queues, limit, randoms, take)
  local out = {}
  local open = {}
  for _, q in ipairs(queues) do
    if q.weight > 0 then
      open[#open + 1] = q
    end
  end
  local drawn = 0
  local function random()
    drawn = drawn + 1
    local r = randoms[drawn]
    -- Past the caller's numbers, the script's own ([0, 1): math.random(0, 2^32 - 1) overflows
    -- Redis's Lua integers and fails the script).
    if r == nil then return math.random() end
    return r / 4294967296
  end
  local want = limit
  while want > 0 and #open > 0 do
    local shares = {}
    if #open == 1 then
      shares[open[1].name] = want
    else
      local total = 0
      for _, q in ipairs(open) do
        total = total + q.weight
      end
      for _ = 1, want do
        local r = random() * total
        local chosen = open[#open]
        for _, q in ipairs(open) do
          r = r - q.weight
          if r < 0 then
            chosen = q
            break
          end
        end
        shares[chosen.name] = (shares[chosen.name] or 0) + 1
      end
    end
    local still_open = {}
    for _, q in ipairs(open) do
      local share = shares[q.name] or 0
      if share == 0 then
        still_open[#still_open + 1] = q
      else
        local taken, full = take(q.name, share)
        for _, r in ipairs(taken) do
          out[#out + 1] = r
        end
        want = want - #taken
        if full then
          return out
        end
        if #taken == share then
          still_open[#still_open + 1] = q
        end
      end
    end
    open = still_open
  end
  return out
end
