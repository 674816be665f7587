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

--- @include "includes/job_fence"
--- @include "includes/leave_active"

local refused = job_fence(job_key, attempts)
if refused then
  return refused
end
--- @include "includes/server_now"
leave_active(active_key, job_key, id, ARGV[4])
if delay_ms > 0 then
  redis.call('HSET', job_key, 'state', 'scheduled')
  redis.call('ZADD', schedule_key, now + delay_ms, id)
else
  redis.call('HSET', job_key, 'state', 'pending')
  redis.call('ZADD', pending_key, now, id)
end
return 'ok'
