--[[
  putJobType: Store.putJobType(). Creates or replaces a job type's settings.

  Every job type is one field of the hash {p}:types: the type's name, and the value
  "<createdAt>:<updatedAt>:<config JSON>". Reads (getJobType, listJobTypes) and deletes are single
  HGET/HGETALL/HDEL commands from the client; only this write needs a script, to keep the stored
  createdAt of a type it replaces.

  Guarantees: atomic; a replace keeps createdAt and takes updatedAt and the settings as given.

  KEYS[1] {p}:meta
  ARGV[1] epoch  ARGV[2] fresh epoch  ARGV[3] name  ARGV[4] createdAt  ARGV[5] updatedAt
  ARGV[6] config (JSON text)
  Returns 1 when the type was new, 0 when it replaced one.
]]
--@include "includes/prelude.lua"
--@include "includes/epoch.lua"

local TYPES = P .. "types"

local err = check_epoch()
if err then
  return err
end

local old = redis.call("HGET", TYPES, ARGV[3])
local created = old and string.match(old, "^(%-?%d+):") or ARGV[4]
redis.call("HSET", TYPES, ARGV[3], created .. ":" .. ARGV[5] .. ":" .. ARGV[6])
return old and 0 or 1
