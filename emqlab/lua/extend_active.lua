-- extend_active: one batched renewal of the leases a consumer holds, in a single call.
--
-- KEYS[1]  emq:{q}:active      sorted set of leased ids, scored by lease deadline (server ms)
-- ARGV[1]  the queue's key base, "…emq:{q}:", to name each job's hash
-- ARGV[2]  the lease in server milliseconds
-- ARGV[3…] pairs: job id, the attempts value the caller claimed it with
--
-- Reply    {now, deadline, lost1, lost2, …}: the server time, the new deadline of every lease
--          still held, then the ids the caller no longer holds (not extended). A job with a hard
--          deadline (max runtime, set at claim) is never pushed past it; a job its worker's session
--          holds has no lease of its own and is left as it is (still held).
local active_key = KEYS[1]
local base = ARGV[1]
local lease_ms = tonumber(ARGV[2])

--- @include "includes/server_now"
local deadline = now + lease_ms
local reply = {now, deadline}
for i = 3, #ARGV, 2 do
  local id, attempts = ARGV[i], ARGV[i + 1]
  local state, current, hard, session = unpack(redis.call('HMGET', base .. 'job:' .. id, 'state', 'attempts',
                                                         'hard', 'session'))
  -- A plain ZADD here would put a reaped job back into active while it also sits in pending.
  -- The lease is pushed out only for the current attempt of a job still active, and XX never adds.
  if state == 'active' and current == attempts and redis.call('ZSCORE', active_key, id) then
    if session ~= '1' then
      redis.call('ZADD', active_key, 'XX', hard and math.min(deadline, tonumber(hard)) or deadline, id)
    end
  else
    reply[#reply + 1] = id
  end
end
return reply
