-- The operator's verbs on one job of one queue. Each act appends its history row in the same
-- script, so no act lands without its row, and a refused act writes nothing. ARGV[1] is the
-- verb; the others take id, now, actor ('' none):
--   remove: deletes a job that is not running, with its run's steps (`delete`).
--   requeue: then from ('1': a step name follows, '0' none), step. A finished job back to
--   ready, due now, attempts from zero, on the same run; `from` forgets that step and every
--   step written at or after it. Refused while another job holds its key (a live one, or a
--   finished one inside its unique period).
--   promote: a delayed job, or a ready one backing off, due now.
--   history: id; answers the job's history rows (JSON), oldest first.
-- A verb answers {'ok', fields...} (the row after the act; for remove, as it was), or what the
-- driver words with the port's shared refusals: {'missing'}, {'refused', fields...} (its state
-- forbids the act), {'no_step', fields...}, {'held', holder id, fields...}.
local verb = ARGV[1]
if verb == 'history' then return redis.call('LRANGE', hist_key(ARGV[2]), 0, -1) end

local id, now, actor = ARGV[2], ARGV[3], ARGV[4]
local j = load(id)
if j == nil then return { 'missing' } end

local function answer(status, job, extra)
  local out = { status }
  if extra then out[#out + 1] = extra end
  for _, v in ipairs(flat(job)) do out[#out + 1] = v end
  return out
end

-- A step record's `updated_at` as text that sorts by time: chrono writes RFC 3339 in UTC with
-- as many fraction digits as it needs, so the fraction is padded to nanoseconds.
local function step_time(json)
  local ok, step = pcall(cjson.decode, json)
  -- Stored as [record, whether it has an output] (codec.rs).
  if ok and type(step) == 'table' and type(step[1]) == 'table' then step = step[1] end
  if not ok or type(step) ~= 'table' or type(step.updated_at) ~= 'string' then return '' end
  local at = step.updated_at
  local base, fraction = string.match(at, '^(%d%d%d%d%-%d%d%-%d%dT%d%d:%d%d:%d%d)%.?(%d*)Z$')
  if base == nil then return at end
  return base .. '.' .. string.sub(fraction .. '000000000', 1, 9)
end

if verb == 'remove' then
  if j.state == 'running' then return answer('refused', j) end
  history(j, 'remove', now, actor, '')
  delete(j, now)
  return answer('ok', j)
elseif verb == 'promote' then
  local waiting = j.state == 'delayed' or j.state == 'ready'
  if not waiting or tonumber(j.run_at) <= tonumber(now) then return answer('refused', j) end
  change(j, { state = 'ready', run_at = now, updated = now }, now)
  history(j, 'promote', now, actor, '')
  return answer('ok', j)
elseif verb == 'requeue' then
  if LIVE_STATES[j.state] then return answer('refused', j) end
  local step, forget = nil, {}
  if ARGV[5] == '1' then
    step = ARGV[6]
    local from = redis.call('HGET', steps_key(j.run), step)
    if not from then return answer('no_step', j) end
    local from_at = step_time(from)
    local stored = redis.call('HGETALL', steps_key(j.run))
    for i = 1, #stored, 2 do
      if stored[i] == step or step_time(stored[i + 1]) >= from_at then
        forget[#forget + 1] = stored[i]
      end
    end
  end
  -- The live-key rule: the key may be held by a job enqueued since this one finished, live or
  -- inside its unique period; one whose period lapsed holds nothing, and its entry is
  -- written over below.
  local holder = redis.call('HGET', LIVE, live_key(j))
  if holder and holder ~= j.id then
    local h = redis.call('HMGET', jk(holder), 'state', 'uq')
    if h[1] and holds_key(h[1], h[2], now) then return answer('held', j, holder) end
  end
  for _, name in ipairs(forget) do redis.call('HDEL', steps_key(j.run), name) end
  -- A fresh insertion order: among rows due at once it queues behind those already waiting.
  change(j, {
    state = 'ready', attempt = '0', run_at = now, vis = false, by = false, prog = false,
    res = false, wk = false, updated = now, sq = tostring(redis.call('INCR', SEQ)),
  }, now)
  redis.call('HSET', LIVE, live_key(j), j.id)
  if step then
    history(j, 'requeue_from_step', now, actor, step)
  else
    history(j, 'requeue', now, actor, '')
  end
  return answer('ok', j)
end
return redis.error_reply('X_DRIVER unknown verb ' .. verb)
