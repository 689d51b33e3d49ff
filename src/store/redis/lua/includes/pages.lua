--[[
  pages: a sorted set kept as a run of small sorted sets (pages), for the ready lanes.

  Why: in a sorted set of more than 128 entries every entry costs a skiplist node, a member string,
  a dictionary entry and its bucket, about 144 bytes for a job id. A sorted set of at most 128
  entries (zset-max-listpack-entries) whose members are at most 64 bytes (zset-max-listpack-value)
  is one listpack instead: about 48 bytes per job id and its score. A ready job in a page costs
  about 50 bytes, pages and index included.

  A paged set is two names: its index key and its pages' key prefix.
    <index>          zset, every score 0: one member per page, the page's fence, which is
                     sortable(score) .. member of the entry the page was made for
    <pages><fence>   zset: a page, with scores and members as in a plain sorted set
  A page holds the entries from its fence up to the next page's fence. A fence only ever moves
  down: an entry below every fence goes to the first page, whose fence is lowered to it (the page
  renamed). A page that empties is deleted with its fence, and its range joins the page before.
  Hence:
    - the first page holds the lowest entries (a claim reads the index's first member, then it);
    - the page for an entry is one ZREVRANGEBYLEX on the index: O(log pages);
    - an add or remove touches one page, or two when a full page splits: O(PAGE_MAX), a constant.
  An id longer than 64 bytes turns its page into a skiplist, which is larger but works the same.
]]
-- A page never holds more: Redis keeps a sorted set of up to 128 entries as a listpack.
local PAGE_MAX = 128
-- Entries appended in order fill a page up to this, then start the next one (a full 128-entry page
-- of 36-byte ids is 6,151 bytes, just over the 6 KiB allocation class; 127 fit in it).
local PAGE_FILL = 127
-- Batches up to this many entries are added one by one; larger ones as a run (paged_add_many).
local SMALL_BATCH = 16

-- A string whose byte order is the numeric order of the finite number x: sign class, exponent,
-- 53-bit mantissa, fixed width within a class. Exact for every double.
local function sortable(x)
  if x == 0 then
    return "1"
  end
  local m, e = math.frexp(math.abs(x))
  local mantissa = m * 9007199254740992 -- 2^53: an integer in [2^52, 2^53)
  if x > 0 then
    return string.format("2%04d%016.0f", e + 1100, mantissa)
  end
  return string.format("0%04d%016.0f", 1100 - e, 9007199254740991 - mantissa)
end

-- Whether entry (a, am) comes before (b, bm): by score, then member bytes.
local function entry_less(a, am, b, bm)
  if a ~= b then
    return a < b
  end
  return id_less(am, bm)
end

-- The fence of the page that holds (or would hold) the entry; nil when it is below every fence.
local function page_for(index, score, member)
  return redis.call("ZREVRANGEBYLEX", index, "[" .. sortable(score) .. member, "-", "LIMIT", 0, 1)[1]
end

-- ZADD of the entries `flat[from .. to]` (score, member, ...: ascending), highest first: Redis
-- inserts into a listpack by scanning it from the start, so each then stops at once.
local function zadd_descending(key, flat, from, to)
  local args = {}
  for i = to - 1, from, -2 do
    args[#args + 1] = flat[i]
    args[#args + 1] = flat[i + 1]
  end
  redis.call("ZADD", key, unpack(args))
end

-- Makes a page of the entries `flat[from .. to]` (score, member, ...: ascending, at most PAGE_MAX).
local function new_page(index, pages, flat, from, to)
  local fence = sortable(tonumber(flat[from])) .. flat[from + 1]
  redis.call("ZADD", index, 0, fence)
  zadd_descending(pages .. fence, flat, from, to)
end

-- ZRANGE ... WITHSCORES replies (member, score, ...) from `from` to `to` as ZADD arguments.
local function as_zadd(reply, from, to)
  local out = {}
  for i = from, to, 2 do
    out[#out + 1] = reply[i + 1]
    out[#out + 1] = reply[i]
  end
  return out
end

local function paged_add(index, pages, score, member)
  score = tonumber(score)
  local fence = page_for(index, score, member)
  if not fence then
    local first = redis.call("ZRANGE", index, 0, 0)[1]
    if not first then
      new_page(index, pages, { score, member }, 1, 2)
      return
    end
    -- Below every entry: the first page takes it, under a fence lowered to it.
    fence = sortable(score) .. member
    if redis.call("EXISTS", pages .. first) == 1 then
      redis.call("RENAME", pages .. first, pages .. fence)
    end
    redis.call("ZREM", index, first)
    redis.call("ZADD", index, 0, fence)
  end
  local page = pages .. fence
  if redis.call("ZCARD", page) >= PAGE_MAX then
    local last = redis.call("ZRANGE", page, -1, -1, "WITHSCORES")
    if entry_less(tonumber(last[2]), last[1], score, member) then
      -- Past the full page's last entry (an append in order): a page of its own.
      new_page(index, pages, { score, member }, 1, 2)
      return
    end
    -- The upper half moves to a page of its own, and the entry goes to its half.
    local upper = redis.call("ZRANGE", page, PAGE_MAX / 2, -1, "WITHSCORES")
    redis.call("ZREMRANGEBYRANK", page, PAGE_MAX / 2, -1)
    local flat = as_zadd(upper, 1, #upper)
    new_page(index, pages, flat, 1, #flat)
    if not entry_less(score, member, tonumber(upper[2]), upper[1]) then
      page = pages .. sortable(tonumber(upper[2])) .. upper[1]
    end
  end
  redis.call("ZADD", page, score, member)
end

-- Removes an entry, found by its score; returns whether it was there.
local function paged_remove(index, pages, score, member)
  local fence = page_for(index, tonumber(score), member)
  if not fence then
    return false
  end
  local page = pages .. fence
  if redis.call("ZREM", page, member) == 0 then
    return false
  end
  if redis.call("EXISTS", page) == 0 then
    redis.call("ZREM", index, fence)
  end
  return true
end

-- The last page's fence and its highest entry (score, member), dropping fences of lost pages.
local function last_page(index, pages)
  while true do
    local fence = redis.call("ZRANGE", index, -1, -1)[1]
    if not fence then
      return nil
    end
    local top = redis.call("ZRANGE", pages .. fence, -1, -1, "WITHSCORES")
    if #top > 0 then
      return fence, tonumber(top[2]), top[1]
    end
    redis.call("ZREM", index, fence)
  end
end

-- Adds a batch (`flat`: score, member, ...; each member once, none in the set yet), `ordered`
-- when it comes sorted by (score, member). Redis sorts any other large batch (in SCRATCH). The
-- entries above the set's highest, which is every entry when new jobs arrive in time order, fill
-- the last page and then new ones; entries below go one by one.
local function paged_add_many(index, pages, flat, ordered)
  local n = #flat
  if n <= 2 * SMALL_BATCH then
    for i = 1, n, 2 do
      paged_add(index, pages, flat[i], flat[i + 1])
    end
    return
  end
  if not ordered then
    -- Deleted first too: a script that failed half-way leaves its writes (Redis has no rollback).
    redis.call("DEL", SCRATCH)
    call_sliced("ZADD", SCRATCH, flat, 1000)
    local sorted = redis.call("ZRANGE", SCRATCH, 0, -1, "WITHSCORES")
    redis.call("DEL", SCRATCH)
    flat = as_zadd(sorted, 1, #sorted)
  end
  local from = 1
  local fence, top, top_member = last_page(index, pages)
  if fence then
    -- The first entry above the set's highest: a binary search over entry numbers.
    local lo, hi = 1, n / 2 + 1
    while lo < hi do
      local mid = math.floor((lo + hi) / 2)
      if entry_less(top, top_member, tonumber(flat[2 * mid - 1]), flat[2 * mid]) then
        hi = mid
      else
        lo = mid + 1
      end
    end
    from = 2 * lo - 1
    for i = 1, from - 1, 2 do
      paged_add(index, pages, flat[i], flat[i + 1])
    end
    if from <= n then
      fence = last_page(index, pages)
      local room = PAGE_FILL - redis.call("ZCARD", pages .. fence)
      if room > 0 then
        local to = math.min(n, from + 2 * room - 1)
        zadd_descending(pages .. fence, flat, from, to)
        from = to + 1
      end
    end
  end
  while from <= n do
    local to = math.min(n, from + 2 * PAGE_FILL - 1)
    new_page(index, pages, flat, from, to)
    from = to + 1
  end
end

-- A reader of a paged set in ascending order, `buffer` entries per read, from the first page on;
-- paged_head() gives the current entry, the caller moves `pos` on by `step`. Nothing is removed
-- while reading: the caller notes what to remove in `remove[fence]` and calls paged_done() at the
-- end. A caller that never needs the scores sets `step` to 1 before the first read: the pages are
-- then read without them (Redis formats each score as text, and Lua parses it back).
local function paged_reader(index, pages, buffer)
  return {
    index = index,
    pages = pages,
    buffer = buffer,
    step = 2,
    rank = -1,
    fence = nil,
    offset = 0,
    page_drained = true,
    finished = false,
    buf = {},
    pos = 1,
    remove = {},
  }
end

-- The reader's current entry (member, score; score nil when read without scores), or nil at the end.
local function paged_head(r)
  while r.pos > #r.buf do
    if r.finished then
      return nil
    end
    if r.page_drained then
      r.rank = r.rank + 1
      r.fence = redis.call("ZRANGE", r.index, r.rank, r.rank)[1]
      if not r.fence then
        r.finished = true
        return nil
      end
      r.offset = 0
      r.page_drained = false
    end
    if r.step == 2 then
      r.buf = redis.call("ZRANGE", r.pages .. r.fence, r.offset, r.offset + r.buffer - 1, "WITHSCORES")
    else
      r.buf = redis.call("ZRANGE", r.pages .. r.fence, r.offset, r.offset + r.buffer - 1)
    end
    r.pos = 1
    r.page_drained = #r.buf < r.step * r.buffer
    if #r.buf == 0 and r.offset == 0 then
      -- A fence whose page is gone (keys lost): dropped by paged_done().
      r.remove[r.fence] = r.remove[r.fence] or {}
    end
    r.offset = r.offset + r.buffer
  end
  if r.step == 1 then
    return r.buf[r.pos], nil
  end
  return r.buf[r.pos], tonumber(r.buf[r.pos + 1])
end

-- Notes the reader's current entry for removal.
local function paged_take(r)
  local list = r.remove[r.fence]
  if not list then
    list = {}
    r.remove[r.fence] = list
  end
  list[#list + 1] = r.buf[r.pos]
end

-- Removes what the reader noted; returns whether the set is now empty.
local function paged_done(r)
  local any = r.rank == 0 and r.finished
  for fence, members in pairs(r.remove) do
    any = true
    local page = r.pages .. fence
    if #members > 0 then
      call_sliced("ZREM", page, members, 1000)
    end
    if redis.call("EXISTS", page) == 0 then
      redis.call("ZREM", r.index, fence)
    end
  end
  return any and redis.call("EXISTS", r.index) == 0
end

-- The set's lowest entry's score, or nil.
local function paged_min_score(index, pages)
  local fence = redis.call("ZRANGE", index, 0, 0)[1]
  if not fence then
    return nil
  end
  local first = redis.call("ZRANGE", pages .. fence, 0, 0, "WITHSCORES")
  return first[2] and tonumber(first[2])
end
