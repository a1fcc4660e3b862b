-- One queue's counts (QueueStats): ready and delayed split by whether run_at is due at `now`
-- (read from the lanes' due sets, which hold exactly the ready and delayed rows), and the
-- oldest due row's run_at. ARGV: now. Answers {ready, delayed, running, suspended, done,
-- failed, dead, cancelled, oldest due run_at or ''}.
local now = ARGV[1]
local total, due, oldest = 0, 0, nil
for _, row_lane in ipairs(redis.call('SMEMBERS', TENANTS)) do
  local key = due_key(row_lane)
  total = total + redis.call('ZCARD', key)
  local n = redis.call('ZCOUNT', key, '-inf', now)
  if n > 0 then
    due = due + n
    local first = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')[2]
    if oldest == nil or tonumber(first) < tonumber(oldest) then oldest = first end
  end
end
local function count(state) return redis.call('ZCARD', state_key(state)) end
local suspended = count('suspended')
-- RUN holds the running rows; TIMED the suspended ones, and any running row an older build
-- filed there.
local running = redis.call('ZCARD', RUN) + redis.call('ZCARD', TIMED) - suspended
return { due, total - due, running, suspended, count('done'),
  count('failed'), count('dead'), count('cancelled'), oldest or '' }
