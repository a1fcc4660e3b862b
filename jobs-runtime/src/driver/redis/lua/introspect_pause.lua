-- A queue's pause: the `PAUSE` hash (at, actor) in the queue's own slot, which the claim script
-- checks before it takes a row, so a pause holds from the next claim on. ARGV[1] is the verb:
--   pause: now, actor ('' none); a second pause keeps the first's row. Answers 1 if it paused.
--   resume: answers 1 if the queue was paused.
--   read: answers {at, actor ('' none)} while paused, else {}.
local verb = ARGV[1]
if verb == 'pause' then
  if redis.call('EXISTS', PAUSE) == 1 then return 0 end
  redis.call('HSET', PAUSE, 'at', ARGV[2])
  if ARGV[3] ~= '' then redis.call('HSET', PAUSE, 'actor', ARGV[3]) end
  return 1
elseif verb == 'resume' then
  return redis.call('DEL', PAUSE)
elseif verb == 'read' then
  local at = redis.call('HGET', PAUSE, 'at')
  if not at then return {} end
  return { at, redis.call('HGET', PAUSE, 'actor') or '' }
end
return redis.error_reply('X_DRIVER unknown verb ' .. verb)
