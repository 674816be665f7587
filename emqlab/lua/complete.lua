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

--- @include "includes/job_fence"
--- @include "includes/settle_done"

local refused = job_fence(job_key, attempts)
if refused then
  return refused
end
settle_done(job_key, active_key, done_key, id, ARGV[3])
return 'ok'
