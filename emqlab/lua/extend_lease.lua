-- extend_lease: push out a lease's TTL, but only while the caller still owns it.
--
-- KEYS[1]  the lease key
-- ARGV[1]  the caller's token (the value it acquired with)
-- ARGV[2]  the new time to live, in milliseconds
--
-- Reply    the key's PTTL after the extend (> 0) when the token matched;
--          0 when the key is gone or holds another token (the lease is lost).
local lease_key = KEYS[1]
local token = ARGV[1]
local ttl_ms = ARGV[2]

if redis.call('GET', lease_key) ~= token then
  return 0
end
redis.call('PEXPIRE', lease_key, ttl_ms)
-- Report what the server now holds, so a timeline's lease band is the server's word.
return redis.call('PTTL', lease_key)
