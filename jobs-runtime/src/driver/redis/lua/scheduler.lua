-- The scheduler store, in its own slot (KEYS[1] is the store's tag). Times are decimal
-- microseconds, passed in and stored as such, only compared here.
--   <tag>:leader   hash: holder, since, expires (the one leader lease)
--   <tag>:wm       hash: task -> watermark
--   <tag>:fires    hash: task -> `<occurrence>:<fired_at>` (the last fire)
--   <tag>:paused   hash: task -> paused_at
--   <tag>:pending  hash: task -> `<token, 36 chars><jobs JSON>`: a fire whose watermark moved
--                  and whose jobs may not all be stored yet (the driver stores them, then
--                  drops the entry; a crash leaves it for the next reader to finish)
--   <tag>:undo     hash: task -> `<expected>\0<previous last fire>`: what a pending fire's
--                  move replaced ('' for none), restored if its jobs are refused for good
-- ARGV[1] is the verb:
--   lead: holder, now, expires. Takes the lease if free, lapsed, or the holder's own (a
--   renewal keeps `since`); answers 1, or 0 while another holder's lease lasts.
--   resign: holder. Deletes the lease if the holder holds it.
--   fire: task, expected ('' none), watermark, occurrence ('' none), now, token, jobs JSON
--   ('' none). Moves the watermark if it still is `expected` and no fire of the task is
--   pending, records the occurrence as the last fire, and files the jobs as pending under the
--   token; answers 1, else 0 with nothing written.
--   done: task, token. Drops the task's pending fire if it still is the token's.
--   undo: task, token. Puts back the watermark and last fire the token's fire replaced and
--   drops it; answers 1, or 0 if the pending fire is another's (or gone).
local S = KEYS[1]
local LEADER = S .. ':leader'
local WM = S .. ':wm'
local FIRES = S .. ':fires'
local PENDING = S .. ':pending'
local UNDO = S .. ':undo'

-- Whether the task's pending fire is the one filed under `token`.
local function pending_is(task, token)
  local pending = redis.call('HGET', PENDING, task)
  return pending and string.sub(pending, 1, #token) == token
end

local verb = ARGV[1]
if verb == 'lead' then
  local holder, now, expires = ARGV[2], ARGV[3], ARGV[4]
  local current = redis.call('HMGET', LEADER, 'holder', 'since', 'expires')
  local since = now
  if current[1] then
    if current[1] == holder then
      since = current[2]
    elseif tonumber(current[3]) > tonumber(now) then
      return 0
    end
  end
  redis.call('HSET', LEADER, 'holder', holder, 'since', since, 'expires', expires)
  return 1
elseif verb == 'resign' then
  if redis.call('HGET', LEADER, 'holder') == ARGV[2] then redis.call('DEL', LEADER) end
  return 1
elseif verb == 'fire' then
  local task, expected, watermark, occurrence = ARGV[2], ARGV[3], ARGV[4], ARGV[5]
  local now, token, jobs = ARGV[6], ARGV[7], ARGV[8]
  local stored = redis.call('HGET', WM, task) or ''
  if stored ~= expected or redis.call('HEXISTS', PENDING, task) == 1 then return 0 end
  local previous = redis.call('HGET', FIRES, task) or ''
  redis.call('HSET', WM, task, watermark)
  if occurrence ~= '' then redis.call('HSET', FIRES, task, occurrence .. ':' .. now) end
  if jobs ~= '' then
    redis.call('HSET', PENDING, task, token .. jobs)
    redis.call('HSET', UNDO, task, expected .. '\0' .. previous)
  end
  return 1
elseif verb == 'done' then
  local task, token = ARGV[2], ARGV[3]
  if not pending_is(task, token) then return 0 end
  redis.call('HDEL', PENDING, task)
  redis.call('HDEL', UNDO, task)
  return 1
elseif verb == 'undo' then
  local task, token = ARGV[2], ARGV[3]
  if not pending_is(task, token) then return 0 end
  local undo = redis.call('HGET', UNDO, task) or '\0'
  local sep = string.find(undo, '\0', 1, true)
  local expected, previous = string.sub(undo, 1, sep - 1), string.sub(undo, sep + 1)
  if expected == '' then redis.call('HDEL', WM, task) else redis.call('HSET', WM, task, expected) end
  if previous == '' then
    redis.call('HDEL', FIRES, task)
  else
    redis.call('HSET', FIRES, task, previous)
  end
  redis.call('HDEL', PENDING, task)
  redis.call('HDEL', UNDO, task)
  return 1
end
return redis.error_reply('X_DRIVER unknown verb ' .. verb)
