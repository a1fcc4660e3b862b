-- Enqueues a batch of jobs into one queue, all or none, at one `now`.
-- ARGV: now, wake channel ('' none), count, then per job: id, run, name, queue, input, key,
-- tenant ('' none), max attempts, run_at, traceparent ('' none), actor ('' none), policy ('d'
-- dedupe, 'e' error), the id index shards of the id and of the run ('' when the caller wrote
-- them: on a cluster they live in other slots; on one server the script writes them too).
-- A job due now is announced on the wake channel (once per call), so idle workers claim it at
-- once rather than at their next poll.
-- Answers per job {status, id, run}: 'new', 'same' (the id is stored already: an outbox
-- re-publish) or 'held' (a live job holds the key); or, with nothing written, {{'conflict',
-- index, holder id, holder run}} for a held key under the error policy.
local now, channel, count = ARGV[1], ARGV[2], tonumber(ARGV[3])
local FIELDS = 14
local HEAD = 3
local planned, seen_ids, seen_keys = {}, {}, {}
for i = 1, count do
  local b = HEAD + (i - 1) * FIELDS
  local id, run, name, tenant, key = ARGV[b + 1], ARGV[b + 2], ARGV[b + 3], ARGV[b + 7], ARGV[b + 6]
  local lk = name .. '\0' .. tenant .. '\0' .. key
  local policy = ARGV[b + 12]
  local stored = seen_ids[id]
  if stored == nil and redis.call('EXISTS', jk(id)) == 1 then
    stored = redis.call('HGET', jk(id), 'run')
  end
  if stored then
    planned[i] = { 'same', id, stored }
  else
    local holder = seen_keys[lk]
    if holder == nil then
      local holder_id = redis.call('HGET', LIVE, lk)
      if holder_id then holder = { holder_id, redis.call('HGET', jk(holder_id), 'run') } end
    end
    if holder then
      if policy == 'e' then return { { 'conflict', tostring(i), holder[1], holder[2] } } end
      planned[i] = { 'held', holder[1], holder[2] }
    else
      planned[i] = { 'new', id, run }
      seen_ids[id] = run
      seen_keys[lk] = { id, run }
    end
  end
end
local due_now = false
for i = 1, count do
  if planned[i][1] == 'new' then
    local b = HEAD + (i - 1) * FIELDS
    local j = {
      id = ARGV[b + 1], run = ARGV[b + 2], name = ARGV[b + 3], queue = ARGV[b + 4],
      input = ARGV[b + 5], key = ARGV[b + 6], max = ARGV[b + 8], run_at = ARGV[b + 9],
      attempt = '0', claims = '0', created = now, updated = now,
    }
    if ARGV[b + 7] ~= '' then j.tenant = ARGV[b + 7] end
    if ARGV[b + 10] ~= '' then j.tp = ARGV[b + 10] end
    if ARGV[b + 11] ~= '' then j.actor = ARGV[b + 11] end
    j.lk = j.name .. '\0' .. ARGV[b + 7] .. '\0' .. j.key
    if tonumber(j.run_at) <= tonumber(now) then j.state = 'ready' else j.state = 'delayed' end
    j.m = string.format('%016d', redis.call('INCR', SEQ)) .. j.id
    redis.call('HSET', jk(j.id), unpack(flat(j)))
    redis.call('HSET', LIVE, j.lk, j.id)
    if ARGV[b + 13] ~= '' then redis.call('HSET', ARGV[b + 13], j.id, j.queue) end
    if ARGV[b + 14] ~= '' then redis.call('HSET', ARGV[b + 14], j.run, j.queue) end
    if j.state == 'ready' then due_now = true end
    redis.call('ZADD', ALL, 0, created_member(j))
    index(j)
  end
end
if due_now and channel ~= '' then redis.call('PUBLISH', channel, ARGV[HEAD + 4]) end
local out = {}
for i = 1, count do out[i] = planned[i] end
return out
