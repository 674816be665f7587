-- record_effect: write a job's effect to the results store, fenced on attempts or not.
--
-- KEYS[1]  emq:{q}:job:<id>    the job's hash
-- KEYS[2]  emq:{q}:effects     hash: job id -> how many times its effect was applied
-- KEYS[3]  emq:{q}:active      sorted set of leased ids
-- KEYS[4]  emq:{q}:done        set of finished ids
-- ARGV[1]  the job id
-- ARGV[2]  the attempts value the caller claimed with (its fencing token)
-- ARGV[3]  '1' fenced: refuse unless the job is active under that attempt, and settle the job
--          as done in the same step (a crash cannot fall between effect and completion);
--          '0' unfenced: apply the effect whatever the job's state (the caller completes later)
-- ARGV[4]  optional: the queue's key base, to drop a settled job from its session holder's `held:` index
--
-- Reply    how many times the effect has now been applied (>= 1); -1 when a fenced write was refused.
local job_key = KEYS[1]
local effects_key = KEYS[2]
local active_key = KEYS[3]
local done_key = KEYS[4]
local id = ARGV[1]
local attempts = ARGV[2]
local fenced = ARGV[3] == '1'

--- @include "includes/job_fence"
--- @include "includes/settle_done"

if fenced then
  if job_fence(job_key, attempts) then  -- 'missing' or 'stale': not the current attempt's holder
    return -1
  end
  settle_done(job_key, active_key, done_key, id, ARGV[4])
end
return redis.call('HINCRBY', effects_key, id, 1)
