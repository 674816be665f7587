-- retry: hand a leased job back (now or after a delay), only for the holder of its current attempt.
--
-- KEYS[1]  emq:{q}:job:<id>    the job's hash
-- KEYS[2]  emq:{q}:active      sorted set of leased ids
-- KEYS[3]  emq:{q}:pending     sorted set of ready ids
-- KEYS[4]  emq:{q}:schedule    sorted set of delayed ids
-- ARGV[1]  the job id
-- ARGV[2]  the attempts value the caller claimed with
-- ARGV[3]  delay in server milliseconds (0: ready now)
-- ARGV[4]  optional: the queue's key base, to drop the job from its session holder's `held:` index
--
-- Reply    'ok', 'stale' (not active under that attempt; nothing changed) or 'missing'.
local job_key = KEYS[1]
local active_key = KEYS[2]
local pending_key = KEYS[3]
local schedule_key = KEYS[4]
local id = ARGV[1]
local attempts = ARGV[2]
local delay_ms = tonumber(ARGV[3])

local state, current = unpack(redis.call('HMGET', job_key, 'state', 'attempts'))
if not state then
  return 'missing'
end
if state ~= 'active' or current ~= attempts then
  return 'stale'
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREM', active_key, id)
if ARGV[4] and redis.call('HGET', job_key, 'session') == '1' then
  redis.call('ZREM', ARGV[4] .. 'held:' .. redis.call('HGET', job_key, 'worker'), id)
  redis.call('HDEL', job_key, 'session')
end
if delay_ms > 0 then
  redis.call('HSET', job_key, 'state', 'scheduled')
  redis.call('ZADD', schedule_key, now + delay_ms, id)
else
  redis.call('HSET', job_key, 'state', 'pending')
  redis.call('ZADD', pending_key, now, id)
end
return 'ok'
