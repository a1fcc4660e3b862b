-- One queue's share of the per-name counters (`counters_key`, written by `observe`): fields
-- '<width secs>:<bucket start secs>:<what>', `what` one of OUTCOMES. ARGV[1] is the verb:
--   buckets: name, since (micros); answers 7 texts per bucket starting at or after `since`:
--   width, bucket start (secs), then OUTCOMES in order.
--   totals: since (micros); answers 6 texts per name counted here: the name, then the sums of
--   OUTCOMES over its buckets starting at or after `since`.
--   rollup: now (micros), then (keep micros, width secs) per tier, narrowest first. Each
--   bucket whose age puts it in another tier is folded into that tier's bucket (dropped past
--   the last); answers how many buckets moved.
local OUTCOMES = { 'done', 'retried', 'failed', 'dead', 'duration_ms' }
local verb = ARGV[1]

-- A name's buckets: list of {width, start, counts by outcome}.
local function buckets_of(name)
  local flat_fields = redis.call('HGETALL', counters_key(name))
  local by_key, list = {}, {}
  for i = 1, #flat_fields, 2 do
    local width, start, what = string.match(flat_fields[i], '^(%d+):(%d+):(.+)$')
    if width then
      local key = width .. ':' .. start
      local b = by_key[key]
      if b == nil then
        b = { width = tonumber(width), start = tonumber(start), counts = {} }
        by_key[key] = b
        list[#list + 1] = b
      end
      b.counts[what] = (b.counts[what] or 0) + tonumber(flat_fields[i + 1])
    end
  end
  return list
end

local function field(width, start, what)
  return string.format('%d', width) .. ':' .. string.format('%d', start) .. ':' .. what
end

if verb == 'buckets' then
  local since = tonumber(ARGV[3])
  local out = {}
  for _, b in ipairs(buckets_of(ARGV[2])) do
    if b.start * 1000000 >= since then
      out[#out + 1] = string.format('%d', b.width)
      out[#out + 1] = string.format('%d', b.start)
      for _, what in ipairs(OUTCOMES) do out[#out + 1] = string.format('%d', b.counts[what] or 0) end
    end
  end
  return out
elseif verb == 'totals' then
  local since = tonumber(ARGV[2])
  local out = {}
  for _, name in ipairs(redis.call('SMEMBERS', COUNTED)) do
    local sums, any = {}, false
    for _, b in ipairs(buckets_of(name)) do
      if b.start * 1000000 >= since then
        any = true
        for _, what in ipairs(OUTCOMES) do sums[what] = (sums[what] or 0) + (b.counts[what] or 0) end
      end
    end
    if any then
      out[#out + 1] = name
      for _, what in ipairs(OUTCOMES) do out[#out + 1] = string.format('%d', sums[what] or 0) end
    end
  end
  return out
elseif verb == 'rollup' then
  local now = tonumber(ARGV[2])
  local tiers = {}
  for i = 3, #ARGV, 2 do
    tiers[#tiers + 1] = { keep = tonumber(ARGV[i]), width = tonumber(ARGV[i + 1]) }
  end
  -- The width a bucket starting at `start` belongs in at now; nil past the last tier.
  local function tier_of(start)
    local age = now - start * 1000000
    if age < 0 then age = 0 end
    for _, t in ipairs(tiers) do
      if age < t.keep then return t.width end
    end
    return nil
  end
  -- Where a bucket goes: the tier its start belongs in, floored to that tier's width; a
  -- floored start is older, so it may belong one tier further (tiers only widen with age).
  local function target(start)
    local width = tier_of(start)
    while width do
      local folded = start - (start % width)
      local again = tier_of(folded)
      if again == width then return width, folded end
      width, start = again, folded
    end
    return nil, nil
  end
  local moved = 0
  for _, name in ipairs(redis.call('SMEMBERS', COUNTED)) do
    local key = counters_key(name)
    -- Decided on the name's buckets as read, then written: a bucket folded into another that
    -- also moves in this run never loses the counts it received.
    local adds = {}
    for _, b in ipairs(buckets_of(name)) do
      local width, start = target(b.start)
      if width ~= b.width or start ~= b.start then
        moved = moved + 1
        for what, n in pairs(b.counts) do
          redis.call('HDEL', key, field(b.width, b.start, what))
          if width then
            local f = field(width, start, what)
            adds[f] = (adds[f] or 0) + n
          end
        end
      end
    end
    for f, n in pairs(adds) do redis.call('HINCRBY', key, f, string.format('%d', n)) end
    if redis.call('EXISTS', key) == 0 then redis.call('SREM', COUNTED, name) end
  end
  return { string.format('%d', moved) }
end
return redis.error_reply('X_DRIVER unknown verb ' .. verb)
