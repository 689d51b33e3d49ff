--[[
  open: RedisStore.open(). Claims a fresh prefix for errand, or checks the one found.

  Guarantees: the first open of a prefix writes {p}:schema_version and the epoch in {p}:meta (see
  includes/epoch.lua) exactly once, however many processes open at the same time. The client
  refuses a prefix written by a newer errand (a higher schema version).

  KEYS[1] {p}:meta
  ARGV[1] a fresh epoch
  Returns {stored schema version, epoch, this script's schema version}.
]]
--@include "includes/prelude.lua"

redis.call("SETNX", SCHEMA_VERSION_KEY, SCHEMA_VERSION)
redis.call("HSETNX", META, "epoch", ARGV[1])
return { tonumber(redis.call("GET", SCHEMA_VERSION_KEY)), redis.call("HGET", META, "epoch"), SCHEMA_VERSION }
