-- Who leads: the record of the lock's holder, or the holder as stored when it has no record (a
-- Redisson RLock on the same name, or a leader between its grant and its record).
-- KEYS[1] the lock hash, KEYS[2] the leader record, KEYS[3] the lock's fencing counter
-- Returns false, or {identity, term, 1 if recorded else 0}.
local h = redis.call('hmget', KEYS[2], 'holder', 'identity', 'term')
if h[1] and redis.call('hexists', KEYS[1], h[1]) == 1 then
  return {h[2], h[3], 1}
end
for _, f in ipairs(redis.call('hkeys', KEYS[1])) do
  if f ~= 'mode' then
    return {f, redis.call('get', KEYS[3]) or '0', 0}
  end
end
return false
