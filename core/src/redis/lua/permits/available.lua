-- Redisson RPermitExpirableSemaphore availablePermits: reclaim expired permits, then count.
-- KEYS[1] <name>; KEYS[2] {<name>}:timeout; KEYS[3] channel; ARGV[1] now; ARGV[2] 'publish'
--RECLAIM--
reclaim(ARGV[1], -1, ARGV[2])
return tonumber(redis.call('get', KEYS[1]) or '0')
