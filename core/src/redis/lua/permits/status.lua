-- The free count and the leases in one read (availablePermits, then the lease set): read apart,
-- a permit taken between them was counted twice.
-- KEYS[1] <name>; KEYS[2] {<name>}:timeout; KEYS[3] channel; ARGV[1] now; ARGV[2] 'publish'
--RECLAIM--
reclaim(ARGV[1], -1, ARGV[2])
return {tonumber(redis.call('get', KEYS[1]) or '0'), redis.call('zrange', KEYS[2], 0, -1, 'withscores')}
