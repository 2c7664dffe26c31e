-- A leader's record goes with its lock (released, dropped, forced).
-- KEYS[1] the leader record
-- ARGV[1] the holder's field ('' for whoever holds), ARGV[2] the channel, ARGV[3] publish or
-- spublish
if ARGV[1] == '' or redis.call('hget', KEYS[1], 'holder') == ARGV[1] then
  redis.call('del', KEYS[1])
end
redis.call(ARGV[3], ARGV[2], '0')
return 1
