-- Enqueues a batch of jobs into one queue, all or none, at one `now`.
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
-- new job and one command per index for the whole batch.
local now, channel, count, queue, ix = ARGV[1], ARGV[2], tonumber(ARGV[3]), ARGV[4], ARGV[5]
local FIELDS = 13
local HEAD = 5
local function arg(i, n) return ARGV[HEAD + (i - 1) * FIELDS + n] end
-- The id index shard of an id, as `keys.rs` names it: the id's last hex digit.
local function shard_of(id) return ix .. tonumber(string.sub(id, -1), 16) .. '}:ids' end
local function run_of(i)
  local run = arg(i, 2)
  if run == '' then return arg(i, 1) end
  return run
end

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
-- entry until the purge), and the live keys' holders. A batch reads them, one HMGET per shard
-- or chunk; a lone job claims both at once with HSETNX (what it claimed and did not use is
-- taken back below). On a cluster the caller wrote the index: every id is looked up.
local indexed, fresh, holders, claimed_id, claimed_key = {}, {}, {}, false, false
local lks = {}
for i = 1, count do
  lks[i] = arg(i, 3) .. '\0' .. arg(i, 6) .. '\0' .. arg(i, 5)
end
if count == 1 then
  local id = arg(1, 1)
  if ix ~= '' then
    claimed_id = redis.call('HSETNX', shard_of(id), id, queue) == 1
    indexed[id] = not claimed_id
  end
  if claimed_id or redis.call('EXISTS', jk(id)) == 0 then
    fresh[id] = true
    claimed_key = redis.call('HSETNX', LIVE, lks[1], id) == 1
    if not claimed_key then holders[1] = redis.call('HGET', LIVE, lks[1]) end
  end
else
  if ix ~= '' then
    local by_shard = {}
    for i = 1, count do
      local id = arg(i, 1)
      local shard = shard_of(id)
      local list = by_shard[shard]
      if list == nil then list = {}; by_shard[shard] = list end
      list[#list + 1] = id
    end
    for shard, ids in pairs(by_shard) do
      local found = call_chunked('HMGET', shard, ids, 1000)
      for k = 1, #ids do
        if found[k] then indexed[ids[k]] = true end
      end
    end
  end
  holders = call_chunked('HMGET', LIVE, lks, 1000)
end

-- The plan.
local planned, seen_ids, seen_keys, replaces = {}, {}, {}, {}
local new = 0
for i = 1, count do
  local id, lk = arg(i, 1), lks[i]
  local stored = seen_ids[id]
  if stored == nil and not fresh[id] and (ix == '' or indexed[id]) then
    local run = redis.call('HMGET', jk(id), 'state', 'run')
    if run[1] then stored = run[2] or id end
  end
  if stored then
    planned[i] = { 'same', id, stored }
  else
    local holder = seen_keys[lk]
    if holder == nil and holders[i] then
      local holder_id = holders[i]
      local f = redis.call('HMGET', jk(holder_id), 'state', 'run', 'uq')
      if f[1] and (LIVE_STATES[f[1]] or (f[3] and tonumber(f[3]) > tonumber(now))) then
        holder = { holder_id, f[2] or holder_id }
      end
      -- Else a key left by a job that is gone, or by a finished one whose unique period
      -- lapsed: it is free, and the new job takes it (its entry is written over below).
    end
    if holder then
      if arg(i, 11) == 'e' then
        if claimed_id then redis.call('HDEL', shard_of(id), id) end
        return { 'conflict', tostring(i), holder[1], holder[2] }
      end
      planned[i] = { 'held', holder[1], holder[2] }
      if arg(i, 11) == 'r' then replaces[#replaces + 1] = { holder[1], i } end
    else
      new = new + 1
      planned[i] = true
      local run = run_of(i)
      seen_ids[id] = run
      seen_keys[lk] = { id, run }
    end
  end
end

-- The write: one HSET per new job, then each index once for the batch.
local seq = 0
if new > 0 then seq = redis.call('INCRBY', SEQ, new) - new end
local due_now = false
local due_later = nil
local function later(run_at)
  local at = tonumber(run_at)
  if due_later == nil or at < tonumber(due_later) then due_later = run_at end
end
local created_head = string.format('%017d', tonumber(now)) .. ':'
local all, by_state, due, live, shards = {}, {}, {}, {}, {}
local function shard_put(id, value)
  local shard = shard_of(id)
  local list = shards[shard]
  if list == nil then list = {}; shards[shard] = list end
  list[#list + 1] = id
  list[#list + 1] = value
end
local out = { 'ok' }
for i = 1, count do
  local plan = planned[i]
  if plan == true then
    local id, run, name, input, key, tenant, max, run_at, tp, actor, prio, uq =
      arg(i, 1), arg(i, 2), arg(i, 3), arg(i, 4), arg(i, 5), arg(i, 6), arg(i, 7), arg(i, 8),
      arg(i, 9), arg(i, 10), arg(i, 12), arg(i, 13)
    seq = seq + 1
    local state = 'delayed'
    if tonumber(run_at) <= tonumber(now) then
      state = 'ready'
      due_now = true
    else
      later(run_at)
    end
    local h = { 'name', name, 'queue', queue, 'input', input, 'key', key, 'max', max,
      'run_at', run_at, 'created', now, 'state', state, 'sq', seq }
    if run ~= '' then h[#h + 1] = 'run'; h[#h + 1] = run end
    if tenant ~= '' then h[#h + 1] = 'tenant'; h[#h + 1] = tenant end
    if tp ~= '' then h[#h + 1] = 'tp'; h[#h + 1] = tp end
    if actor ~= '' then h[#h + 1] = 'actor'; h[#h + 1] = actor end
    if uq ~= '' then h[#h + 1] = 'uq'; h[#h + 1] = uq end
    -- The default priority is not stored; another gives the row a lane of its own.
    local row_lane = tenant
    if prio ~= '' then
      h[#h + 1] = 'prio'; h[#h + 1] = prio
      row_lane = tenant .. '\0' .. prio
    end
    redis.call('HSET', jk(id), unpack(h))
    local member = created_head .. id
    all[#all + 1] = 0
    all[#all + 1] = member
    local list = by_state[state]
    if list == nil then list = {}; by_state[state] = list end
    list[#list + 1] = 0
    list[#list + 1] = member
    list = due[row_lane]
    if list == nil then list = {}; due[row_lane] = list end
    list[#list + 1] = run_at
    list[#list + 1] = string.format('%016d', seq) .. id
    if not claimed_key then
      live[#live + 1] = lks[i]
      live[#live + 1] = id
    end
    if ix ~= '' then
      if not claimed_id then shard_put(id, queue) end
      -- A run is its first job's unless one was named: only a run begun elsewhere is indexed.
      if run ~= '' and run ~= id then shard_put(run, queue) end
    end
  else
    -- A lone job that was not inserted gives back the index entry it claimed.
    if claimed_id then redis.call('HDEL', shard_of(arg(i, 1)), arg(i, 1)) end
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
  if #live > 0 then call_chunked('HSET', LIVE, live, 2000) end
  call_chunked('ZADD', ALL, all, 2000)
  for state, members in pairs(by_state) do call_chunked('ZADD', state_key(state), members, 2000) end
  for row_lane, members in pairs(due) do
    call_chunked('ZADD', due_key(row_lane), members, 2000)
    redis.call('SADD', TENANTS, row_lane)
  end
end
-- Debounce, once the batch's own rows are indexed (a holder may be one of them): a holder
-- still queued takes the later job's input and run_at; one that started is left as it is.
for _, r in ipairs(replaces) do
  local h = load(r[1])
  if h and (h.state == 'ready' or h.state == 'delayed') then
    local i = r[2]
    local state = 'delayed'
    if tonumber(arg(i, 8)) <= tonumber(now) then
      state = 'ready'
      due_now = true
    else
      later(arg(i, 8))
    end
    change(h, { input = arg(i, 4), run_at = arg(i, 8), state = state, updated = now }, now)
  end
end
if due_now and channel ~= '' then redis.call('PUBLISH', channel, queue) end
if due_later and channel ~= '' then redis.call('PUBLISH', channel, '@' .. due_later .. ':' .. queue) end
return out
