-- complete: settle a leased job as done, only for the holder of its current attempt.
--
-- KEYS[1]  emq:{q}:job:<id>    the job's hash
-- KEYS[2]  emq:{q}:active      sorted set of leased ids
-- KEYS[3]  emq:{q}:done        set of finished ids
-- ARGV[1]  the job id
-- ARGV[2]  the attempts value the caller claimed with (its fencing token)
-- ARGV[3]  optional: the queue's key base, to drop the job from its session holder's `held:` index
--
-- Reply    'ok' when the job is now done; 'stale' when the job is not active under that
--          attempt (reaped, re-claimed or already done: nothing changed); 'missing' if no such job.
local job_key = KEYS[1]
local active_key = KEYS[2]
local done_key = KEYS[3]
local id = ARGV[1]
local attempts = ARGV[2]

local state, current = unpack(redis.call('HMGET', job_key, 'state', 'attempts'))
if not state then
  return 'missing'
end
-- Both checks matter: a reaped job still carries the old attempts until it is re-claimed.
if state ~= 'active' or current ~= attempts then
  return 'stale'
end
redis.call('ZREM', active_key, id)
if ARGV[3] and redis.call('HGET', job_key, 'session') == '1' then
  redis.call('ZREM', ARGV[3] .. 'held:' .. redis.call('HGET', job_key, 'worker'), id)
  redis.call('HDEL', job_key, 'session')
end
redis.call('HSET', job_key, 'state', 'done')
redis.call('SADD', done_key, id)
return 'ok'
