-- claim: lease up to N ready jobs to the caller, on the server clock.
--
-- KEYS[1]  emq:{q}:pending     sorted set of ready ids
-- KEYS[2]  emq:{q}:active      sorted set of leased ids, scored by when the reaper may take them (server ms)
-- ARGV[1]  the queue's key base, "…emq:{q}:", to name each job's hash (same slot as KEYS)
-- ARGV[2]  the lease in server milliseconds (lease designs; a session holder's jobs live by its session)
-- ARGV[3]  N, the most jobs to take
-- ARGV[4]  optional: the hard deadline's length in server ms (0: none). Set once here, never
--          pushed out: the reaper takes the job at claim + this, whoever renews what.
-- ARGV[5]  optional: the caller's worker name, written to the job (which worker holds it)
-- ARGV[6]  optional: the caller's session token. With one, each job is held by the worker's session
--          (`sessions`/`session_tokens`, one lease per worker) and indexed in `held:<worker>`; its
--          active score is its hard deadline or +inf (no per-job lease to renew). A token that is not
--          the session's current one claims nothing.
--
-- Reply    {now, deadline, hard, id1, attempts1, payload1, id2, …}: the server time, the deadline
--          every claimed job got (a session's: the session's deadline; -1: the session is gone,
--          nothing was claimed), the hard deadline (0: none), then one triple per job.
local pending_key = KEYS[1]
local active_key = KEYS[2]
local base = ARGV[1]
local lease_ms = tonumber(ARGV[2])
local limit = tonumber(ARGV[3])
local max_ms = tonumber(ARGV[4] or '0')
local worker = ARGV[5] or ''
local token = ARGV[6] or ''

--- @include "includes/server_now"
local hard = 0
if max_ms > 0 then
  hard = now + max_ms
end
local deadline = now + lease_ms
local score = deadline
if token ~= '' then
  -- only the session's current holder claims under it: a lapsed (reaped) session claims nothing
  if redis.call('HGET', base .. 'session_tokens', worker) ~= token then
    return {now, -1, hard}
  end
  deadline = tonumber(redis.call('ZSCORE', base .. 'sessions', worker))
  score = '+inf'
  if hard > 0 then
    score = hard
  end
elseif hard > 0 and hard < deadline then
  score = hard
  deadline = hard
end
local reply = {now, deadline, hard}
local popped = redis.call('ZPOPMIN', pending_key, limit)
for i = 1, #popped, 2 do
  local id = popped[i]
  local job_key = base .. 'job:' .. id
  if redis.call('EXISTS', job_key) == 1 then
    -- The new attempt number is the fencing token: every earlier holder now carries a stale one.
    local attempts = redis.call('HINCRBY', job_key, 'attempts', 1)
    redis.call('HSET', job_key, 'state', 'active', 'worker', worker)
    if hard > 0 then
      redis.call('HSET', job_key, 'hard', hard)
    else
      redis.call('HDEL', job_key, 'hard')
    end
    if token ~= '' then
      redis.call('HSET', job_key, 'session', '1')
      redis.call('ZADD', base .. 'held:' .. worker, now, id)
    else
      redis.call('HDEL', job_key, 'session')
    end
    redis.call('ZADD', active_key, score, id)
    reply[#reply + 1] = id
    reply[#reply + 1] = attempts
    reply[#reply + 1] = redis.call('HGET', job_key, 'payload') or ''
  end
end
return reply
