-- The watchdog renewed a leader's lock: its record lives as long.
-- KEYS[1] the leader record; ARGV[1] the holder's field, ARGV[2] lease ms
if redis.call('hget', KEYS[1], 'holder') == ARGV[1] then
  redis.call('pexpire', KEYS[1], ARGV[2])
  return 1
end
return 0
