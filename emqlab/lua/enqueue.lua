-- enqueue: add a job once. A second enqueue of the same id changes nothing (idempotent).
--
-- KEYS[1]  emq:{q}:job:<id>    the job's hash (state, attempts, payload)
-- KEYS[2]  emq:{q}:pending     sorted set of ready ids
-- KEYS[3]  emq:{q}:schedule    sorted set of delayed ids, scored by when they fall due
-- KEYS[4]  emq:{q}:wake        list a parked consumer blocks on
-- ARGV[1]  the job id
-- ARGV[2]  the payload
-- ARGV[3]  delay in server milliseconds (0: ready now)
--
-- Reply    1 when the job was added; 0 when a job with this id already exists.
local job_key = KEYS[1]
local pending_key = KEYS[2]
local schedule_key = KEYS[3]
local wake_key = KEYS[4]
local id = ARGV[1]
local payload = ARGV[2]
local delay_ms = tonumber(ARGV[3])

--- @include "includes/wake"

if redis.call('EXISTS', job_key) == 1 then
  return 0
end
--- @include "includes/server_now"
if delay_ms > 0 then
  redis.call('HSET', job_key, 'state', 'scheduled', 'attempts', 0, 'payload', payload)
  redis.call('ZADD', schedule_key, now + delay_ms, id)
  return 1
end
redis.call('HSET', job_key, 'state', 'pending', 'attempts', 0, 'payload', payload)
-- Scored by arrival, so the oldest ready job is claimed first.
redis.call('ZADD', pending_key, now, id)
wake(wake_key)
return 1
