-- One batch of one queue's retention: finished rows past their cutoff (done rows before
-- `done_before`, failed, dead and cancelled ones before `finished_before`), at most `limit` of
-- each kind, oldest first, with their steps and history; then up to `limit` history rows of
-- jobs no longer stored written before the later cutoff.
-- A purged job's groups it waited on go with it once every member was counted; one still to
-- count a live member stays (that member still refers to it) until the groups' pass counts the
-- last one (`groups.lua`). A removed job's go when its history does.
-- ARGV: done_before, finished_before, limit, now. Answers {deleted count, ids...}: the ids
-- and run ids of the deleted jobs, the ids of removed jobs whose last history row went, and
-- the ids of the groups dropped, which the caller takes out of the id index.
local done_before, finished_before, limit, now =
  tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4]

-- Drops the groups job `id` waited on that count no live member any more.
local function drop_groups_of(id)
  for _, group in ipairs(redis.call('SMEMBERS', waits_key(id))) do
    local g = redis.call('HMGET', group_key(group), 'size', 'settled')
    if g[1] and tonumber(g[2]) >= tonumber(g[1]) then drop_group(group) end
  end
  redis.call('DEL', waits_key(id))
end

local later = math.max(done_before, finished_before)
local deleted, forgotten, done_n, finished_n = {}, {}, 0, 0
local offset, scanned = 0, 0
while (done_n < limit or finished_n < limit) and scanned < 10 * limit + 500 do
  local rows = redis.call('ZRANGEBYSCORE', FIN, '-inf', '(' .. string.format('%d', later),
    'WITHSCORES', 'LIMIT', offset, 500)
  scanned = scanned + #rows / 2
  if #rows == 0 then break end
  for i = 1, #rows, 2 do
    local j = load(rows[i])
    local at = tonumber(rows[i + 1])
    if j then
      -- Done rows and the other finished ones each have their cutoff and their share.
      local done = j.state == 'done'
      local due
      if done then
        due = at < done_before and done_n < limit
      else
        due = at < finished_before and finished_n < limit
      end
      if due then
        if done then done_n = done_n + 1 else finished_n = finished_n + 1 end
        delete(j, now)
        if j.hw then drop_groups_of(j.id) end
        redis.call('DEL', hist_key(j.id))
        redis.call('ZREM', GONE, j.id)
        deleted[#deleted + 1] = j.id
        forgotten[#forgotten + 1] = j.id
        forgotten[#forgotten + 1] = j.run
      else
        offset = offset + 1
      end
    else
      redis.call('ZREM', FIN, rows[i])
    end
  end
end
-- History of jobs no longer stored.
local budget = limit
for _, id in ipairs(redis.call('ZRANGE', GONE, 0, limit - 1)) do
  if budget <= 0 then break end
  local rows = redis.call('LRANGE', hist_key(id), 0, -1)
  local kept = {}
  for _, row in ipairs(rows) do
    if budget > 0 and tonumber(cjson.decode(row).at) < later then
      budget = budget - 1
    else
      kept[#kept + 1] = row
    end
  end
  redis.call('DEL', hist_key(id))
  if #kept > 0 then
    redis.call('RPUSH', hist_key(id), unpack(kept))
  else
    redis.call('ZREM', GONE, id)
    forgotten[#forgotten + 1] = id
    drop_groups_of(id)
  end
end
local out = { tostring(#deleted) }
for _, id in ipairs(forgotten) do out[#out + 1] = id end
for _, group in ipairs(dropped_groups or {}) do out[#out + 1] = group end
return out
