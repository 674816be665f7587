-- includes/server_now: the server's clock in milliseconds (TIME replies seconds and microseconds),
-- read once: the one clock a script's deadlines and scores are written and compared on.
-- expects: nothing. defines: `now` (server ms) and `t` (TIME's own reply).
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
