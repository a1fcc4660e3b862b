-- The queue library every queue script starts with: the key layout of one queue (KEYS[1] is
-- its hash tag, so every key below lives in the queue's one slot), a job as a Lua table, and
-- the one place a job changes state (`change`), which keeps every index and counter in step.
--
-- Times are microseconds since the epoch, passed in as decimal strings and stored as such:
-- Lua's numbers are doubles, and Redis turns a number argument into text with 14 digits, so
-- no time is ever written from arithmetic done here.
local Q = KEYS[1]
local TENANTS = Q .. ':tenants'   -- set: tenants with queued rows ('' is no tenant)
local RUNNING = Q .. ':running'   -- zset: running rows by visible_at
local LIVE = Q .. ':live'         -- hash: live key (name NUL tenant NUL key) -> job id
local ALL = Q .. ':all'           -- zset by lex: '<created>:<id>' of every stored job
local FIN = Q .. ':fin'           -- zset: finished rows by updated_at
local GONE = Q .. ':gone'         -- zset: ids whose job was deleted and history kept, by when
local PAUSE = Q .. ':pause'       -- hash: at, actor, while the queue is paused
local SEQ = Q .. ':seq'           -- counter: insertion order (FIFO among equal run_at)
local WAITING = Q .. ':rd'        -- zset: ready and delayed rows by run_at (the stats' split)
local COUNTED = Q .. ':cn'        -- set: job names with a counters hash here (`counters_key`)
local function jk(id) return Q .. ':j:' .. id end
local function due_key(tenant) return Q .. ':due:' .. tenant end
local function state_key(state) return Q .. ':st:' .. state end
local function steps_key(run) return Q .. ':s:' .. run end
local function hist_key(id) return Q .. ':h:' .. id end
-- A job name's counters: '<width secs>:<bucket start secs>:<done|retried|failed|dead|duration_ms>'
-- -> count; `observe` adds to 1-minute buckets, the operator's rollup folds them wider.
local function counters_key(name) return Q .. ':c:' .. name end

local QUEUED = { ready = true, delayed = true, suspended = true }
local LIVE_STATES = { ready = true, delayed = true, suspended = true, running = true }

local function load(id)
  local flat = redis.call('HGETALL', jk(id))
  if #flat == 0 then return nil end
  local j = {}
  for i = 1, #flat, 2 do j[flat[i]] = flat[i + 1] end
  return j
end

-- The job as the driver reads it: its fields as a flat list of pairs.
local function flat(j)
  local out = {}
  for f, v in pairs(j) do
    out[#out + 1] = f
    out[#out + 1] = v
  end
  return out
end

local function created_member(j)
  return string.format('%017d', tonumber(j.created)) .. ':' .. j.id
end

local function unindex(j)
  local tenant = j.tenant or ''
  if QUEUED[j.state] then
    redis.call('ZREM', due_key(tenant), j.m)
    redis.call('ZREM', WAITING, j.id)
    if redis.call('EXISTS', due_key(tenant)) == 0 then redis.call('SREM', TENANTS, tenant) end
  elseif j.state == 'running' then
    redis.call('ZREM', RUNNING, j.id)
  else
    redis.call('ZREM', FIN, j.id)
  end
  redis.call('ZREM', state_key(j.state), created_member(j))
end

local function index(j)
  local tenant = j.tenant or ''
  if QUEUED[j.state] then
    redis.call('ZADD', due_key(tenant), j.run_at, j.m)
    redis.call('SADD', TENANTS, tenant)
    if j.state ~= 'suspended' then redis.call('ZADD', WAITING, j.run_at, j.id) end
  elseif j.state == 'running' then
    redis.call('ZADD', RUNNING, j.vis, j.id)
  else
    redis.call('ZADD', FIN, j.updated, j.id)
  end
  redis.call('ZADD', state_key(j.state), 0, created_member(j))
end

-- A settle's outcome for the per-name counters (the port's CounterOutcome::of), added to the
-- minute bucket of `now`, with the attempt's duration since its claim.
local function observe(before_state, before_attempt, j, now)
  if before_state ~= 'running' then return end
  local outcome
  if j.state == 'done' then outcome = 'done'
  elseif j.state == 'failed' then outcome = 'failed'
  elseif j.state == 'dead' then outcome = 'dead'
  elseif j.state == 'ready' and tonumber(j.attempt) >= before_attempt then outcome = 'retried'
  end
  if outcome == nil then return end
  local now_s = math.floor(tonumber(now) / 1000000)
  local bucket = now_s - (now_s % 60)
  local started = tonumber(j.started or now)
  local elapsed = math.floor((tonumber(now) - started) / 1000)
  if elapsed < 0 then elapsed = 0 end
  local key = counters_key(j.name)
  redis.call('SADD', COUNTED, j.name)
  local field = '60:' .. string.format('%d', bucket) .. ':'
  redis.call('HINCRBY', key, field .. outcome, 1)
  redis.call('HINCRBY', key, field .. 'duration_ms', elapsed)
end

-- Applies `set` (field -> text, or false to clear) to job `j`, moving its indexes, freeing its
-- live key when it stops being live, and counting a settle. The one place a stored job changes.
local function change(j, set, now)
  local before_state, before_attempt = j.state, tonumber(j.attempt)
  unindex(j)
  local hset, hdel = {}, {}
  for f, v in pairs(set) do
    if v == false then
      j[f] = nil
      hdel[#hdel + 1] = f
    else
      j[f] = v
      hset[#hset + 1] = f
      hset[#hset + 1] = v
    end
  end
  if #hset > 0 then redis.call('HSET', jk(j.id), unpack(hset)) end
  if #hdel > 0 then redis.call('HDEL', jk(j.id), unpack(hdel)) end
  if LIVE_STATES[before_state] and not LIVE_STATES[j.state] then
    if redis.call('HGET', LIVE, j.lk) == j.id then redis.call('HDEL', LIVE, j.lk) end
  end
  index(j)
  observe(before_state, before_attempt, j, now)
end

-- Deletes a stored job and its run's steps; its history stays until the purge takes it.
local function delete(j, now)
  unindex(j)
  if LIVE_STATES[j.state] and redis.call('HGET', LIVE, j.lk) == j.id then
    redis.call('HDEL', LIVE, j.lk)
  end
  redis.call('DEL', jk(j.id), steps_key(j.run))
  redis.call('ZREM', ALL, created_member(j))
  if redis.call('EXISTS', hist_key(j.id)) == 1 then redis.call('ZADD', GONE, now, j.id) end
end

-- Appends an operator's act to a job's history (at most 200 rows, the oldest go first).
local function history(j, verb, at, actor, detail)
  local row = { at = at, verb = verb }
  if actor ~= '' then row.actor = actor end
  if detail ~= '' then row.detail = detail end
  if j.tenant then row.tenant = j.tenant end
  redis.call('RPUSH', hist_key(j.id), cjson.encode(row))
  redis.call('LTRIM', hist_key(j.id), -200, -1)
end

-- Whether the claim (worker, ordinal) still holds running job `j`.
local function held(j, worker, claim)
  return j ~= nil and j.state == 'running' and j.by == worker and j.claims == claim
end
