-- A fenced write: run the commands only if the token is not older than the largest one this
-- fence accepted, and record it.
-- KEYS[1] the fence (a string: the largest token accepted)
-- ARGV[1] the token (decimal, no leading zeros), ARGV[2] how many commands, then each command
-- as its number of arguments followed by them.
-- Returns {0, accepted} when the token is older (nothing ran), else {1, {replies}}.
local function older(a, b)
  if #a ~= #b then
    return #a < #b
  end
  return a < b
end
local token = ARGV[1]
local top = redis.call('get', KEYS[1])
if top and older(token, top) then
  return {0, top}
end
if not top or older(top, token) then
  redis.call('set', KEYS[1], token)
end
local replies = {}
local at = 3
for c = 1, tonumber(ARGV[2]) do
  local argc = tonumber(ARGV[at])
  replies[c] = redis.call(unpack(ARGV, at + 1, at + argc))
  at = at + 1 + argc
end
return {1, replies}
