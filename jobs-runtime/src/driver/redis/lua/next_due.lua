-- One queue's next due time (queue_next_due): the earliest run time after `now` among its rows
-- waiting for their time: each lane's first row past `now` in its due set (a delayed row, a
-- ready row backing off), and the first suspended row past `now` in TIMED (running rows an
-- older build filed there, members of a bare id, are passed over: at most the first 64 entries
-- past `now` are looked at, and a suspended row behind more of them is left to the poll).
-- ARGV: now.
-- Answers the time, or '' when the queue has none. A read: nothing is written.
local now = ARGV[1]
local after = '(' .. now
local earliest = nil
local function consider(score)
  if earliest == nil or tonumber(score) < tonumber(earliest) then earliest = score end
end
for _, row_lane in ipairs(redis.call('SMEMBERS', TENANTS)) do
  local head = redis.call('ZRANGEBYSCORE', due_key(row_lane), after, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
  if head[2] then consider(head[2]) end
end
local timed = redis.call('ZRANGEBYSCORE', TIMED, after, '+inf', 'WITHSCORES', 'LIMIT', 0, 64)
for i = 1, #timed, 2 do
  if #timed[i] ~= ID_LENGTH then
    consider(timed[i + 1])
    break
  end
end
return earliest or ''
