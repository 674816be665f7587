-- claim: lease up to N ready jobs to the caller, on the server clock.
--
-- KEYS[1]  emq:{q}:pending     sorted set of ready ids
-- KEYS[2]  emq:{q}:active      sorted set of leased ids, scored by lease deadline (server ms)
-- ARGV[1]  the queue's key base, "…emq:{q}:", to name each job's hash (same slot as KEYS)
-- ARGV[2]  the lease in server milliseconds
-- ARGV[3]  N, the most jobs to take
--
-- Reply    {now, deadline, id1, attempts1, payload1, id2, …}: the server time the lease was
--          stamped at, the deadline every claimed job got, then one triple per job.
local pending_key = KEYS[1]
local active_key = KEYS[2]
local base = ARGV[1]
local lease_ms = tonumber(ARGV[2])
local limit = tonumber(ARGV[3])

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local deadline = now + lease_ms
local reply = {now, deadline}
local popped = redis.call('ZPOPMIN', pending_key, limit)
for i = 1, #popped, 2 do
  local id = popped[i]
  local job_key = base .. 'job:' .. id
  if redis.call('EXISTS', job_key) == 1 then
    -- The new attempt number is the fencing token: every earlier holder now carries a stale one.
    local attempts = redis.call('HINCRBY', job_key, 'attempts', 1)
    redis.call('HSET', job_key, 'state', 'active')
    redis.call('ZADD', active_key, deadline, id)
    reply[#reply + 1] = id
    reply[#reply + 1] = attempts
    reply[#reply + 1] = redis.call('HGET', job_key, 'payload') or ''
  end
end
return reply
