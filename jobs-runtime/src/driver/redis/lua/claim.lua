-- Claims up to `limit` due jobs of one queue for a worker, tenant by tenant in turn: lapsed
-- running rows with the queued ones, each tenant's in order of priority (highest first), then
-- due time (a lapsed final attempt is buried instead), each tenant at most `limit` turns, then
-- turn 1 of every tenant, turn 2, ... (within a turn, the higher priority, then the earlier).
-- ARGV: now, limit, worker, visible_at, then the names whose exhausted rows fail (not die).
-- Answers {claimed, exhausted}: each job's fields as pairs (a claimed one with `hs`, whether
-- its run has steps).
local now, limit, worker, visible_at = ARGV[1], tonumber(ARGV[2]), ARGV[3], ARGV[4]
local limit_text = ARGV[2]
local drop = {}
for i = 5, #ARGV do drop[ARGV[i]] = true end
-- A claim with no slot (an operator's `jobs drain`) only buries lapsed final attempts.
if redis.call('EXISTS', PAUSE) == 1 then return { {}, {} } end

-- Every due entry: {score, order member ('' for a running row), id, priority (filled when
-- loaded)}.
local due = {}
-- Lapsed running rows (RUN, member: the id) and suspended rows whose wait ended (a timeout, or
-- an event woke them; TIMED, member: the order member, or the bare id of a running row an
-- older build filed there), with the queued ones.
local lapsed = redis.call('ZRANGEBYSCORE', RUN, '-inf', now, 'WITHSCORES', 'LIMIT', '0', '1000')
for i = 1, #lapsed, 2 do
  due[#due + 1] = { tonumber(lapsed[i + 1]), '', lapsed[i], 0 }
end
local timed = redis.call('ZRANGEBYSCORE', TIMED, '-inf', now, 'WITHSCORES', 'LIMIT', '0', '1000')
for i = 1, #timed, 2 do
  local member = timed[i]
  if #member == ID_LENGTH then
    due[#due + 1] = { tonumber(timed[i + 1]), '', member, 0 }
  else
    due[#due + 1] = { tonumber(timed[i + 1]), member, string.sub(member, 17), 0 }
  end
end
-- Each lane (a tenant's rows of one priority) gives its due heads, at most `limit`.
for _, row_lane in ipairs(limit > 0 and redis.call('SMEMBERS', TENANTS) or {}) do
  local rows = redis.call('ZRANGEBYSCORE', due_key(row_lane), '-inf', now, 'WITHSCORES', 'LIMIT', '0',
    limit_text)
  for i = 1, #rows, 2 do
    -- The member is the insertion order (16 digits) then the id.
    due[#due + 1] = { tonumber(rows[i + 1]), rows[i], string.sub(rows[i], 17), 0 }
  end
end
-- Each entry's job, read once; its priority orders it. A running row's entry whose job is no
-- longer running is stale (an older build's ack, which took the row out of TIMED only) and goes.
local loaded = {}
for _, entry in ipairs(due) do
  local j, stored = load(entry[3])
  if j and entry[2] == '' and j.state ~= 'running' then
    unrun_now({ entry[3] })
  elseif j then
    if j.prio then entry[4] = tonumber(j.prio) end
    loaded[entry[3]] = { j, stored }
  end
end
table.sort(due, function(a, b)
  if a[4] ~= b[4] then return a[4] > b[4] end
  if a[1] ~= b[1] then return a[1] < b[1] end
  return a[2] < b[2]
end)

-- Every job this claim changes changes once: its index edits go in one batch.
batch_begin()
local exhausted, candidates, turns = {}, {}, {}
for order, entry in ipairs(due) do
  local got = loaded[entry[3]]
  if got then
    local j, stored = got[1], got[2]
    if j.state == 'running' and tonumber(j.attempt) >= tonumber(j.max) then
      local target = 'dead'
      if drop[j.name] then target = 'failed' end
      change(j, { state = target, vis = false, err = 'LEASE_LAPSED_FINAL_ATTEMPT', errc = false,
        updated = now }, now)
      exhausted[#exhausted + 1] = flat(j)
    else
      local tenant = j.tenant or ''
      local turn = (turns[tenant] or 0) + 1
      if turn <= limit then
        turns[tenant] = turn
        candidates[#candidates + 1] = { turn, order, j, stored, entry[2] }
      end
    end
  end
end
table.sort(candidates, function(a, b)
  if a[1] ~= b[1] then return a[1] < b[1] end
  return a[2] < b[2]
end)

local claimed, steps = {}, {}
for i = 1, math.min(limit, #candidates) do
  local j, row = candidates[i][3], candidates[i][4]
  local attempt, claims = succ(j.attempt), succ(j.claims)
  -- `change`'s work for a claim, written out: a claim moves a live row to running (no live
  -- key, counter or note changes), and building and walking the field table `change` takes
  -- was about a seventh of a claim's time. The row leaves its index (a queued or suspended
  -- one by the member its due read gave) for RUN, by its new visibility.
  local member = candidates[i][5]
  unindex(j, member ~= '' and member or nil)
  j.state, j.vis = 'running', visible_at
  index(j)
  redis.call('HSET', jk(j.id), 'state', 'running', 'attempt', attempt, 'claims', claims,
    'by', worker, 'vis', visible_at, 'updated', now, 'started', now)
  if j.wk then redis.call('HDEL', jk(j.id), 'wk') end
  -- The answer: the fields as read, then what the claim wrote (a later pair wins in the
  -- codec; a `wk` as read is a field the codec does not read), the id, the run and whether
  -- the run has steps.
  local n = #row
  row[n + 1] = 'state'; row[n + 2] = 'running'
  row[n + 3] = 'attempt'; row[n + 4] = attempt
  row[n + 5] = 'claims'; row[n + 6] = claims
  row[n + 7] = 'by'; row[n + 8] = worker
  row[n + 9] = 'vis'; row[n + 10] = visible_at
  row[n + 11] = 'updated'; row[n + 12] = now
  row[n + 13] = 'started'; row[n + 14] = now
  row[n + 15] = 'id'; row[n + 16] = j.id
  row[n + 17] = 'run'; row[n + 18] = j.run
  row[n + 19] = 'hs'; row[n + 20] = '0'
  claimed[#claimed + 1] = row
  steps[#steps + 1] = steps_key(j.run)
end
-- Whether each run has steps (the answer's last value): one EXISTS of every claimed run's steps
-- first, which finds none in the common case (first attempts), then one a job only when some
-- run has them.
if #steps > 0 and (#steps > 1000 or redis.call('EXISTS', unpack(steps)) > 0) then
  for i, row in ipairs(claimed) do row[#row] = tostring(redis.call('EXISTS', steps[i])) end
end
batch_flush()
return { claimed, exhausted }
