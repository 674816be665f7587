-- session_renew: push out a worker's session, only for the holder of its token. One call per tick
-- renews every job the worker holds, however many: the jobs are never touched.
--
-- KEYS[1]  emq:{q}:sessions        sorted set: worker -> session deadline (server ms)
-- KEYS[2]  emq:{q}:session_tokens  hash: worker -> the token its session was opened with
-- ARGV[1]  the worker's name
-- ARGV[2]  the caller's token
-- ARGV[3]  the session lease in server milliseconds
--
-- Reply    {now, deadline} when the token matched; {now, 0} when the session is gone (the reaper
--          ended it after it lapsed, or it was never opened): the worker holds nothing any more.
local sessions_key = KEYS[1]
local tokens_key = KEYS[2]
local worker = ARGV[1]

--- @include "includes/server_now"
if redis.call('HGET', tokens_key, worker) ~= ARGV[2] then
  return {now, 0}
end
local deadline = now + tonumber(ARGV[3])
-- XX: the token is deleted before the entry, so a matching token means the entry is there
redis.call('ZADD', sessions_key, 'XX', deadline, worker)
return {now, deadline}
