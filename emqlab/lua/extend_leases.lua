-- extend_leases: one sweep batch. Push out every lease the caller still owns; report the rest.
--
-- KEYS[1..n]  the lease keys (one worker's leases share a hashtag, so a batch lives on one slot)
-- ARGV[1]     the new time to live, in milliseconds, for every lease in the batch
-- ARGV[2..n+1] the caller's token for each key, in the order of KEYS
--
-- Reply       the 1-based positions (in KEYS) of the leases that were lost: the key is gone or
--             holds another token, so it was left untouched. An empty reply means every lease
--             in the batch was extended to ARGV[1] ms.
local ttl_ms = ARGV[1]
local lost = {}

for i, lease_key in ipairs(KEYS) do
  local token = ARGV[i + 1]
  -- the same admission as extend_lease: extend only what the token still owns
  if redis.call('GET', lease_key) == token then
    redis.call('PEXPIRE', lease_key, ttl_ms)
  else
    lost[#lost + 1] = i
  end
end
return lost
