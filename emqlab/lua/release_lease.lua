-- release_lease: delete a lease key, but only while the caller still owns it.
--
-- KEYS[1]  the lease key
-- ARGV[1]  the caller's token
--
-- Reply    1 when the key held the token and was deleted;
--          0 when the key is gone or holds another token (nothing changed).
local lease_key = KEYS[1]
local token = ARGV[1]

if redis.call('GET', lease_key) == token then
  return redis.call('DEL', lease_key)
end
return 0
