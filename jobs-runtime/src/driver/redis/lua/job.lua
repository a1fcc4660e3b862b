-- One job of one queue by id. ARGV[1] is the verb:
--   get: id; answers its fields as pairs, or an empty list.
--   cancel: id, now, actor ('' none), reason ('' none); cancels a live job, records `cancel`
--   (the reason its detail) in its history and
--   answers its fields; X_JOB_NOT_CANCELLABLE for a finished or unknown one.
--   steps: run; answers every step record (JSON) of the run.
--   step_put: id, worker, claim, run, step name, record JSON; 1 if the claim held, else 0.
--   wake: id, now, event, key: a parked run waiting on the event resumes now; a running one
--   is marked, so its park resumes at once.
--   take_back: id: deletes a job an unfinished enqueue batch inserted.
local verb = ARGV[1]
if verb == 'get' then
  local j = load(ARGV[2])
  if j == nil then return {} end
  return flat(j)
elseif verb == 'cancel' then
  local id, now, actor, reason = ARGV[2], ARGV[3], ARGV[4], ARGV[5] or ''
  local j = load(id)
  if j == nil then
    return redis.error_reply('X_JOB_NOT_CANCELLABLE no job with id ' .. id)
  end
  if not LIVE_STATES[j.state] then
    return redis.error_reply('X_JOB_NOT_CANCELLABLE job ' .. id .. ' is ' .. j.state .. ', not live')
  end
  change(j, { state = 'cancelled', vis = false, updated = now }, now)
  history(j, 'cancel', now, actor, reason)
  return flat(j)
elseif verb == 'steps' then
  return redis.call('HVALS', steps_key(ARGV[2]))
elseif verb == 'step_put' then
  local j = load(ARGV[2])
  if not held(j, ARGV[3], ARGV[4]) then return 0 end
  redis.call('HSET', steps_key(ARGV[5]), ARGV[6], ARGV[7])
  return 1
elseif verb == 'wake' then
  local j = load(ARGV[2])
  if j == nil then return 0 end
  local now = ARGV[3]
  if j.state == 'running' then
    redis.call('HSET', jk(j.id), 'wk', '1')
    return 1
  end
  if j.state ~= 'suspended' or tonumber(j.run_at) <= tonumber(now) then return 0 end
  -- Only a run still waiting on this event (a step `waiting` with its name and key).
  for _, step in ipairs(redis.call('HVALS', steps_key(j.run))) do
    local s = cjson.decode(step)[1]
    if s.status == 'waiting' and type(s.wait) == 'table' and s.wait.event == ARGV[4]
      and s.wait.key == ARGV[5] then
      change(j, { run_at = now }, now)
      return 1
    end
  end
  return 0
elseif verb == 'take_back' then
  -- A job an unfinished enqueue batch inserted: gone as if never enqueued.
  local j = load(ARGV[2])
  if j == nil then return 0 end
  delete(j, '0')
  redis.call('DEL', hist_key(j.id))
  redis.call('ZREM', GONE, j.id)
  return 1
end
return redis.error_reply('X_DRIVER unknown verb ' .. verb)
