-- Groups of jobs awaited together, on one queue (`driver/redis/groups.rs` runs the steps across
-- queues; lib.lua names the keys). A group lives in its waiter's queue, so counting a member,
-- marking the group done and waking the waiter are one script, as is the waiter's own wake
-- after it parks: either a count sees the waiter parked and wakes it, or the wake sees the
-- group done. A member in another queue is marked and noted there, and counted here by the
-- pass. Member entries are '<id>\0<queue>'; a group entry in a member's sets
-- '<group>\0<queue of the group>'. ARGV[1] is the verb:
--   join: group, waiter, parent ('' none), now, need ('keep', 'count' or 'all'), n, this
--     queue's name, wake channel, the id index's key for the group ('' when the caller wrote
--     it), whether the parent's children live here ('1'/'0'), then (member id, member queue
--     ('' no such job)) per member: files the group on its first join and the members not in
--     it yet, sets the need, marks or counts each member still to count that lives here, and
--     answers {group fields as pairs, (id, queue) of the members to mark in other queues};
--     X_JOB_NOT_FOUND when the waiter is gone.
--   mark: group, queue of the group, parent ('' none), then member ids: links each member that
--     exists to its parent or batch and files the group with each live one; answers per id
--     '1' (live: the group counts its end) or '0' (ended or gone: count it now).
--   count: now, wake channel, group to answer ('' none), then (group, member) pairs: counts
--     each member not counted yet; answers {that group's fields as pairs, dropped groups}.
--   take: this queue's name, now, wake channel, limit: up to `limit` noted members, their
--     groups here counted; answers {taken, (member, group entry) pairs still to count in other
--     queues, dropped groups}.
--   done: (member, group entry) pairs counted elsewhere: forgets them, and a member with none
--     left.
--   children: parent, then member entries: files them as the parent's children.
--   get: group; answers its fields as pairs (empty: none).
--   wake: group, now, wake channel: a done group's parked waiter is made due now; answers the
--     group's fields as pairs (empty: none).
--   members: group, first position, limit, this queue's name: answers per member (id, queue
--     ('' read here), state, result, error, error code), absent values false.
--   fields: ids: answers per id (state, result, error, error code), absent values false.
--   links: id, limit, this queue's name: answers {parent, batch, then per child (id, queue (''
--     read here), state)}, absent values ''.
--   cancel_children: parent, now, actor ('' none), first, limit, this queue's name: cancels a
--     page of the parent's live children that live here, each with its history row; answers
--     {children read, those cancelled that have children, (id, queue) of the children in
--     other queues}.
--   cancel: now, actor, then ids: cancels each live one with its history row; answers those
--     cancelled that have children.
local verb = ARGV[1]
-- The wake channel ('' none) of the verbs that may wake a waiter.
local channel = ''

local function split(entry)
  local at = string.find(entry, '\0', 1, true)
  return string.sub(entry, 1, at - 1), string.sub(entry, at + 1)
end

local function answer_group(group)
  return redis.call('HGETALL', group_key(group))
end

-- Makes a waiting waiter (a parked parent, a batch's callback due at 9999-12-31) ready, due
-- now, and announces its queue.
local function wake_waiter(waiter, now)
  local w = load_some(waiter, { 'state', 'tenant', 'prio', 'sq', 'created', 'queue', 'run_at' })
  if w == nil or (w.state ~= 'suspended' and w.state ~= 'delayed') then return end
  change(w, { state = 'ready', run_at = now, updated = now }, now)
  if channel ~= '' then redis.call('PUBLISH', channel, w.queue) end
end

-- Counts `member` in `group` if it is in it and not counted yet.
local function settle_member(group, member)
  local marks = group_marks_key(group)
  if redis.call('HGET', marks, member) ~= '0' then return end
  redis.call('HSET', marks, member, '1')
  redis.call('HINCRBY', group_key(group), 'settled', 1)
end

-- Marks the group done once `need` members settled, waking its waiter; with `may_drop`, drops a
-- group whose waiter is gone once every member is counted (the purge left it for them).
local function check(group, now, may_drop)
  local g = redis.call('HMGET', group_key(group), 'waiter', 'need', 'settled', 'done', 'size')
  if not g[1] then return end
  local settled = tonumber(g[3])
  if g[2] and not g[4] and settled >= tonumber(g[2]) then
    redis.call('HSET', group_key(group), 'done', now)
    wake_waiter(g[1], now)
  end
  if may_drop and settled >= tonumber(g[5]) and redis.call('EXISTS', jk(g[1])) == 0 then
    drop_group(group)
  end
end

-- A member that lives here, still to count for `group` (of queue `group_queue`): linked to its
-- parent or batch, then filed with the group while live, else answered as settled.
local function mark_member(member, group, group_queue, parent)
  local state = redis.call('HGET', jk(member), 'state')
  if not state then return false end
  if parent ~= '' then
    redis.call('HSETNX', jk(member), 'par', parent)
  else
    redis.call('HSET', jk(member), 'bt', group)
  end
  if not LIVE_STATES[state] then return false end
  redis.call('SADD', counting_key(member), group .. '\0' .. group_queue)
  redis.call('HSET', jk(member), 'gr', '1')
  return true
end

-- Files member entries as `parent`'s children, in order, each once.
local function file_children(parent, entries)
  local key = children_key(parent)
  local n = redis.call('ZCARD', key)
  for _, entry in ipairs(entries) do
    if redis.call('ZADD', key, 'NX', n, entry) == 1 then n = n + 1 end
  end
  if #entries > 0 then redis.call('HSET', jk(parent), 'hc', '1') end
end

-- Cancels job `id` if it is live, with its history row; answers whether it was cancelled and
-- has children of its own.
local function cancel_one(id, now, actor)
  local j = load(id)
  if j == nil or not LIVE_STATES[j.state] then return false end
  change(j, { state = 'cancelled', vis = false, updated = now }, now)
  history(j, 'cancel', now, actor, '')
  return j.hc ~= nil
end

-- Per job: state, result, error, error code (false where absent).
local function outcome_of(id, out)
  local f = redis.call('HMGET', jk(id), 'state', 'res', 'err', 'errc')
  for i = 1, 4 do out[#out + 1] = f[i] or false end
end

if verb == 'join' then
  local group, waiter, parent, now = ARGV[2], ARGV[3], ARGV[4], ARGV[5]
  local need, n, queue, index = ARGV[6], ARGV[7], ARGV[8], ARGV[10]
  local children_here = ARGV[11] == '1'
  channel = ARGV[9]
  -- The waiter's hash takes the group's marks: never one of a job that is gone.
  if redis.call('EXISTS', jk(waiter)) == 0 then
    return redis.error_reply('X_JOB_NOT_FOUND no job with id ' .. waiter)
  end
  local key, marks = group_key(group), group_marks_key(group)
  if redis.call('EXISTS', key) == 0 then
    local record = { 'waiter', waiter, 'size', '0', 'settled', '0', 'created', now }
    if parent ~= '' then
      record[#record + 1] = 'parent'
      record[#record + 1] = parent
    end
    redis.call('HSET', key, unpack(record))
    redis.call('SADD', waits_key(waiter), group)
    redis.call('HSET', jk(waiter), 'hw', '1')
    if index ~= '' then redis.call('HSET', index, group, queue) end
  end
  -- The members not in it yet, in order.
  local added, entries = {}, {}
  for i = 12, #ARGV, 2 do
    local entry = ARGV[i] .. '\0' .. ARGV[i + 1]
    entries[#entries + 1] = entry
    if redis.call('HSETNX', marks, ARGV[i], '0') == 1 then added[#added + 1] = entry end
  end
  if #added > 0 then
    call_chunked('RPUSH', group_list_key(group), added)
    redis.call('HINCRBY', key, 'size', #added)
  end
  if need == 'count' then
    redis.call('HSET', key, 'need', n)
  elseif need == 'all' then
    redis.call('HSET', key, 'need', redis.call('HGET', key, 'size'))
  end
  if parent == '' then
    redis.call('HSET', jk(waiter), 'bt', group)
  elseif children_here then
    file_children(parent, entries)
  end
  -- Each member still to count (a replayed join marks again what an unfinished one did not).
  local elsewhere = {}
  for i = 12, #ARGV, 2 do
    local member, member_queue = ARGV[i], ARGV[i + 1]
    if redis.call('HGET', marks, member) == '0' then
      if member_queue == queue then
        if not mark_member(member, group, queue, parent) then settle_member(group, member) end
      elseif member_queue == '' then
        settle_member(group, member)
      else
        elsewhere[#elsewhere + 1] = member
        elsewhere[#elsewhere + 1] = member_queue
      end
    end
  end
  check(group, now, false)
  return { answer_group(group), elsewhere }
elseif verb == 'mark' then
  local group, group_queue, parent = ARGV[2], ARGV[3], ARGV[4]
  local out = {}
  for i = 5, #ARGV do
    if mark_member(ARGV[i], group, group_queue, parent) then
      out[#out + 1] = '1'
    else
      out[#out + 1] = '0'
    end
  end
  return out
elseif verb == 'count' then
  local now, answered = ARGV[2], ARGV[4]
  channel = ARGV[3]
  local groups = {}
  for i = 5, #ARGV, 2 do
    settle_member(ARGV[i], ARGV[i + 1])
    groups[ARGV[i]] = true
  end
  for group in pairs(groups) do check(group, now, true) end
  local record = {}
  if answered ~= '' then record = answer_group(answered) end
  return { record, dropped_groups or {} }
elseif verb == 'take' then
  local queue, now, limit = ARGV[2], ARGV[3], tonumber(ARGV[5])
  channel = ARGV[4]
  local taken = redis.call('SRANDMEMBER', GP, limit)
  local elsewhere = {}
  for _, member in ipairs(taken) do
    local ended = ended_key(member)
    local left = 0
    for _, entry in ipairs(redis.call('SMEMBERS', ended)) do
      local group, group_queue = split(entry)
      if group_queue == queue then
        settle_member(group, member)
        check(group, now, true)
        redis.call('SREM', ended, entry)
      else
        elsewhere[#elsewhere + 1] = member
        elsewhere[#elsewhere + 1] = entry
        left = left + 1
      end
    end
    if left == 0 then redis.call('SREM', GP, member) end
  end
  return { tostring(#taken), elsewhere, dropped_groups or {} }
elseif verb == 'done' then
  local touched = {}
  for i = 2, #ARGV, 2 do
    redis.call('SREM', ended_key(ARGV[i]), ARGV[i + 1])
    touched[ARGV[i]] = true
  end
  for member in pairs(touched) do
    if redis.call('EXISTS', ended_key(member)) == 0 then redis.call('SREM', GP, member) end
  end
  return 1
elseif verb == 'children' then
  local entries = {}
  for i = 3, #ARGV do entries[#entries + 1] = ARGV[i] end
  if redis.call('EXISTS', jk(ARGV[2])) == 1 then file_children(ARGV[2], entries) end
  return 1
elseif verb == 'get' then
  return answer_group(ARGV[2])
elseif verb == 'wake' then
  local group, now = ARGV[2], ARGV[3]
  channel = ARGV[4]
  local g = redis.call('HMGET', group_key(group), 'waiter', 'done')
  if not g[1] then return {} end
  if g[2] then wake_waiter(g[1], now) end
  return answer_group(group)
elseif verb == 'members' then
  local group, first, limit, queue = ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4]), ARGV[5]
  local out = {}
  if limit <= 0 then return out end
  for _, entry in ipairs(redis.call('LRANGE', group_list_key(group), first, first + limit - 1)) do
    local id, member_queue = split(entry)
    out[#out + 1] = id
    if member_queue == queue or member_queue == '' then
      out[#out + 1] = ''
      outcome_of(id, out)
    else
      out[#out + 1] = member_queue
      for _ = 1, 4 do out[#out + 1] = false end
    end
  end
  return out
elseif verb == 'fields' then
  local out = {}
  for i = 2, #ARGV do outcome_of(ARGV[i], out) end
  return out
elseif verb == 'links' then
  local id, limit, queue = ARGV[2], tonumber(ARGV[3]), ARGV[4]
  local f = redis.call('HMGET', jk(id), 'par', 'bt', 'hc')
  local out = { f[1] or '', f[2] or '' }
  if f[3] then
    for _, entry in ipairs(redis.call('ZRANGE', children_key(id), 0, limit - 1)) do
      local child, child_queue = split(entry)
      out[#out + 1] = child
      if child_queue == queue then
        out[#out + 1] = ''
        out[#out + 1] = redis.call('HGET', jk(child), 'state') or ''
      else
        out[#out + 1] = child_queue
        out[#out + 1] = ''
      end
    end
  end
  return out
elseif verb == 'cancel_children' then
  local parent, now, actor = ARGV[2], ARGV[3], ARGV[4]
  local first, limit, queue = tonumber(ARGV[5]), tonumber(ARGV[6]), ARGV[7]
  local page = redis.call('ZRANGE', children_key(parent), first, first + limit - 1)
  local deeper, elsewhere = {}, {}
  for _, entry in ipairs(page) do
    local child, child_queue = split(entry)
    if child_queue == queue then
      if cancel_one(child, now, actor) then deeper[#deeper + 1] = child end
    elseif child_queue ~= '' then
      elsewhere[#elsewhere + 1] = child
      elsewhere[#elsewhere + 1] = child_queue
    end
  end
  return { tostring(#page), deeper, elsewhere }
elseif verb == 'cancel' then
  local now, actor = ARGV[2], ARGV[3]
  local deeper = {}
  for i = 4, #ARGV do
    if cancel_one(ARGV[i], now, actor) then deeper[#deeper + 1] = ARGV[i] end
  end
  return deeper
end
return redis.error_reply('X_DRIVER unknown verb ' .. verb)
