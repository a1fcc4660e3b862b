-- The event bus, in its own slot (KEYS[1] is the events' tag): every event of a name and key
-- in one sorted set by mark, each member `<expires_at, 17 digits><event JSON>`; an expiry
-- index for the purge; and the runs parked waiting on a name and key. ARGV[1] is the verb:
--   publish: now, expires_at, name, key, event JSON. Answers {mark, waiters...}: the waiters
--   (`<queue>\0<job id>`) are taken; the caller wakes each in its queue.
--   wait: name, key, since mark, now, waiter. Files the waiter and answers 1 if an unexpired
--   event of the name and key was stored after the mark (the run must not sleep through it).
--   purge: now, limit. Deletes expired events, oldest expiry first; answers how many.
local E = KEYS[1]
local SEQ = E .. ':seq'
local EXPIRY = E .. ':exp'
local function bus(lk) return E .. ':e:' .. lk end
local function waiters(lk) return E .. ':w:' .. lk end
local verb = ARGV[1]
if verb == 'publish' then
  local now, expires, name, key, json = ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6]
  local lk = name .. '\0' .. key
  local mark = redis.call('INCR', SEQ)
  local mark_text = string.format('%d', mark)
  redis.call('ZADD', bus(lk), mark_text, string.format('%017d', tonumber(expires)) .. json)
  redis.call('ZADD', EXPIRY, expires, mark_text .. '\0' .. lk)
  local out = { mark_text }
  for _, w in ipairs(redis.call('SMEMBERS', waiters(lk))) do out[#out + 1] = w end
  redis.call('DEL', waiters(lk))
  return out
elseif verb == 'wait' then
  local name, key, since, now, waiter = ARGV[2], ARGV[3], ARGV[4], tonumber(ARGV[5]), ARGV[6]
  local lk = name .. '\0' .. key
  redis.call('SADD', waiters(lk), waiter)
  for _, member in ipairs(redis.call('ZRANGEBYSCORE', bus(lk), '(' .. since, '+inf')) do
    if tonumber(string.sub(member, 1, 17)) > now then return 1 end
  end
  return 0
elseif verb == 'purge' then
  local now, limit = ARGV[2], tonumber(ARGV[3])
  local gone = 0
  for _, entry in ipairs(redis.call('ZRANGEBYSCORE', EXPIRY, '-inf', now, 'LIMIT', 0, limit)) do
    local sep = string.find(entry, '\0', 1, true)
    local mark, lk = string.sub(entry, 1, sep - 1), string.sub(entry, sep + 1)
    gone = gone + redis.call('ZREMRANGEBYSCORE', bus(lk), mark, mark)
    redis.call('ZREM', EXPIRY, entry)
  end
  return gone
end
return redis.error_reply('X_DRIVER unknown verb ' .. verb)
