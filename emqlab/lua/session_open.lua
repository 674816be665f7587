-- session_open: a worker's one lease on itself (the `session` design), stamped on the server clock.
--
-- KEYS[1]  emq:{q}:sessions        sorted set: worker -> session deadline (server ms)
-- KEYS[2]  emq:{q}:session_tokens  hash: worker -> the token its session was opened with
-- ARGV[1]  the worker's name
-- ARGV[2]  a fresh random token
-- ARGV[3]  the session lease in server milliseconds
--
-- Reply    {now, deadline}; deadline 0 when a session of that name is still open or still being
--          reaped (its jobs would pass to the new holder unworked): nothing changed.
local sessions_key = KEYS[1]
local tokens_key = KEYS[2]
local worker = ARGV[1]

--- @include "includes/server_now"
if redis.call('ZSCORE', sessions_key, worker) then
  return {now, 0}
end
local deadline = now + tonumber(ARGV[3])
redis.call('HSET', tokens_key, worker, ARGV[2])
redis.call('ZADD', sessions_key, deadline, worker)
return {now, deadline}
