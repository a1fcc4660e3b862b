-- Enqueues a batch of jobs into one queue, all or none, at one `now` (a lone job goes through
-- `enqueue_one.lua`, the same rules in straight lines).
-- ARGV: now, wake channel ('' none), count, queue, the id index's key head ('{<prefix>:ix:';
-- '' when the caller wrote the index: on a cluster it lives in other slots; on one server the
-- script writes it too), then per job: id, run ('' when it is the id), name, input, key,
-- tenant ('' none), max attempts, run_at, traceparent ('' none), actor ('' none), policy ('d'
-- dedupe, 'e' error, 'r' replace: debounce, a queued holder takes the job's input and run_at),
-- priority ('' the default, 0), unique_until ('' none: the job's creation plus its unique
-- period, until which it holds its key when it is no longer live).
-- A job due now is announced on the wake channel (once per call), so idle workers claim it at
-- once rather than at their next poll; the earliest delayed job of the call announces its due
-- time ('@<run_at>:<queue>', driver/wake_payload.rs), so an idle worker starts it when due.
-- Answers {'ok', then (index, status, id, run) for each job not inserted}: status 'same' (the
-- id is stored already: an outbox re-publish) or 'held' (a job holds the key: a live one, or
-- a finished one whose unique_until is after now); every job
-- not named was inserted with its own id and run. Or, with nothing written,
-- {'conflict', index, holder id, holder run} for a held key under the error policy.
--
-- The plan only reads (the id index and the live keys with one HMGET per shard or chunk, the
-- jobs themselves only where the index already names an id), then the write is one HSET per
-- new job and one command per index for the whole batch. The rules each job meets (`key_holder`,
-- `store_new`, `replace_queued`) are `lib.lua`'s.
local now, channel, count, queue, ix = ARGV[1], ARGV[2], tonumber(ARGV[3]), ARGV[4], ARGV[5]

-- unpack() takes a few thousand values at most: long lists go in chunks.
local function call_chunked(command, key, list, chunk)
  local answers = {}
  for from = 1, #list, chunk do
    local part = redis.call(command, key, unpack(list, from, math.min(from + chunk - 1, #list)))
    if type(part) == 'table' then
      for _, v in ipairs(part) do answers[#answers + 1] = v end
    end
  end
  return answers
end

-- Which ids the index already names (perhaps stale: a job taken back or removed leaves its
-- entry until the purge), and the live keys' holders, one HMGET per shard or chunk. On a
-- cluster the caller wrote the index: every id is looked up. Each job's live key and id
-- shard are made once here, for the plan and the write.
local indexed = {}
local lks, shard_of, by_shard = {}, {}, {}
for i = 1, count do
  local at = enqueue_at(i)
  lks[i] = ARGV[at + 3] .. '\0' .. ARGV[at + 6] .. '\0' .. ARGV[at + 5]
  if ix ~= '' then
    local id = ARGV[at + 1]
    local shard = id_shard(ix, id)
    shard_of[i] = shard
    local list = by_shard[shard]
    if list == nil then list = {}; by_shard[shard] = list end
    list[#list + 1] = id
  end
end
if ix ~= '' then
  for shard, ids in pairs(by_shard) do
    local found = call_chunked('HMGET', shard, ids, 1000)
    for k = 1, #ids do
      if found[k] then indexed[ids[k]] = true end
    end
  end
end
local holders = call_chunked('HMGET', LIVE, lks, 1000)

-- The plan: `true` for a new job, else {status, id, run}. A job new in this batch is noted
-- by its place (`seen_ids`, `seen_keys`), so a later one with its id or key answers it.
local planned, seen_ids, seen_keys, replaces = {}, {}, {}, {}
local new = 0
-- The run of the batch's job `i` (its id unless it named one).
local function run_of(i)
  local at = enqueue_at(i)
  local run = ARGV[at + 2]
  if run == '' then return ARGV[at + 1] end
  return run
end
for i = 1, count do
  local at = enqueue_at(i)
  local id, lk = ARGV[at + 1], lks[i]
  local stored
  local earlier = seen_ids[id]
  if earlier then
    stored = run_of(earlier)
  elseif ix == '' or indexed[id] then
    local run = redis.call('HMGET', jk(id), 'state', 'run')
    if run[1] then stored = run[2] or id end
  end
  if stored then
    planned[i] = { 'same', id, stored }
  else
    local holder
    local earlier_key = seen_keys[lk]
    if earlier_key then
      holder = { ARGV[enqueue_at(earlier_key) + 1], run_of(earlier_key) }
    elseif holders[i] then
      holder = key_holder(holders[i], now)
    end
    local policy = ARGV[at + 11]
    if holder then
      if policy == 'e' then
        return { 'conflict', tostring(i), holder[1], holder[2] }
      end
      planned[i] = { 'held', holder[1], holder[2] }
      if policy == 'r' then replaces[#replaces + 1] = { holder[1], i } end
    else
      new = new + 1
      planned[i] = true
      seen_ids[id] = i
      seen_keys[lk] = i
    end
  end
end

-- The write: one HSET per new job, then each index once for the batch.
local seq = 0
if new > 0 then seq = redis.call('INCRBY', SEQ, new) - new end
local due_now = false
local due_later = nil
local function due_at(run_at)
  if not_after(run_at, now) then
    due_now = true
  elseif due_later == nil or not not_after(due_later, run_at) then
    due_later = run_at
  end
end
local created_head = pad(now, 17) .. ':'
local by_state, due, live, shards = {}, {}, {}, {}
local function shard_put(shard, id, value)
  local list = shards[shard]
  if list == nil then list = {}; shards[shard] = list end
  list[#list + 1] = id
  list[#list + 1] = value
end
local out = { 'ok' }
for i = 1, count do
  local plan = planned[i]
  if plan == true then
    local at = enqueue_at(i)
    local id, run = ARGV[at + 1], ARGV[at + 2]
    seq = seq + 1
    local sq = string.format('%d', seq)
    local state, row_lane, run_at = store_new(ARGV, i, queue, now, sq)
    due_at(run_at)
    local list = by_state[state]
    if list == nil then list = {}; by_state[state] = list end
    list[#list + 1] = '0'
    list[#list + 1] = created_head .. id
    list = due[row_lane]
    if list == nil then list = {}; due[row_lane] = list end
    list[#list + 1] = run_at
    list[#list + 1] = order_entry(sq, id)
    live[#live + 1] = lks[i]
    live[#live + 1] = id
    if ix ~= '' then
      shard_put(shard_of[i], id, queue)
      -- A run is its first job's unless one was named: only a run begun elsewhere is indexed.
      if run ~= '' and run ~= id then shard_put(id_shard(ix, run), run, queue) end
    end
  else
    local status = 'same'
    if plan[1] == 'held' then status = 'held' end
    out[#out + 1] = tostring(i)
    out[#out + 1] = status
    out[#out + 1] = plan[2]
    out[#out + 1] = plan[3]
  end
end
if new > 0 then
  for shard, list in pairs(shards) do call_chunked('HSET', shard, list, 2000) end
  call_chunked('HSET', LIVE, live, 2000)
  for state, members in pairs(by_state) do call_chunked('ZADD', state_key(state), members, 2000) end
  for row_lane, members in pairs(due) do
    call_chunked('ZADD', due_key(row_lane), members, 2000)
    redis.call('SADD', TENANTS, row_lane)
  end
end
-- Debounce, once the batch's own rows are indexed (a holder may be one of them).
for _, r in ipairs(replaces) do
  local run_at = replace_queued(r[1], ARGV, r[2], now)
  if run_at then due_at(run_at) end
end
if due_now and channel ~= '' then redis.call('PUBLISH', channel, queue) end
if due_later and channel ~= '' then redis.call('PUBLISH', channel, '@' .. due_later .. ':' .. queue) end
return out
