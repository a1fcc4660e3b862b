-- One queue's share of a job list page: the jobs of a lex range of one state's index (or of
-- every state's, merged) that pass the filters, from one end of the range, each as the fields a
-- page shows (`SHOWN`: never the input nor the kept result, a page carries no payloads).
-- ARGV: state ('' any), min, max (ZRANGEBYLEX bounds, built by the driver from the cursor and
-- the creation window), order ('desc' newest first, 'asc' oldest first), limit, budget (index
-- entries to look at before answering), then filter pairs: ('name', v), ('tenant', v),
-- ('id', prefix).
-- Answers {rows, resume}: `resume` is '' when the range is read to its end, else the last
-- member looked at, so a page left short by the budget goes on after it in a later call (one
-- script never walks a whole large queue).
local state, min, max, order = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local limit, budget = tonumber(ARGV[5]), tonumber(ARGV[6])
local want = {}
for i = 7, #ARGV, 2 do want[ARGV[i]] = ARGV[i + 1] end

-- The fields a row of a page shows (`codec.rs`' `job` reads them), 'state' first as `load_some`
-- wants: never the input nor the kept result, so a large payload is not even read.
local SHOWN = { 'state', 'run', 'name', 'queue', 'key', 'tenant', 'attempt', 'max', 'run_at',
  'prio', 'created', 'updated', 'err', 'errc', 'by', 'claims', 'vis', 'prog', 'tp', 'actor', 'uq' }

-- The states with an index of their own (`state_key`); running rows are in RUN, by lease.
local INDEXED = { 'ready', 'delayed', 'suspended', 'done', 'failed', 'dead', 'cancelled' }

local function in_range(member, lo, hi)
  if lo ~= '-' then
    local bound, open = string.sub(lo, 2), string.sub(lo, 1, 1) == '('
    if member < bound or (open and member == bound) then return false end
  end
  if hi ~= '+' then
    local bound, open = string.sub(hi, 2), string.sub(hi, 1, 1) == '('
    if member > bound or (open and member == bound) then return false end
  end
  return true
end

-- The running rows' members, made once a call from RUN (a few: one a busy slot). An entry
-- whose job no longer runs (an older build's ack left it; the next claim drops it) is passed
-- over, so a list of every state does not show its job twice.
local running = nil
local function running_range(lo, hi, desc, take)
  if running == nil then
    running = {}
    for _, id in ipairs(redis.call('ZRANGE', RUN, 0, -1)) do
      local f = redis.call('HMGET', jk(id), 'state', 'created')
      if f[1] == 'running' then running[#running + 1] = created_entry(f[2], id) end
    end
    table.sort(running)
  end
  local out = {}
  local from, to, step = 1, #running, 1
  if desc then from, to, step = #running, 1, -1 end
  for k = from, to, step do
    if #out >= take then break end
    if in_range(running[k], lo, hi) then out[#out + 1] = running[k] end
  end
  return out
end

local function index_range(key, lo, hi, desc, take)
  if desc then return redis.call('ZREVRANGEBYLEX', key, hi, lo, 'LIMIT', 0, take) end
  return redis.call('ZRANGEBYLEX', key, lo, hi, 'LIMIT', 0, take)
end

-- A lex range's first `take` members from one end, as ZRANGEBYLEX / ZREVRANGEBYLEX answer
-- them. For every state: each index's first `take`, merged in order until `take` (the union's
-- first `take` are among them).
local function range(lo, hi, desc, take)
  if state == 'running' then return running_range(lo, hi, desc, take) end
  if state ~= '' then return index_range(state_key(state), lo, hi, desc, take) end
  local lists = {}
  local function add(list) if #list > 0 then lists[#lists + 1] = { list, 1 } end end
  add(running_range(lo, hi, desc, take))
  for _, s in ipairs(INDEXED) do add(index_range(state_key(s), lo, hi, desc, take)) end
  local out = {}
  while #out < take do
    local best, best_member = nil, nil
    for _, list in ipairs(lists) do
      local member = list[1][list[2]]
      if member and (best == nil or (desc and member > best_member)
          or (not desc and member < best_member)) then
        best, best_member = list, member
      end
    end
    if best == nil then break end
    out[#out + 1] = best_member
    best[2] = best[2] + 1
  end
  return out
end

-- The member is '<created, 17 digits>:<id>': the id starts at 19.
local function id_of(member) return string.sub(member, 19) end

local function wanted(j)
  if state ~= '' and j.state ~= state then return false end
  if want.name and j.name ~= want.name then return false end
  if want.tenant and j.tenant ~= want.tenant then return false end
  return true
end

local rows, seen, last = {}, 0, ''
local CHUNK = 256
while #rows < limit and seen < budget do
  local take = math.min(CHUNK, budget - seen)
  -- A round of a list of every state reads eight indexes and merges what they give: it takes
  -- no more than the rows still wanted (another round follows when a filter turns some away).
  if state == '' then take = math.min(take, math.max(limit - #rows, 16)) end
  local members = range(min, max, order == 'desc', take)
  for _, member in ipairs(members) do
    seen = seen + 1
    last = member
    local id = id_of(member)
    -- The id is in the member: a prefix filter needs no load.
    if not want.id or string.sub(id, 1, #want.id) == want.id then
      local j = load_some(id, SHOWN)
      if j and wanted(j) then
        j.input = 'null'
        rows[#rows + 1] = flat(j)
        if #rows >= limit then return { rows, last } end
      end
    end
  end
  if #members < take then return { rows, '' } end
  if order == 'desc' then max = '(' .. last else min = '(' .. last end
end
return { rows, last }
