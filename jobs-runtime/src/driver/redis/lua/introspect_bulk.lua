-- One queue's share of a bulk verb: the rows of one state under the filters, oldest first by
-- (created, id) through the state's lex index.
-- ARGV: verb ('requeue', 'remove', 'promote'), mode ('plan' or 'move'), state, now, actor
-- ('' none), quota, then filter pairs: ('name', v), ('tenant', v).
-- A row is movable when it passes the filters and: requeue, no other job holds its key (a live
-- one, or a finished one inside its unique period) and it is the oldest such row of its key (the key's first requeue makes it held for the rest); promote,
-- its run time is after now; remove, always.
--   plan: writes nothing; answers {movable, members...}: how many rows are movable here and
--   the index members of the first `quota` of them, so the driver can pick the oldest rows
--   over every queue.
--   move: moves the first `quota` movable rows, each with its history row (detail 'bulk');
--   answers {moved, movable rows left}.
local verb, mode, state, now, actor = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local quota = tonumber(ARGV[6])
local want = {}
for i = 7, #ARGV, 2 do want[ARGV[i]] = ARGV[i + 1] end
local index = state_key(state)

local keys_seen = {}
local function movable(id)
  local f = redis.call('HMGET', jk(id), 'state', 'name', 'tenant', 'key', 'run_at')
  if f[1] ~= state then return false end
  -- The live key, as `derive` makes it.
  f[4] = f[2] .. '\0' .. (f[3] or '') .. '\0' .. f[4]
  if want.name and f[2] ~= want.name then return false end
  if want.tenant and f[3] ~= want.tenant then return false end
  if verb == 'promote' then return tonumber(f[5]) > tonumber(now) end
  if verb == 'requeue' then
    if keys_seen[f[4]] then return false end
    local holder = redis.call('HGET', LIVE, f[4])
    if holder and holder ~= id then
      local h = redis.call('HMGET', jk(holder), 'state', 'uq')
      if h[1] and holds_key(h[1], h[2], now) then return false end
    end
    keys_seen[f[4]] = true
  end
  return true
end

local function move(id)
  local j = load(id)
  if verb == 'requeue' then
    change(j, {
      state = 'ready', attempt = '0', run_at = now, vis = false, by = false, prog = false,
      res = false, wk = false, updated = now, sq = tostring(redis.call('INCR', SEQ)),
    }, now)
    redis.call('HSET', LIVE, live_key(j), j.id)
    history(j, 'requeue', now, actor, 'bulk')
  elseif verb == 'remove' then
    history(j, 'remove', now, actor, 'bulk')
    delete(j, now)
  else
    change(j, { state = 'ready', run_at = now, updated = now }, now)
    history(j, 'promote', now, actor, 'bulk')
  end
end

-- Walks the index after the last member seen, so rows leaving it as they move skip nothing.
local count, moved, picked = 0, 0, {}
local after = '-'
local CHUNK = 500
while true do
  local members = redis.call('ZRANGEBYLEX', index, after, '+', 'LIMIT', 0, CHUNK)
  for _, member in ipairs(members) do
    local id = string.sub(member, 19)
    if movable(id) then
      count = count + 1
      if mode == 'plan' then
        if #picked < quota then picked[#picked + 1] = member end
      elseif moved < quota then
        move(id)
        moved = moved + 1
      end
    end
  end
  if #members < CHUNK then break end
  after = '(' .. members[#members]
end
if mode == 'plan' then
  local out = { string.format('%d', count) }
  for _, member in ipairs(picked) do out[#out + 1] = member end
  return out
end
return { string.format('%d', moved), string.format('%d', count - moved) }
