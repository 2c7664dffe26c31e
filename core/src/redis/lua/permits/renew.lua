-- Watchdog renewal of many expiring permits in one round trip (Redisson's updateLeaseTime, which
-- its users call themselves): re-score each permit that is still there.
-- KEYS[i] {<name>}:timeout of permit i; ARGV[1] the new expiry score; ARGV[i + 1] permit i's id
-- Returns one entry per permit: 1 renewed, 0 gone (the permit is lost).
local out = {}
for i = 1, #KEYS do
  if redis.call('zscore', KEYS[i], ARGV[i + 1]) then
    redis.call('zadd', KEYS[i], 'XX', ARGV[1], ARGV[i + 1])
    out[i] = 1
  else
    out[i] = 0
  end
end
return out
