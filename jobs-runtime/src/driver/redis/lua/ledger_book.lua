-- One ledger of the book, in its ledger's slot (KEYS[1] is the ledger's tag): each posting is
-- a hash `<tag>:p:<tenant>\0<posting key>` with its lines (the driver's JSON of them, which it
-- writes the same way for the same lines), their count, the run that wrote them and when.
-- ARGV[1] is the verb:
--   write: tenant ('' none), posting key, lines JSON, line count, run, now. Stores the lines
--   if the key holds none and answers {'written'}; the same lines answer {'posted'}; other
--   lines answer {'conflict', stored count}. Only 'written' writes anything.
local BOOK = KEYS[1]
local verb = ARGV[1]
if verb == 'write' then
  local posting = BOOK .. ':p:' .. ARGV[2] .. '\0' .. ARGV[3]
  local lines, n, run, now = ARGV[4], ARGV[5], ARGV[6], ARGV[7]
  local stored = redis.call('HMGET', posting, 'lines', 'n')
  if stored[1] == lines then return { 'posted' } end
  if stored[1] then return { 'conflict', stored[2] } end
  redis.call('HSET', posting, 'lines', lines, 'n', n, 'run', run, 'at', now)
  return { 'written' }
end
return redis.error_reply('X_DRIVER unknown verb ' .. verb)
