-- retry: the holder of a job's current attempt reports it failed. The job goes back to pending (now
-- or after a delay) or, once it has failed on its last allowed attempt, to the dead set for good.
--
-- KEYS[1]  emq:{q}:job:<id>    the job's hash
-- KEYS[2]  emq:{q}:active      sorted set of leased ids
-- KEYS[3]  emq:{q}:pending     sorted set of ready ids
-- KEYS[4]  emq:{q}:schedule    sorted set of delayed ids
-- KEYS[5]  emq:{q}:dead        sorted set of ids that used up their attempts, scored by when (server ms)
-- ARGV[1]  the job id
-- ARGV[2]  the attempts value the caller claimed with
-- ARGV[3]  delay in server milliseconds (0: ready now)
-- ARGV[4]  the queue's key base, to drop the job from its session holder's `held:` index
-- ARGV[5]  the most attempts a job gets (0: no limit); the failure of attempt ARGV[5] is its last
-- ARGV[6]  the failure, kept on the job as `last_error`
--
-- Reply    'pending', 'scheduled', 'dead'; 'stale' (not active under that attempt: reaped,
--          re-claimed or settled; nothing changed) or 'missing'.
local job_key = KEYS[1]
local active_key = KEYS[2]
local pending_key = KEYS[3]
local schedule_key = KEYS[4]
local dead_key = KEYS[5]
local id = ARGV[1]
local attempts = ARGV[2]
local delay_ms = tonumber(ARGV[3])
local max_attempts = tonumber(ARGV[5] or '0')

--- @include "includes/job_fence"
--- @include "includes/leave_active"

-- The fence checks the state as well as the attempts: after a reap the job is pending under the
-- same attempts, and a lapsed holder's late failure report must not move it (or count against it).
local refused = job_fence(job_key, attempts)
if refused then
  return refused
end
--- @include "includes/server_now"
leave_active(active_key, job_key, id, ARGV[4])
redis.call('HSET', job_key, 'last_error', ARGV[6] or '')
if max_attempts > 0 and tonumber(attempts) >= max_attempts then
  redis.call('HSET', job_key, 'state', 'dead')
  redis.call('ZADD', dead_key, now, id)
  return 'dead'
end
if delay_ms > 0 then
  redis.call('HSET', job_key, 'state', 'scheduled')
  redis.call('ZADD', schedule_key, now + delay_ms, id)
  return 'scheduled'
end
redis.call('HSET', job_key, 'state', 'pending')
redis.call('ZADD', pending_key, now, id)
return 'pending'
