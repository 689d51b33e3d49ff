--[[
  getMany: Store.getMany(). The jobs with these ids, in order, as one consistent read.

  KEYS[1] {p}:meta
  ARGV[1..n] ids
  Returns one job reply per id; for an id that names no job, the reply is the id alone.
]]
--@include "includes/prelude.lua"
--@include "includes/job.lua"

local out = {}
for i = 1, #ARGV do
  out[i] = job_reply(ARGV[i])
end
return out
