-- The fenced settling writes of one queue, each landing only while its claim still holds the
-- row. ARGV[1] is the verb, ARGV[2] now; then:
--   ack: (id, worker, claim, result) repeated, the result the JSON text a job keeps ('' none:
--        no JSON text is empty); answers one 1 or 0 per job (2: landed, and the job has
--        dependents to judge or groups to count it, as a nack that ends one answers). The
--        result lands only with the settle, in the job's hash (`res`).
--   nack: id, worker, claim, state, run_at, counts ('1'/'0'), has_error ('1'/'0'), error, code,
--         wake channel, due payload ('' none: announced when the row is due later, a retry
--         after its backoff or a park, so an idle worker starts it when due).
--   heartbeat: id, worker, claim, visible_at.     progress: id, worker, claim, progress JSON.
local verb, now = ARGV[1], ARGV[2]
if verb == 'ack' then
  -- Each job of the batch is acked once: its index edits and counts go in one batch.
  batch_begin()
  -- What the fence, the indexes, the live key (with the unique mark `uq`, which keeps it),
  -- the counters and the notes for the passes after (`hd`, `gr`) read of a running job.
  local fields = { 'state', 'by', 'claims', 'name', 'tenant', 'key', 'created', 'started',
    'err', 'errc', 'uq', 'hd', 'gr' }
  local out = {}
  for i = 3, #ARGV, 4 do
    local j = load_some(ARGV[i], fields)
    if held(j, ARGV[i + 1], ARGV[i + 2]) then
      -- `change`'s work for an ack, written out (building and walking its field table was
      -- about a tenth of an ack's time). `vis` stays: the codec reads it of running rows only.
      local before = noted
      unindex(j)
      local key = jk(j.id)
      if ARGV[i + 3] ~= '' then
        redis.call('HSET', key, 'state', 'done', 'updated', now, 'res', ARGV[i + 3])
      else
        redis.call('HSET', key, 'state', 'done', 'updated', now)
      end
      if j.err or j.errc then redis.call('HDEL', key, 'err', 'errc') end
      j.state, j.updated = 'done', now
      stopped_live(j)
      index(j)
      observe('running', 0, j, now)
      -- 2: landed, and the job has dependents to judge or groups to count it.
      if noted > before then out[#out + 1] = 2 else out[#out + 1] = 1 end
    else
      out[#out + 1] = 0
    end
  end
  batch_flush()
  return out
end
local j = load(ARGV[3])
if not held(j, ARGV[4], ARGV[5]) then return 0 end
if verb == 'nack' then
  local set = { state = ARGV[6], run_at = ARGV[7], vis = false, updated = now }
  if ARGV[8] == '0' then
    local attempt = tonumber(j.attempt) - 1
    if attempt < 0 then attempt = 0 end
    set.attempt = tostring(attempt)
  end
  if ARGV[9] == '1' then
    set.err = ARGV[10]
    if ARGV[11] ~= '' then set.errc = ARGV[11] else set.errc = false end
  end
  -- An event published for this run while it was still running wakes it now.
  if ARGV[6] == 'suspended' and j.wk then set.run_at = now end
  set.wk = false
  change(j, set, now)
  if ARGV[13] and ARGV[13] ~= '' and tonumber(set.run_at) > tonumber(now) then
    redis.call('PUBLISH', ARGV[12], ARGV[13])
  end
  -- 2: it ended, with dependents to judge or groups to count it.
  if noted > 0 then return 2 end
elseif verb == 'heartbeat' then
  change(j, { vis = ARGV[6], updated = now }, now)
elseif verb == 'progress' then
  redis.call('HSET', jk(j.id), 'prog', ARGV[6], 'updated', now)
  -- `updated` is not indexed except for finished rows, which are never held.
end
return 1
