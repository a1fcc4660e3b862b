-- Enqueues a batch of jobs into one queue, all or none, at one `now`.
-- ARGV: now, wake channel ('' none), count, then per job: id, run, name, queue, input, key,
-- tenant ('' none), max attempts, run_at, traceparent ('' none), actor ('' none), policy ('d'
-- dedupe, 'e' error), the id index shards of the id and of the run ('' when the caller wrote
-- them: on a cluster they live in other slots; on one server the script writes them too).
-- A job due now is announced on the wake channel (once per call), so idle workers claim it at
-- once rather than at their next poll.
-- Answers per job {status, id, run}: 'new', 'same' (the id is stored already: an outbox
-- re-publish) or 'held' (a live job holds the key); or, with nothing left written, {{'conflict',
-- index, holder id, holder run}} for a held key under the error policy.
--
-- The plan claims each new job's live key with one HSETNX (and, on one server, its id with one
-- HSETNX on the index, whose 0 is the rare "stored already?" question); the write is one HSET
-- per job and one command per index for the whole batch, so a batch of 1,000 costs about 2,000
-- calls rather than 14,000.
local now, channel, count = ARGV[1], ARGV[2], tonumber(ARGV[3])
local FIELDS = 14
local HEAD = 3
local planned, seen_ids, seen_keys, indexed = {}, {}, {}, {}
-- What the plan wrote, taken back on a conflict: {hash, field}.
local taken = {}
local function undo()
  for _, t in ipairs(taken) do redis.call('HDEL', t[1], t[2]) end
end
for i = 1, count do
  local b = HEAD + (i - 1) * FIELDS
  local id, run, name, key, tenant = ARGV[b + 1], ARGV[b + 2], ARGV[b + 3], ARGV[b + 6], ARGV[b + 7]
  local lk = name .. '\0' .. tenant .. '\0' .. key
  local policy, id_shard = ARGV[b + 12], ARGV[b + 13]
  local stored = seen_ids[id]
  if stored == nil then
    -- One server: the index entry doubles as the question; a cluster asks the job itself.
    local fresh_id
    if id_shard ~= '' then
      fresh_id = redis.call('HSETNX', id_shard, id, ARGV[b + 4]) == 1
      if fresh_id then
        taken[#taken + 1] = { id_shard, id }
        indexed[i] = id_shard
      end
    else
      fresh_id = false
    end
    if not fresh_id and redis.call('EXISTS', jk(id)) == 1 then
      stored = redis.call('HGET', jk(id), 'run')
    end
  end
  if stored then
    planned[i] = { 'same', id, stored }
  else
    local holder = seen_keys[lk]
    if holder == nil and redis.call('HSETNX', LIVE, lk, id) == 0 then
      local holder_id = redis.call('HGET', LIVE, lk)
      local holder_run = redis.call('HGET', jk(holder_id), 'run')
      if holder_run then
        holder = { holder_id, holder_run }
      else
        -- A key left by a job that is gone: it is free.
        redis.call('HSET', LIVE, lk, id)
      end
    end
    if holder then
      if policy == 'e' then
        undo()
        return { { 'conflict', tostring(i), holder[1], holder[2] } }
      end
      planned[i] = { 'held', holder[1], holder[2] }
    else
      taken[#taken + 1] = { LIVE, lk }
      planned[i] = { 'new', id, run }
      seen_ids[id] = run
      seen_keys[lk] = { id, run }
    end
  end
end

-- The write: one HSET per new job, then each index once for the batch. A job that was not
-- inserted leaves no entry in the id index.
local new = 0
for i = 1, count do
  if planned[i][1] == 'new' then
    new = new + 1
  elseif indexed[i] then
    redis.call('HDEL', indexed[i], ARGV[HEAD + (i - 1) * FIELDS + 1])
  end
end
local seq = redis.call('INCRBY', SEQ, new) - new
local due_now = false
local all, by_state, due, waiting, tenants, runs = {}, {}, {}, {}, {}, {}
local function push(list, ...)
  for _, v in ipairs({ ... }) do list[#list + 1] = v end
end
for i = 1, count do
  if planned[i][1] == 'new' then
    local b = HEAD + (i - 1) * FIELDS
    seq = seq + 1
    local j = {
      id = ARGV[b + 1], run = ARGV[b + 2], name = ARGV[b + 3], queue = ARGV[b + 4],
      input = ARGV[b + 5], key = ARGV[b + 6], max = ARGV[b + 8], run_at = ARGV[b + 9],
      attempt = '0', claims = '0', created = now, updated = now,
    }
    local tenant = ARGV[b + 7]
    if tenant ~= '' then j.tenant = tenant end
    if ARGV[b + 10] ~= '' then j.tp = ARGV[b + 10] end
    if ARGV[b + 11] ~= '' then j.actor = ARGV[b + 11] end
    j.lk = j.name .. '\0' .. tenant .. '\0' .. j.key
    if tonumber(j.run_at) <= tonumber(now) then
      j.state = 'ready'
      due_now = true
    else
      j.state = 'delayed'
    end
    j.m = string.format('%016d', seq) .. j.id
    redis.call('HSET', jk(j.id), unpack(flat(j)))
    local member = created_member(j)
    push(all, 0, member)
    by_state[j.state] = by_state[j.state] or {}
    push(by_state[j.state], 0, member)
    due[tenant] = due[tenant] or {}
    push(due[tenant], j.run_at, j.m)
    push(waiting, j.run_at, j.id)
    tenants[tenant] = true
    -- A run is its first job's unless one was named: only a run begun elsewhere is indexed.
    local run_shard = ARGV[b + 14]
    if run_shard ~= '' and j.run ~= j.id then
      runs[run_shard] = runs[run_shard] or {}
      push(runs[run_shard], j.run, j.queue)
    end
  end
end
-- unpack() takes a few thousand values at most: send long lists in chunks.
local function call_chunked(command, key, list)
  local CHUNK = 2000
  for from = 1, #list, CHUNK do
    local to = math.min(from + CHUNK - 1, #list)
    redis.call(command, key, unpack(list, from, to))
  end
end
if new > 0 then
  call_chunked('ZADD', ALL, all)
  for state, members in pairs(by_state) do call_chunked('ZADD', state_key(state), members) end
  for tenant, members in pairs(due) do
    call_chunked('ZADD', due_key(tenant), members)
    redis.call('SADD', TENANTS, tenant)
  end
  call_chunked('ZADD', WAITING, waiting)
  for shard, pairs_ in pairs(runs) do call_chunked('HSET', shard, pairs_) end
end
if due_now and channel ~= '' then redis.call('PUBLISH', channel, ARGV[HEAD + 4]) end
local out = {}
for i = 1, count do out[i] = planned[i] end
return out
