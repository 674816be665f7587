-- promote: move delayed jobs that have fallen due to pending, a bounded slice at a time.
--
-- KEYS[1]  emq:{q}:schedule    sorted set of delayed ids, scored by when they fall due (server ms)
-- KEYS[2]  emq:{q}:pending     sorted set of ready ids
-- KEYS[3]  emq:{q}:wake        list a parked consumer blocks on
-- ARGV[1]  the queue's key base, "…emq:{q}:", to name each job's hash
-- ARGV[2]  the most jobs to move in this call
--
-- Reply    how many jobs were moved.
local schedule_key = KEYS[1]
local pending_key = KEYS[2]
local wake_key = KEYS[3]
local base = ARGV[1]
local limit = tonumber(ARGV[2])

--- @include "includes/wake"

--- @include "includes/server_now"
local due = redis.call('ZRANGEBYSCORE', schedule_key, '-inf', now, 'LIMIT', 0, limit)
for _, id in ipairs(due) do
  redis.call('ZREM', schedule_key, id)
  redis.call('ZADD', pending_key, now, id)
  redis.call('HSET', base .. 'job:' .. id, 'state', 'pending')
end
if #due > 0 then
  wake(wake_key)
end
return #due
