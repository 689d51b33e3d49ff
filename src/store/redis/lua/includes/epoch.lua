--[[
  epoch: noticing that Redis lost errand's data.

  {p}:meta holds an epoch, a random token written when the prefix is first used. Every store
  remembers the epoch it saw at open and sends it with each write (ARGV[1]), along with a fresh
  token of its own (ARGV[2]). When meta is gone, Redis restarted without persistence or the keys
  were flushed: the first script to notice writes the fresh token as the new epoch, and every
  script, in every process, whose epoch differs fails once with "ERRAND_DATA_LOST <epoch>". The
  store reports that error, adopts the new epoch and carries on with the (now empty) data. The
  write that failed changed nothing.
]]
local function check_epoch()
  local epoch = redis.call("HGET", META, "epoch")
  if epoch == ARGV[1] then
    return nil
  end
  if not epoch then
    epoch = ARGV[2]
    redis.call("HSET", META, "epoch", epoch)
    redis.call("SET", SCHEMA_VERSION_KEY, SCHEMA_VERSION)
  end
  return redis.error_reply("ERRAND_DATA_LOST " .. epoch)
end
