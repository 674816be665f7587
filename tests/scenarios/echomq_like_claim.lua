-- echomq_like_claim: a model of EchoMQ's claim, written for emqlab's tests in our own words (not
-- EchoMQ's code). It keeps the interface of emqlab's claim.lua (without sessions or hard deadlines) and
-- behaves as EchoMQ's does when read from its source: it pops the first pending id and counts its attempts
-- up on the job's row whether or not the row is still there, so a retired row starts again from 1.
--
-- KEYS[1]  emq:{q}:pending     sorted set of ready ids
-- KEYS[2]  emq:{q}:active      sorted set of leased ids, scored by lease deadline (server ms)
-- ARGV[1]  the queue's key base, "…emq:{q}:", to name each job's hash
-- ARGV[2]  the lease in server milliseconds
-- ARGV[3]  N, the most jobs to take
-- ARGV[4]  (unused here: hard deadlines)  ARGV[5] the caller's worker name  ARGV[6] (unused: sessions)
--
-- Reply    {now, deadline, 0, id1, attempts1, payload1, …}
local pending_key = KEYS[1]
local active_key = KEYS[2]
local base = ARGV[1]
local lease_ms = tonumber(ARGV[2])
local limit = tonumber(ARGV[3])
local worker = ARGV[5] or ''

--- @include "includes/server_now"
local deadline = now + lease_ms
local reply = {now, deadline, 0}
local popped = redis.call('ZPOPMIN', pending_key, limit)
for i = 1, #popped, 2 do
  local id = popped[i]
  local job_key = base .. 'job:' .. id
  local attempts = redis.call('HINCRBY', job_key, 'attempts', 1)
  redis.call('HSET', job_key, 'state', 'active', 'worker', worker)
  redis.call('ZADD', active_key, deadline, id)
  reply[#reply + 1] = id
  reply[#reply + 1] = attempts
  reply[#reply + 1] = redis.call('HGET', job_key, 'payload') or ''
end
return reply
