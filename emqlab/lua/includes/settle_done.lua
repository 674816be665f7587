-- includes/settle_done: settle a job as done: out of active (and of its session's `held:` index),
-- state done, its id in the done set.
-- expects: nothing. defines: function settle_done(job_key, active_key, done_key, id, base), and
-- leave_active (included here; `base` as there).
--- @include "includes/leave_active"
local function settle_done(job_key, active_key, done_key, id, base)
  leave_active(active_key, job_key, id, base)
  redis.call('HSET', job_key, 'state', 'done')
  redis.call('SADD', done_key, id)
end
