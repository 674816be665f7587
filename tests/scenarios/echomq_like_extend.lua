-- echomq_like_extend: a model of EchoMQ's batched lease extension, written for emqlab's tests in our own
-- words (not EchoMQ's code). It keeps the interface of emqlab's extend_active.lua and behaves as EchoMQ's
-- extend does when read from its source: a lease is pushed out whenever the job's stored attempts equal
-- the caller's, whatever the job's state, by a plain ZADD, which adds the id to active if the reaper took
-- it out. emqlab's own script checks the state too and adds nothing (ZADD XX): see lesson 05.
--
-- KEYS[1]  emq:{q}:active      sorted set of leased ids, scored by lease deadline (server ms)
-- ARGV[1]  the queue's key base, "…emq:{q}:", to name each job's hash
-- ARGV[2]  the lease in server milliseconds
-- ARGV[3…] pairs: job id, the attempts value the caller claimed it with
--
-- Reply    {now, deadline, lost1, lost2, …}: the ids whose attempts no longer match are the lost ones.
local active_key, base, lease_ms = KEYS[1], ARGV[1], tonumber(ARGV[2])
--- @include "includes/server_now"
local deadline = now + lease_ms
local reply = {now, deadline}
for i = 3, #ARGV, 2 do
  local id, attempts = ARGV[i], ARGV[i + 1]
  if redis.call('HGET', base .. 'job:' .. id, 'attempts') == attempts then
    -- attempts alone admit the caller: no state check, no XX
    redis.call('ZADD', active_key, deadline, id)
  else
    reply[#reply + 1] = id
  end
end
return reply
