-- One queue's counts (QueueStats): ready and delayed split by whether run_at is due at `now`,
-- and the oldest due row's run_at. ARGV: now. Answers {ready, delayed, running, suspended, done,
-- failed, dead, cancelled, oldest due run_at or ''}.
local now = ARGV[1]
local total = redis.call('ZCARD', WAITING)
local due = redis.call('ZCOUNT', WAITING, '-inf', now)
local oldest = ''
if due > 0 then oldest = redis.call('ZRANGE', WAITING, 0, 0, 'WITHSCORES')[2] end
local function count(state) return redis.call('ZCARD', state_key(state)) end
return { due, total - due, count('running'), count('suspended'), count('done'), count('failed'),
  count('dead'), count('cancelled'), oldest }
