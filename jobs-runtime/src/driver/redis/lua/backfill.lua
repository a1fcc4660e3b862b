-- The ledger of backfill passes, in its own slot (KEYS[1] is the store's tag). Times are
-- decimal microseconds, passed in and stored as such; counts are decimal text the driver
-- wrote, stored, never computed here.
--   <tag>:p:<run>                 hash: one pass (id, name, tenant ('' none), run, job,
--                                 checksum, status, forced, batches, rows, cursor (absent:
--                                 none), started, updated, finished (absent: unfinished))
--   <tag>:all                     zset: `<id>:<run>` of every pass by started (newest last)
--   <tag>:done:<name>\0<tenant>   zset: the runs of the completed passes of a name and tenant,
--                                 by finished
-- ARGV[1] is the verb:
--   begin: run, name, tenant, id, job, checksum, force ('1'/'0'), now. Adopts the run's own
--   row, else inserts a running row unless a completed pass of the name and tenant exists and
--   the pass is not forced. Answers {adopted, inserted, newest completed run, its checksum}
--   ('1'/'0', '' for none).
--   progress: run, batches, rows, cursor ('' none), now. Records a page on the run's row.
--   finish: run, status, batches, rows, cursor ('' none), now. Settles the run's row.
--   list: name, status, run ('' any of each), limit. Answers the matching rows newest first,
--   each as its fields in pairs.
local B = KEYS[1]
local ALL = B .. ':all'
local function pass(run) return B .. ':p:' .. run end
local function done(name, tenant) return B .. ':done:' .. name .. '\0' .. tenant end

-- Writes a page's counts and cursor on an existing row.
local function record(run, batches, rows, cursor, now)
  redis.call('HSET', pass(run), 'batches', batches, 'rows', rows, 'updated', now)
  if cursor == '' then
    redis.call('HDEL', pass(run), 'cursor')
  else
    redis.call('HSET', pass(run), 'cursor', cursor)
  end
end

local verb = ARGV[1]
if verb == 'begin' then
  local run, name, tenant, id, job, checksum, force, now =
    ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7], ARGV[8], ARGV[9]
  local adopted = redis.call('EXISTS', pass(run)) == 1
  local previous = redis.call('ZREVRANGE', done(name, tenant), 0, 0)[1]
  local previous_checksum = ''
  if previous then previous_checksum = redis.call('HGET', pass(previous), 'checksum') or '' end
  local inserted = false
  if not adopted and (force == '1' or previous == nil) then
    redis.call('HSET', pass(run), 'id', id, 'name', name, 'tenant', tenant, 'run', run,
      'job', job, 'checksum', checksum, 'status', 'running', 'forced', force,
      'batches', '0', 'rows', '0', 'started', now, 'updated', now)
    redis.call('ZADD', ALL, now, id .. ':' .. run)
    inserted = true
  end
  return {
    adopted and '1' or '0', inserted and '1' or '0', previous or '', previous_checksum,
  }
elseif verb == 'progress' then
  local run = ARGV[2]
  if redis.call('EXISTS', pass(run)) == 0 then return 0 end
  record(run, ARGV[3], ARGV[4], ARGV[5], ARGV[6])
  return 1
elseif verb == 'finish' then
  local run, status, now = ARGV[2], ARGV[3], ARGV[7]
  if redis.call('EXISTS', pass(run)) == 0 then return 0 end
  record(run, ARGV[4], ARGV[5], ARGV[6], now)
  redis.call('HSET', pass(run), 'status', status, 'finished', now)
  local row = redis.call('HMGET', pass(run), 'name', 'tenant')
  if status == 'completed' then
    redis.call('ZADD', done(row[1], row[2]), now, run)
  else
    redis.call('ZREM', done(row[1], row[2]), run)
  end
  return 1
elseif verb == 'list' then
  local name, status, run, limit = ARGV[2], ARGV[3], ARGV[4], tonumber(ARGV[5])
  local out = {}
  local function take(r)
    local row = redis.call('HMGET', pass(r), 'name', 'status')
    if row[1] and (name == '' or row[1] == name) and (status == '' or row[2] == status) then
      out[#out + 1] = redis.call('HGETALL', pass(r))
    end
  end
  if limit < 1 then return out end
  if run ~= '' then
    take(run)
    return out
  end
  -- Newest first, a page of members at a time, until the limit is met.
  local page, from = 100, 0
  while #out < limit do
    local members = redis.call('ZREVRANGE', ALL, from, from + page - 1)
    if #members == 0 then break end
    for _, member in ipairs(members) do
      take(string.sub(member, string.find(member, ':', 1, true) + 1))
      if #out >= limit then break end
    end
    from = from + page
  end
  return out
end
return redis.error_reply('X_DRIVER unknown verb ' .. verb)
