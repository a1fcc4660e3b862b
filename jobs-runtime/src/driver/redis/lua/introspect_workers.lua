-- The worker registry, in the operator's own slot (KEYS[1] is its tag, `Keys::area("ops")`):
-- each worker's row as JSON by id, and an index of when each row expires. ARGV[1] is the verb:
--   announce: now, id, expires_at, row JSON; sweeps the rows expired at `now`, then writes
--   this one.
--   forget: id.
--   list: now; answers the JSON of every row not expired at `now`.
local ROWS = KEYS[1] .. ':workers'     -- hash: worker id -> row JSON
local EXPIRY = KEYS[1] .. ':wexp'      -- zset: worker id by expires_at
local verb = ARGV[1]
if verb == 'announce' then
  local now, id, expires, row = ARGV[2], ARGV[3], ARGV[4], ARGV[5]
  for _, gone in ipairs(redis.call('ZRANGEBYSCORE', EXPIRY, '-inf', now)) do
    redis.call('HDEL', ROWS, gone)
    redis.call('ZREM', EXPIRY, gone)
  end
  redis.call('HSET', ROWS, id, row)
  redis.call('ZADD', EXPIRY, expires, id)
  return 1
elseif verb == 'forget' then
  redis.call('HDEL', ROWS, ARGV[2])
  redis.call('ZREM', EXPIRY, ARGV[2])
  return 1
elseif verb == 'list' then
  local out = {}
  for _, id in ipairs(redis.call('ZRANGEBYSCORE', EXPIRY, '(' .. ARGV[2], '+inf')) do
    local row = redis.call('HGET', ROWS, id)
    if row then out[#out + 1] = row end
  end
  return out
end
return redis.error_reply('X_DRIVER unknown verb ' .. verb)
