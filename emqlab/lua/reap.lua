-- reap: return jobs whose lease has passed on the server clock to pending, a bounded slice at a time.
--
-- KEYS[1]  emq:{q}:active      sorted set of leased ids, scored by lease deadline (server ms)
-- KEYS[2]  emq:{q}:pending     sorted set of ready ids
-- KEYS[3]  emq:{q}:reaped      counter: every lease this script ever returned (what the server did,
--                              read by chaos at the end; a worker that dies after reaping cannot lose it)
-- ARGV[1]  the queue's key base, "…emq:{q}:", to name each job's hash
-- ARGV[2]  the most leases to return in this call
--
-- Reply    {now, id1, id2, …}: the server time used, then the ids returned to pending.
--          Fewer ids than the limit means no expired lease is left.
local active_key = KEYS[1]
local pending_key = KEYS[2]
local reaped_key = KEYS[3]
local base = ARGV[1]
local limit = tonumber(ARGV[2])

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local expired = redis.call('ZRANGEBYSCORE', active_key, '-inf', now, 'LIMIT', 0, limit)
local reply = {now}
if #expired == 0 then
  return reply
end
-- One ZREM and one ZADD for the whole slice: a backlog of 100,000 leases costs a few calls per
-- slice, not three per lease. Slices stay far below Lua's unpack limit.
redis.call('ZREM', active_key, unpack(expired))
local scored = {}
for _, id in ipairs(expired) do
  -- Score 0. The lab scores pending by arrival time (enqueue, promote and retry write the server's
  -- TIME), so 0 puts a reaped job ahead of every job that arrived normally: it already waited its
  -- turn once and is claimed next; reaped jobs among themselves go in id order (a score tie).
  -- EchoMQ scores every pending job 0 and orders pending by id alone, its ids being minted in
  -- time order; the lab's ids are any name, so it keeps arrival time in the score instead.
  scored[#scored + 1] = 0
  scored[#scored + 1] = id
  -- state = pending is what fences the lapsed holder: its extend and its completion both
  -- require state = active, so it cannot slip the job back into active before the re-claim.
  redis.call('HSET', base .. 'job:' .. id, 'state', 'pending')
  reply[#reply + 1] = id
end
redis.call('ZADD', pending_key, unpack(scored))
redis.call('INCRBY', reaped_key, #expired)
return reply
