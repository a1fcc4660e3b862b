-- Dependencies between jobs, on one queue (`driver/redis/dependencies.rs` runs the steps
-- across queues). A dependent's edges live with it (`dp`: a JSON list of [id, queue], `pol`:
-- its policy); a dependency keeps the set of its dependents (`dn:<id>`, members
-- '<id>\0<queue>') and `hd` = '1'; `change` notes a job with `hd` that stops being live in
-- REL (lib.lua), which the release pass takes. ARGV[1] is the verb:
--   mark: tenant ('' none), dependent id, dependent queue, then ids: marks each job that exists
--     in the tenant as having dependents and files the dependent; answers each one's state, or
--     '' when there is no such job in the tenant.
--   unmark: dependent id, dependent queue, then ids: takes the dependent out of their sets.
--   states: ids; answers each one's state ('' when gone).
--   block: id, now, state, run_at, err ('' none), errc, policy, deps JSON, wake channel: a
--     dependent the enqueue just inserted takes its judged start and its edges (a ready one is
--     announced); answers 1.
--   read: id, blocked_until: answers the dependent's policy and deps JSON while it is blocked
--     (suspended until blocked_until), else an empty list.
--   apply: id, blocked_until, now, verdict ('ready' or 'cancelled'), err, errc, wake channel:
--     a dependent still blocked takes its verdict (a ready one is announced); answers 1 if it
--     did, 0 if another pass got there first.
--   pending: answers every noted settled job with its dependents, as (id, count, members...).
--   done: ids: forgets the noted jobs taken (and the dependents' set of one that is gone).
--   links: id; answers its policy ('' none), its deps JSON ('' none) and its dependents.
local verb = ARGV[1]
local function dn_key(id) return Q .. ':dn:' .. id end
if verb == 'mark' then
  local tenant, dependent = ARGV[2], ARGV[3] .. '\0' .. ARGV[4]
  local out = {}
  for i = 5, #ARGV do
    local id = ARGV[i]
    local f = redis.call('HMGET', jk(id), 'state', 'tenant')
    if f[1] and (f[2] or '') == tenant then
      redis.call('HSET', jk(id), 'hd', '1')
      redis.call('SADD', dn_key(id), dependent)
      out[#out + 1] = f[1]
    else
      out[#out + 1] = ''
    end
  end
  return out
elseif verb == 'unmark' then
  local dependent = ARGV[2] .. '\0' .. ARGV[3]
  for i = 4, #ARGV do redis.call('SREM', dn_key(ARGV[i]), dependent) end
  return 1
elseif verb == 'states' then
  local out = {}
  for i = 2, #ARGV do out[#out + 1] = redis.call('HGET', jk(ARGV[i]), 'state') or '' end
  return out
elseif verb == 'block' then
  local j = load(ARGV[2])
  if j == nil then return 0 end
  local now = ARGV[3]
  local set = { state = ARGV[4], run_at = ARGV[5], pol = ARGV[8], dp = ARGV[9], updated = now }
  if ARGV[6] ~= '' then set.err = ARGV[6]; set.errc = ARGV[7] end
  change(j, set, now)
  if ARGV[4] == 'ready' and ARGV[10] ~= '' then redis.call('PUBLISH', ARGV[10], j.queue) end
  return 1
elseif verb == 'read' then
  local f = redis.call('HMGET', jk(ARGV[2]), 'state', 'run_at', 'pol', 'dp')
  if f[1] ~= 'suspended' or f[2] ~= ARGV[3] or not f[4] then return {} end
  return { f[3] or 'cancel', f[4] }
elseif verb == 'apply' then
  local j = load(ARGV[2])
  if j == nil or j.state ~= 'suspended' or j.run_at ~= ARGV[3] then return 0 end
  local now = ARGV[4]
  if ARGV[5] == 'ready' then
    change(j, { state = 'ready', run_at = now, updated = now }, now)
    if ARGV[8] ~= '' then redis.call('PUBLISH', ARGV[8], j.queue) end
  else
    change(j, { state = 'cancelled', vis = false, err = ARGV[6], errc = ARGV[7],
      updated = now }, now)
  end
  return 1
elseif verb == 'pending' then
  local out = {}
  for _, id in ipairs(redis.call('SMEMBERS', REL)) do
    local members = redis.call('SMEMBERS', dn_key(id))
    out[#out + 1] = id
    out[#out + 1] = tostring(#members)
    for _, m in ipairs(members) do out[#out + 1] = m end
  end
  return out
elseif verb == 'done' then
  for i = 2, #ARGV do
    local id = ARGV[i]
    redis.call('SREM', REL, id)
    if redis.call('EXISTS', jk(id)) == 0 then redis.call('DEL', dn_key(id)) end
  end
  return 1
elseif verb == 'links' then
  local f = redis.call('HMGET', jk(ARGV[2]), 'pol', 'dp')
  local out = { f[1] or '', f[2] or '' }
  for _, m in ipairs(redis.call('SMEMBERS', dn_key(ARGV[2]))) do out[#out + 1] = m end
  return out
end
return redis.error_reply('X_DRIVER unknown verb ' .. verb)
