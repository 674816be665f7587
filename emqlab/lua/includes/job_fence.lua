-- includes/job_fence: does the caller hold the job's current attempt? The attempts value the claim
-- returned is the caller's fencing token.
-- expects: nothing. defines: function job_fence(job_key, attempts): nil when the job is active under
-- that attempt; 'missing' when there is no such job; 'stale' when it is not (reaped, re-claimed or
-- already done).
local function job_fence(job_key, attempts)
  local state, current = unpack(redis.call('HMGET', job_key, 'state', 'attempts'))
  if not state then
    return 'missing'
  end
  -- Both checks matter: a reaped job still carries the old attempts until it is re-claimed.
  if state ~= 'active' or current ~= attempts then
    return 'stale'
  end
  return nil
end
