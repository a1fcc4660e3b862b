-- The webhook ledger, in its own slot (KEYS[1] is the store's tag): one slot for every
-- endpoint, because the purge takes the oldest attempts across endpoints.
--   <tag>:e:<endpoint>  hash: fails (the failure run), disabled (when; absent: enabled)
--   <tag>:a:<endpoint>  zset: the endpoint's attempts by their number, each member
--                       `<number, 16 digits><the driver's JSON of the attempt>`
--   <tag>:at            zset: `<number, 16 digits>\0<endpoint>` of every attempt by when it was
--                       sent, for the purge
--   <tag>:seq           counter: attempt numbers, in the order they were recorded
-- ARGV[1] is the verb:
--   record: endpoint, at, delivered ('1'/'0'), attempt JSON. Stores the attempt and moves the
--   failure run (a delivered attempt resets it); answers {failures, disabled ('1'/'0')}.
--   purge: before, limit. Deletes attempts sent before `before`, oldest first, at most
--   `limit`; answers how many.
local H = KEYS[1]
local SEQ = H .. ':seq'
local AT = H .. ':at'
local function endpoint(id) return H .. ':e:' .. id end
local function attempts(id) return H .. ':a:' .. id end
local verb = ARGV[1]
if verb == 'record' then
  local id, at, delivered, json = ARGV[2], ARGV[3], ARGV[4], ARGV[5]
  local number = string.format('%016d', redis.call('INCR', SEQ))
  redis.call('ZADD', attempts(id), number, number .. json)
  redis.call('ZADD', AT, at, number .. '\0' .. id)
  local fails
  if delivered == '1' then
    redis.call('HSET', endpoint(id), 'fails', '0')
    fails = 0
  else
    fails = redis.call('HINCRBY', endpoint(id), 'fails', 1)
  end
  local disabled = redis.call('HEXISTS', endpoint(id), 'disabled')
  return { string.format('%d', fails), string.format('%d', disabled) }
elseif verb == 'purge' then
  local before, limit = ARGV[2], tonumber(ARGV[3])
  if limit < 1 then return 0 end
  local old = redis.call('ZRANGEBYSCORE', AT, '-inf', '(' .. before, 'LIMIT', 0, limit)
  for _, entry in ipairs(old) do
    local number, id = string.sub(entry, 1, 16), string.sub(entry, 18)
    redis.call('ZREMRANGEBYSCORE', attempts(id), number, number)
    redis.call('ZREM', AT, entry)
  end
  return #old
end
return redis.error_reply('X_DRIVER unknown verb ' .. verb)
