-- The lease store, in its own slot (KEYS[1] is the store's tag): ONE fence sequence for every
-- lease key (the port promises fences increasing across keys, so every key shares this slot),
-- and per lease key a hash of its grants, slot -> `<fence>:<expires_at>:<holder>` (fence and
-- time are decimal digits, so the holder, which may hold anything, is the rest). Times come in
-- as decimal microseconds and are only compared here, never computed.
-- A zset (`:exp`) keeps each lease key by the latest expiry any of its grants was given (a
-- grant or a renewal only raises it), so a key whose score is past has no live grant left.
-- ARGV[1] is the verb:
--   acquire: lease key, limit, holder, now, expires_at, sweep_before, sweep_batch. Grants the
--   lowest slot below the limit that is free (never held, released, or lapsed by now) with the
--   next fence; answers {slot, fence}, or an empty list when every slot is held. It also
--   deletes the grants of up to sweep_batch other keys whose every grant lapsed at or before
--   sweep_before (now less LEASE_SWEEP_AFTER), oldest first: a rate's grants are never
--   released, so without it every key a keyed rate saw would keep its hash.
--   renew: lease key, slot, fence, expires_at. Extends the grant if the slot still carries its
--   fence (released or taken over: it does not); answers 1 or 0.
--   release: lease key, slot, fence. Deletes the grant if the slot still carries its fence;
--   answers 1 or 0.
local L = KEYS[1]
local FENCE = L .. ':fence'
local EXPIRY = L .. ':exp'
local function grants(key) return L .. ':l:' .. key end

-- Raises `key`'s latest expiry to `expires` (never lowers it).
local function expires_by(key, expires)
  local latest = redis.call('ZSCORE', EXPIRY, key)
  if not latest or tonumber(latest) < tonumber(expires) then
    redis.call('ZADD', EXPIRY, expires, key)
  end
end

-- A stored grant's fence and expiry (the holder is not needed here).
local function parse(grant)
  local a = string.find(grant, ':', 1, true)
  local b = string.find(grant, ':', a + 1, true)
  return string.sub(grant, 1, a - 1), string.sub(grant, a + 1, b - 1)
end

local verb = ARGV[1]
if verb == 'acquire' then
  local key, limit, holder, now, expires = ARGV[2], tonumber(ARGV[3]), ARGV[4], ARGV[5], ARGV[6]
  local now_n = tonumber(now)
  local batch = tonumber(ARGV[8])
  -- One more than the batch, in case this key is among them (its lapsed slots are taken over).
  for _, gone in ipairs(redis.call('ZRANGEBYSCORE', EXPIRY, '-inf', ARGV[7], 'LIMIT', 0, batch + 1)) do
    if gone ~= key and batch > 0 then
      redis.call('DEL', grants(gone))
      redis.call('ZREM', EXPIRY, gone)
      batch = batch - 1
    end
  end
  -- The live slots below the limit; walking the stored grants, not 0..limit, keeps a large
  -- limit cheap (a key never stores more grants than slots ever taken).
  local live = {}
  local flat = redis.call('HGETALL', grants(key))
  for i = 1, #flat, 2 do
    local slot = tonumber(flat[i])
    local _, at = parse(flat[i + 1])
    if slot < limit and tonumber(at) > now_n then live[slot] = true end
  end
  local slot = 0
  while live[slot] do slot = slot + 1 end
  if slot >= limit then return {} end
  local fence = string.format('%d', redis.call('INCR', FENCE))
  local field = string.format('%d', slot)
  redis.call('HSET', grants(key), field, fence .. ':' .. expires .. ':' .. holder)
  expires_by(key, expires)
  return { field, fence }
elseif verb == 'renew' or verb == 'release' then
  local key, slot, fence = ARGV[2], ARGV[3], ARGV[4]
  local grant = redis.call('HGET', grants(key), slot)
  if not grant then return 0 end
  local stored, _ = parse(grant)
  if stored ~= fence then return 0 end
  if verb == 'release' then
    redis.call('HDEL', grants(key), slot)
  else
    local b = string.find(grant, ':', #stored + 2, true)
    redis.call('HSET', grants(key), slot, fence .. ':' .. ARGV[5] .. string.sub(grant, b))
    expires_by(key, ARGV[5])
  end
  return 1
end
return redis.error_reply('X_DRIVER unknown verb ' .. verb)
