-- Enqueues one job: `enqueue.lua`'s rules and answers for a batch of one (ARGV as its, count
-- 1), in straight lines. The id index entry and the live key are claimed at once with HSETNX
-- (the entry given back when the job is not inserted), so a new job costs no read, and the
-- write is the batch's one command per index.
local now, channel, queue, ix = ARGV[1], ARGV[2], ARGV[4], ARGV[5]
local at = enqueue_at(1)
local id, run, policy = ARGV[at + 1], ARGV[at + 2], ARGV[at + 11]
local lk = ARGV[at + 3] .. '\0' .. ARGV[at + 6] .. '\0' .. ARGV[at + 5]

-- The wake for a job due at `run_at`: now, or an idle worker's timer (`enqueue.lua`'s).
local function announce(run_at)
  if channel == '' then return end
  if not_after(run_at, now) then
    redis.call('PUBLISH', channel, queue)
  else
    redis.call('PUBLISH', channel, '@' .. run_at .. ':' .. queue)
  end
end

-- The id stored already (an outbox re-publish) answers its job. On a cluster the caller wrote
-- the index: the job itself is looked up.
local claimed_id = false
if ix ~= '' then claimed_id = redis.call('HSETNX', id_shard(ix, id), id, queue) == 1 end
if not claimed_id then
  local f = redis.call('HMGET', jk(id), 'state', 'run')
  if f[1] then return { 'ok', '1', 'same', id, f[2] or id } end
end

-- A held key: the job is not inserted, and gives back the index entry it claimed.
local claimed_key = redis.call('HSETNX', LIVE, lk, id) == 1
if not claimed_key then
  local holder = key_holder(redis.call('HGET', LIVE, lk), now)
  if holder then
    if claimed_id then redis.call('HDEL', id_shard(ix, id), id) end
    if policy == 'e' then return { 'conflict', '1', holder[1], holder[2] } end
    if policy == 'r' then
      local run_at = replace_queued(holder[1], ARGV, 1, now)
      if run_at then announce(run_at) end
    end
    return { 'ok', '1', 'held', holder[1], holder[2] }
  end
  -- The key was free (its holder gone, or its unique period over): the job takes it.
  redis.call('HSET', LIVE, lk, id)
end

local seq = string.format('%d', redis.call('INCRBY', SEQ, '1'))
local state, row_lane, run_at = store_new(ARGV, 1, queue, now, seq)
local member = created_entry(now, id)
redis.call('ZADD', state_key(state), '0', member)
redis.call('ZADD', due_key(row_lane), run_at, order_entry(seq, id))
redis.call('SADD', TENANTS, row_lane)
if ix ~= '' then
  -- A stale entry (a job taken back or removed) is written over; a run begun elsewhere is
  -- indexed too (a run is its first job's unless one was named).
  if not claimed_id then redis.call('HSET', id_shard(ix, id), id, queue) end
  if run ~= '' and run ~= id then redis.call('HSET', id_shard(ix, run), run, queue) end
end
announce(run_at)
return { 'ok' }
