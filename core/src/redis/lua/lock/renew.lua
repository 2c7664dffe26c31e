-- Watchdog renewal of many locks in one round trip (Redisson >= 3.44 batches the same way).
-- KEYS[i] lock hash; ARGV[1] lease ms; ARGV[i + 1] the owner field for KEYS[i]
-- Returns one entry per key: 1 renewed, 0 the owner's field is gone (the lock is lost).
local out = {}
for i = 1, #KEYS do
  if redis.call('hexists', KEYS[i], ARGV[i + 1]) == 1 then
    redis.call('pexpire', KEYS[i], ARGV[1])
    out[i] = 1
  else
    out[i] = 0
  end
end
return out
