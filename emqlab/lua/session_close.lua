-- session_close: end a worker's session on a graceful stop, only for the holder of its token and
-- only when it holds no job (a job still held is left to the session's lapse and the reaper).
--
-- KEYS[1]  emq:{q}:sessions        sorted set: worker -> session deadline (server ms)
-- KEYS[2]  emq:{q}:session_tokens  hash: worker -> token
-- KEYS[3]  emq:{q}:held:<worker>   sorted set of the ids the worker's session holds
-- ARGV[1]  the worker's name
-- ARGV[2]  the caller's token
--
-- Reply    1 closed; 0 not the holder (nothing changed); -1 jobs still held (nothing changed).
local worker = ARGV[1]
if redis.call('HGET', KEYS[2], worker) ~= ARGV[2] then
  return 0
end
if redis.call('ZCARD', KEYS[3]) > 0 then
  return -1
end
redis.call('HDEL', KEYS[2], worker)
redis.call('ZREM', KEYS[1], worker)
return 1
