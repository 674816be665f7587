-- echomq_like_complete: a model of EchoMQ's completion, written for emqlab's tests in our own words (not
-- EchoMQ's code). It keeps the interface of emqlab's complete.lua and behaves as EchoMQ's does when read
-- from its source: the caller is admitted on attempts alone; the id leaves active, and leaves pending
-- only when it was not in active; the job's row is retired (deleted). Where EchoMQ counts a finished job
-- in a metrics hash, this model puts its id in emqlab's done set, so the invariants can find it.
--
-- KEYS[1]  emq:{q}:job:<id>    the job's hash
-- KEYS[2]  emq:{q}:active      sorted set of leased ids
-- KEYS[3]  emq:{q}:done        set of finished ids
-- ARGV[1]  the job id
-- ARGV[2]  the attempts value the caller claimed with
-- ARGV[3]  the queue's key base, "…emq:{q}:", to name its pending set
--
-- Reply    'ok'; 'stale' when the attempts differ; 'missing' when there is no row.
local job_key = KEYS[1]
local active_key = KEYS[2]
local done_key = KEYS[3]
local id = ARGV[1]
local attempts = ARGV[2]
local base = ARGV[3]

local current = redis.call('HGET', job_key, 'attempts')
if not current then
  return 'missing'
end
if current ~= attempts then
  return 'stale'
end
if redis.call('ZREM', active_key, id) == 0 then
  redis.call('ZREM', base .. 'pending', id)
end
redis.call('DEL', job_key)
redis.call('SADD', done_key, id)
return 'ok'
