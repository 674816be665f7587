-- includes/wake: leave a wake token for a parked consumer.
-- expects: nothing. defines: function wake(wake_key).
local function wake(wake_key)
  -- One token is enough to wake a parked consumer; more would only pile up.
  if redis.call('LLEN', wake_key) == 0 then
    redis.call('RPUSH', wake_key, 1)
  end
end
