-- includes/leave_active: take a job out of active and, when its worker's session holds it, out of
-- that worker's `held:` index (the job's session mark goes with it).
-- expects: nothing. defines: function leave_active(active_key, job_key, id, base): `base` is the
-- queue's key base, or nil when the caller gave none (then no `held:` index is touched).
local function leave_active(active_key, job_key, id, base)
  redis.call('ZREM', active_key, id)
  if base and redis.call('HGET', job_key, 'session') == '1' then
    redis.call('ZREM', base .. 'held:' .. redis.call('HGET', job_key, 'worker'), id)
    redis.call('HDEL', job_key, 'session')
  end
end
