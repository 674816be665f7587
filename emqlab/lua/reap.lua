-- reap: return jobs the server clock says are abandoned to pending, a bounded slice at a time.
--
-- KEYS[1]  emq:{q}:active      sorted set of leased ids, scored by when the reaper may take them (server ms)
-- KEYS[2]  emq:{q}:pending     sorted set of ready ids
-- KEYS[3]  emq:{q}:reaped      counter: every job this script ever returned (what the server did,
--                              read by chaos at the end; a worker that dies after reaping cannot lose it)
-- KEYS[4]  emq:{q}:sessions    sorted set of worker sessions, scored by session deadline (server ms)
-- ARGV[1]  the queue's key base, "…emq:{q}:", to name each job's hash and each worker's `held:` index
-- ARGV[2]  the most jobs to return in this call (leases and sessions together)
--
-- Two sources, one limit. First, active ids whose score TIME has reached: a per-job lease that ran
-- out, or a hard deadline (max runtime) set at claim. Then, with what is left of the limit, the jobs
-- of workers whose session has lapsed: the first slice ends the session (its token is deleted, so
-- its renewal and its claims now fail), each slice returns up to the rest of the limit from the
-- worker's `held:` index, and the session's entry goes when its index is empty.
--
-- Reply    {now, n, id1, …, idn, worker1, …}: the server time, how many ids were returned, the
--          ids, then the workers whose lapsed session this call ended for good. Fewer ids than the
--          limit means nothing abandoned is left.
local active_key = KEYS[1]
local pending_key = KEYS[2]
local reaped_key = KEYS[3]
local sessions_key = KEYS[4]
local base = ARGV[1]
local limit = tonumber(ARGV[2])
local tokens_key = base .. 'session_tokens'

--- @include "includes/server_now"
local ids = {}
local scored = {}

local function back_to_pending(id, job_key, held)
  -- Score 0. The lab scores pending by arrival time (enqueue, promote and retry write the server's
  -- TIME), so 0 puts a reaped job ahead of every job that arrived normally: it already waited its
  -- turn once and is claimed next; reaped jobs among themselves go in id order (a score tie).
  -- EchoMQ scores every pending job 0 and orders pending by id alone, its ids being minted in
  -- time order; the lab's ids are any name, so it keeps arrival time in the score instead.
  scored[#scored + 1] = 0
  scored[#scored + 1] = id
  -- state = pending is what fences the lapsed holder: its extend and its completion both
  -- require state = active, so it cannot slip the job back into active before the re-claim.
  -- A session holder's job also loses its mark (session = 0): it is no longer in any `held:` index.
  if held then
    redis.call('HSET', job_key, 'state', 'pending', 'session', '0')
  else
    redis.call('HSET', job_key, 'state', 'pending')
  end
  ids[#ids + 1] = id
end

local expired = redis.call('ZRANGEBYSCORE', active_key, '-inf', now, 'LIMIT', 0, limit)
for _, id in ipairs(expired) do
  local job_key = base .. 'job:' .. id
  local worker, session = unpack(redis.call('HMGET', job_key, 'worker', 'session'))
  if session == '1' then  -- a session holder's job past its hard deadline leaves the worker's index
    redis.call('ZREM', base .. 'held:' .. worker, id)
  end
  back_to_pending(id, job_key, session == '1')
end
-- One ZREM for the slice: a backlog of 100,000 costs a few calls per slice, not three per job.
-- Slices stay far below Lua's unpack limit.
if #expired > 0 then
  redis.call('ZREM', active_key, unpack(expired))
end

local ended = {}
local left = limit - #expired
local turns = limit  -- idle lapsed sessions cost a turn each, so a call stays bounded by the limit
while left > 0 and turns > 0 do
  turns = turns - 1
  local lapsed = redis.call('ZRANGEBYSCORE', sessions_key, '-inf', now, 'LIMIT', 0, 1)
  if #lapsed == 0 then
    break
  end
  local worker = lapsed[1]
  redis.call('HDEL', tokens_key, worker)  -- the session is over: its renewal and claims now fail
  local held_key = base .. 'held:' .. worker
  local held = redis.call('ZRANGE', held_key, 0, left - 1)
  local gone = {}
  for _, id in ipairs(held) do
    local job_key = base .. 'job:' .. id
    local state, holder = unpack(redis.call('HMGET', job_key, 'state', 'worker'))
    if state == 'active' and holder == worker then
      gone[#gone + 1] = id
      back_to_pending(id, job_key, true)
    end
  end
  if #gone > 0 then
    redis.call('ZREM', active_key, unpack(gone))
  end
  if #held > 0 then
    redis.call('ZREM', held_key, unpack(held))
  end
  left = left - #held
  if redis.call('EXISTS', held_key) == 0 then
    redis.call('ZREM', sessions_key, worker)
    ended[#ended + 1] = worker
  end
end

if #ids > 0 then
  redis.call('ZADD', pending_key, unpack(scored))
  redis.call('INCRBY', reaped_key, #ids)
end
local reply = {now, #ids}
for _, id in ipairs(ids) do
  reply[#reply + 1] = id
end
for _, worker in ipairs(ended) do
  reply[#reply + 1] = worker
end
return reply
