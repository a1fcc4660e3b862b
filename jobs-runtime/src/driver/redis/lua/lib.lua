-- The queue library every queue function shares: the key layout of one queue (KEYS[1] is
-- its hash tag, so every key below lives in the queue's one slot), a job as a Lua table, and
-- how a job changes state (`change`, and its index moves `unindex` and `index`, which the claim
-- and the ack, the hot paths, use with their writes spelled out), which keeps every index and
-- counter in step.
--
-- Times are microseconds since the epoch, passed in as decimal strings and stored as such:
-- Lua's numbers are doubles, and Redis turns a number argument into text with 14 digits, so
-- no time is ever written from arithmetic done here.

-- The queue a call works on: KEYS[1] is its hash tag, every key below lives in its one slot.
-- A function library's locals outlive a call, so `begin` sets them at the start of every queue
-- function: the key names only when the queue is not the last call's (a worker's claims and
-- acks are on one queue, and making the names was a dozen strings a call), and a call's own
-- state afresh (`noted`, `pending`, `dropped_groups`: each is described where it is used).
local Q, TENANTS, TIMED, RUN, LIVE, FIN, GONE, PAUSE, SEQ, COUNTED, REL, GP
local noted, STATE_KEYS, pending, dropped_groups
local ID_LENGTH = 36
-- Texts of numbers made once, at a library's first queue call (its top level cannot reach
-- `string`): Lua's number-to-text goes through sprintf's floating-point path and its
-- text-to-number through strtod, each a few tenths of a microsecond, which a job's enqueue,
-- claim and ack paid a dozen times. `ZEROS[n]`: n zeros (`pad`); `NEXT_COUNT['<n>']`: the text
-- of n + 1 for n under 128, as an attempt or a claim ordinal is (`succ`); `SHARD_OF[byte]`:
-- the id index shard of an id's last character (`id_shard`); `byte`: `string.byte`.
local ZEROS, NEXT_COUNT, SHARD_OF, byte
local function make_number_texts()
  byte = string.byte
  ZEROS = {}
  for n = 0, 17 do ZEROS[n] = string.rep('0', n) end
  NEXT_COUNT = {}
  for n = 0, 127 do NEXT_COUNT[tostring(n)] = tostring(n + 1) end
  SHARD_OF = {}
  for n = 0, 15 do
    local digit = string.format('%x', n)
    SHARD_OF[byte(digit)] = tostring(n)
    SHARD_OF[byte(string.upper(digit))] = tostring(n)
  end
end
local function begin(keys)
  if ZEROS == nil then make_number_texts() end
  noted = 0
  pending = nil
  dropped_groups = nil
  if keys[1] == Q then return end
  Q = keys[1]
  STATE_KEYS = {}
  -- set: the lanes with ready or delayed rows: a tenant ('' is no tenant) for its rows of the
  -- default priority, `<tenant>\0<priority>` for its rows of another (`lane`); each lane has
  -- a due set (`due_key`)
  TENANTS = Q .. ':tenants'
  -- zset: suspended rows by run_at, the end of their wait (member: as the due sets', 16 digits
  -- of insertion order then the id). Builds before RUN filed running rows here too (member: the
  -- bare id), which the claim still reads and `unrun` still removes.
  TIMED = Q .. ':timed'
  -- zset: running rows by visible_at, the end of their lease (member: the id); running rows
  -- have no state index, this is it. A set of its own, so a read of the running rows (the
  -- lists, the counts) never walks the suspended ones, which can be many.
  RUN = Q .. ':run'
  -- hash: live key (name NUL tenant NUL key) -> the job holding it: a live one, or a finished
  -- one with a unique period (`uq`, microseconds: its creation plus the period), which keeps its
  -- entry when it finishes; a reader answers it only while `uq` is after now (`holds_key`)
  LIVE = Q .. ':live'
  FIN = Q .. ':fin'           -- zset: finished rows by updated_at
  GONE = Q .. ':gone'         -- zset: ids whose job was deleted and history kept, by when
  PAUSE = Q .. ':pause'       -- hash: at, actor, while the queue is paused
  SEQ = Q .. ':seq'           -- counter: insertion order (FIFO among equal run_at)
  COUNTED = Q .. ':cn'        -- set: job names with a counters hash here (`counters_key`)
  -- set: ids of jobs others depend on (`hd`) that stopped being live, their dependents still to
  -- be judged (`dependencies.lua`'s `pending`)
  REL = Q .. ':rel'
  -- Groups of jobs awaited together (`groups.lua` and `driver/redis/groups.rs` keep them). A group
  -- lives in its waiter's queue: its record (`group_key`: waiter, parent, size, settled, need,
  -- done, created), its members in join order (`group_list_key`, '<id>\0<queue>') and each
  -- member's mark (`group_marks_key`: id -> '0' still to count, '1' counted). A waiter keeps the
  -- groups it waits on (`waits_key`, and `hw` = '1'); a parent its children (`children_key`,
  -- '<id>\0<queue>' by join order, and `hc` = '1'); a child its parent (`par`), a batch's member
  -- and callback the batch (`bt`). A live member keeps the groups still to count it
  -- (`counting_key`, members '<group>\0<queue of the group>', and `gr` = '1'); when it stops
  -- being live `member_ended` moves them to `ended_key` and notes it in GP, which the groups'
  -- pass takes (`groups.lua`'s `take`): a settle costs the same few calls however many members
  -- its groups have.
  GP = Q .. ':gp'
end

local function group_key(group) return Q .. ':g:' .. group end
local function group_list_key(group) return Q .. ':gl:' .. group end
local function group_marks_key(group) return Q .. ':gm:' .. group end
local function waits_key(id) return Q .. ':wg:' .. id end
local function children_key(id) return Q .. ':ch:' .. id end
local function counting_key(id) return Q .. ':mg:' .. id end
local function ended_key(id) return Q .. ':me:' .. id end
-- `noted`: how many jobs this call noted for a pass after it (REL or GP): a settle answers 2
-- when it noted one, so the driver runs the passes on its queue.
local function jk(id) return Q .. ':j:' .. id end
local function due_key(lane) return Q .. ':due:' .. lane end
-- A row's lane: its tenant, and its priority when it is not the default (a tenant holds no
-- control character, so NUL cannot be part of one).
local function lane(j)
  local tenant = j.tenant or ''
  if j.prio == nil or j.prio == '0' then return tenant end
  return tenant .. '\0' .. j.prio
end
-- A state's rows by creation (lex, '<created>:<id>'), for the lists and counts; none for
-- `running`, whose rows are few and which RUN already holds (names made once a queue, in
-- `STATE_KEYS`). A list of every state merges these and RUN (`introspect_list.lua`).
local function state_key(state)
  local key = STATE_KEYS[state]
  if key == nil then key = Q .. ':st:' .. state; STATE_KEYS[state] = key end
  return key
end
local function steps_key(run) return Q .. ':s:' .. run end
local function hist_key(id) return Q .. ':h:' .. id end
-- A job name's counters: '<width secs>:<bucket start secs>:<done|retried|failed|dead|duration_ms>'
-- -> count; `observe` adds to 1-minute buckets, the operator's rollup folds them wider.
local function counters_key(name) return Q .. ':c:' .. name end

local QUEUED = { ready = true, delayed = true, suspended = true }
local LIVE_STATES = { ready = true, delayed = true, suspended = true, running = true }

-- What a stored job's hash leaves out, because it follows from what is stored: the id (in the
-- key), the run (the id, unless another was named), attempt and claims (0 until the first
-- claim) and updated (created until the first change), which `load` fills in; and the live
-- key (`live_key`: name, tenant and key) and the due-order member (`order_member`: `sq`, the
-- insertion order, then the id), made where they are needed. `flat` leaves `sq` out of an
-- answer.
local function derive(j, id)
  j.id = id
  if j.run == nil then j.run = id end
  if j.attempt == nil then j.attempt = '0' end
  if j.claims == nil then j.claims = '0' end
  if j.updated == nil then j.updated = j.created end
end

local function live_key(j) return j.name .. '\0' .. (j.tenant or '') .. '\0' .. j.key end

-- Whether time `a` is not after time `b`, both decimal texts: two of the same length compare as
-- text (the times of one store all have 16 digits), others as numbers.
local function not_after(a, b)
  if #a == #b and byte(a, 1) ~= 45 and byte(b, 1) ~= 45 then return a <= b end
  return tonumber(a) <= tonumber(b)
end
-- Whether a job of `state` with unique mark `uq` (nil: none) holds its key at `now`: while
-- live, and after that while its unique period lasts (the port's `holds_key`).
local function holds_key(state, uq, now)
  return LIVE_STATES[state] or (uq ~= nil and uq ~= false and not not_after(uq, now))
end
-- A decimal text of `width` digits at least, as string.format('%0<width>d') writes it: zeros
-- before a text without a sign (a negative one, which no store time is, goes the long way).
local function pad(text, width)
  local short = width - #text
  if short <= 0 then return text end
  if byte(text, 1) == 45 then return string.format('%0' .. width .. 'd', tonumber(text)) end
  return ZEROS[short] .. text
end
-- The text of count `n` + 1 (`n` a text).
local function succ(n) return NEXT_COUNT[n] or string.format('%d', tonumber(n) + 1) end
-- A job's member in its due set: its insertion order (16 digits; `sq`, a text), then its id.
local function order_entry(sq, id) return pad(sq, 16) .. id end
local function order_member(j) return order_entry(j.sq, j.id) end
-- A job's member in the creation-order indexes: its creation (17 digits), ':', its id.
local function created_entry(created, id) return pad(created, 17) .. ':' .. id end

local function load(id)
  local flat = redis.call('HGETALL', jk(id))
  if #flat == 0 then return nil end
  local j = {}
  for i = 1, #flat, 2 do j[flat[i]] = flat[i + 1] end
  derive(j, id)
  -- And the fields as read, which an answer may reuse (`claim.lua`).
  return j, flat
end

-- Some of a stored job's fields (`names`, the first of them 'state', which every job has), by
-- HMGET: a settle that answers no row reads no payload. A field left out is nil, as an absent one.
local function load_some(id, names)
  local got = redis.call('HMGET', jk(id), unpack(names))
  if not got[1] then return nil end
  local j = {}
  for i = 1, #names do
    if got[i] then j[names[i]] = got[i] end
  end
  derive(j, id)
  return j
end

local INTERNAL = { sq = true }

-- The job as the driver reads it: its fields as a flat list of pairs.
local function flat(j)
  local out = {}
  for f, v in pairs(j) do
    if not INTERNAL[f] then
      out[#out + 1] = f
      out[#out + 1] = v
    end
  end
  return out
end

local function created_member(j) return created_entry(j.created, j.id) end

-- Index edits. A script that changes many jobs, each once (the claim, the batched ack), opens a
-- batch (`batch_begin`): each key's removals and additions are then sent once, at
-- `batch_flush`, instead of one call per job (a claim or ack of 16 jobs made about 350 calls;
-- batched, about 60). Within a batch every removal is applied before every addition, which is
-- the order `change` makes them in for any one job. `pending` holds an open batch's edits.
local function batch_begin()
  pending = { zrem = {}, zadd = {}, left = {}, joined = {}, hincr = {}, names = {}, live = {},
    unrun = {} }
end

local function zrem(key, member)
  if pending == nil then return redis.call('ZREM', key, member) end
  local list = pending.zrem[key]
  if list == nil then list = {}; pending.zrem[key] = list end
  list[#list + 1] = member
end

local function zadd(key, score, member)
  if pending == nil then return redis.call('ZADD', key, score, member) end
  local list = pending.zadd[key]
  if list == nil then list = {}; pending.zadd[key] = list end
  list[#list + 1] = score
  list[#list + 1] = member
end

-- A lane's due set lost a row: the lane leaves the set of lanes once its set is empty.
local function tenant_left(tenant)
  if pending then
    pending.left[tenant] = true
  elseif redis.call('EXISTS', due_key(tenant)) == 0 then
    redis.call('SREM', TENANTS, tenant)
  end
end

local function tenant_joined(tenant)
  if pending then pending.joined[tenant] = true else redis.call('SADD', TENANTS, tenant) end
end

-- unpack() takes a few thousand values at most: long lists go in chunks (of whole pairs).
local function call_chunked(command, key, list)
  local CHUNK, n = 2000, 0
  for from = 1, #list, CHUNK do
    n = n + redis.call(command, key, unpack(list, from, math.min(from + CHUNK - 1, #list)))
  end
  return n
end

-- Running rows leave RUN; one an older build claimed is in TIMED instead (a bare id), from
-- which it goes when RUN did not hold them all.
local function unrun_now(ids)
  if call_chunked('ZREM', RUN, ids) < #ids then call_chunked('ZREM', TIMED, ids) end
end

local function unrun(id)
  if pending then
    pending.unrun[#pending.unrun + 1] = id
  else
    unrun_now({ id })
  end
end

local function batch_flush()
  local p = pending
  pending = nil
  if p == nil then return end
  if #p.unrun > 0 then unrun_now(p.unrun) end
  for key, members in pairs(p.zrem) do call_chunked('ZREM', key, members) end
  for key, members in pairs(p.zadd) do call_chunked('ZADD', key, members) end
  for tenant in pairs(p.left) do
    if redis.call('EXISTS', due_key(tenant)) == 0 then redis.call('SREM', TENANTS, tenant) end
  end
  for tenant in pairs(p.joined) do redis.call('SADD', TENANTS, tenant) end
  -- Live keys freed: each only if it still names the job that freed it.
  local lks, ids = {}, {}
  for lk, id in pairs(p.live) do
    lks[#lks + 1] = lk
    ids[#ids + 1] = id
  end
  for from = 1, #lks, 1000 do
    local to = math.min(from + 999, #lks)
    local holders = redis.call('HMGET', LIVE, unpack(lks, from, to))
    local freed = {}
    for k = 1, #holders do
      if holders[k] == ids[from + k - 1] then freed[#freed + 1] = lks[from + k - 1] end
    end
    if #freed > 0 then redis.call('HDEL', LIVE, unpack(freed)) end
  end
  for key, fields in pairs(p.hincr) do
    for field, n in pairs(fields) do redis.call('HINCRBY', key, field, n) end
  end
  local names = {}
  for name in pairs(p.names) do names[#names + 1] = name end
  if #names > 0 then redis.call('SADD', COUNTED, unpack(names)) end
end

-- A ready or delayed row is in its lane's due set (its tenant's, or its tenant's and
-- priority's), by run_at (the claim's and the stats' one index of them); a suspended one in
-- TIMED, a running one in RUN, a finished one in FIN; and every row but a running one in its
-- state's index.
-- `member`, when the caller read it (the claim, from the due sets), is the row's due-order
-- member, which `unindex` otherwise makes.
local function unindex(j, member)
  local tenant = lane(j)
  if j.state == 'running' then
    unrun(j.id)
    return
  end
  if j.state == 'suspended' then
    zrem(TIMED, member or order_member(j))
  elseif QUEUED[j.state] then
    zrem(due_key(tenant), member or order_member(j))
    tenant_left(tenant)
  else
    zrem(FIN, j.id)
  end
  zrem(state_key(j.state), created_member(j))
end

local function index(j)
  local tenant = lane(j)
  if j.state == 'running' then
    zadd(RUN, j.vis, j.id)
    return
  end
  if j.state == 'suspended' then
    zadd(TIMED, j.run_at, order_member(j))
  elseif QUEUED[j.state] then
    zadd(due_key(tenant), j.run_at, order_member(j))
    tenant_joined(tenant)
  else
    zadd(FIN, j.updated, j.id)
  end
  zadd(state_key(j.state), '0', created_member(j))
end

-- Frees a job's live key if it still names the job.
local function free_live_key(j)
  if pending then
    pending.live[live_key(j)] = j.id
  else
    local lk = live_key(j)
    if redis.call('HGET', LIVE, lk) == j.id then redis.call('HDEL', LIVE, lk) end
  end
end

local function count(key, field, n)
  if pending == nil then return redis.call('HINCRBY', key, field, n) end
  local fields = pending.hincr[key]
  if fields == nil then fields = {}; pending.hincr[key] = fields end
  fields[field] = (fields[field] or 0) + n
end

local function counted(name)
  if pending then pending.names[name] = true else redis.call('SADD', COUNTED, name) end
end

-- The minute bucket's field head of `now` ('60:<bucket start secs>:') and `now` as a number,
-- made once for each `now` (the last one's kept: `bucket_at`, `bucket_head`, `bucket_at_n`).
local bucket_at, bucket_head, bucket_at_n
local function bucket_field(now)
  if now ~= bucket_at then
    local now_n = tonumber(now)
    local now_s = math.floor(now_n / 1000000)
    bucket_head = '60:' .. string.format('%d', now_s - (now_s % 60)) .. ':'
    bucket_at, bucket_at_n = now, now_n
  end
  return bucket_head, bucket_at_n
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
  local field, now_n = bucket_field(now)
  local started = now_n
  if j.started then started = tonumber(j.started) end
  local elapsed = math.floor((now_n - started) / 1000)
  if elapsed < 0 then elapsed = 0 end
  local key = counters_key(j.name)
  counted(j.name)
  count(key, field .. outcome, 1)
  count(key, field .. 'duration_ms', elapsed)
end

-- A member its groups still count stopped being live (or was deleted live): the groups counting
-- it move to its ended set, which the groups' pass counts, and it is noted for that pass. The
-- groups it joins later (requeued) count its next end, not this one.
local function member_ended(j)
  local counting, ended = counting_key(j.id), ended_key(j.id)
  redis.call('SUNIONSTORE', ended, ended, counting)
  redis.call('DEL', counting)
  redis.call('HDEL', jk(j.id), 'gr')
  j.gr = nil
  redis.call('SADD', GP, j.id)
  noted = noted + 1
end

-- What follows when job `j` stops being live: its live key is freed (unless it has a unique
-- period: `uq`, which `j` must hold when the job has it), its dependents are noted for judging
-- and the groups still counting it for their pass.
local function stopped_live(j)
  if j.uq == nil then free_live_key(j) end
  -- A job others depend on ended: its dependents are to be judged.
  if j.hd then
    redis.call('SADD', REL, j.id)
    noted = noted + 1
  end
  -- A member of groups still counting it ended: the groups' pass counts it.
  if j.gr then member_ended(j) end
end

-- Applies `set` (field -> text, or false to clear) to job `j`, moving its indexes, freeing its
-- live key when it stops being live (unless it has a unique period: `uq`, which `j` must hold
-- when the job has it), and counting a settle. Every change of a stored job but the claim's
-- and the ack's goes through here; those two make the same moves with their fields written out
-- (`claim.lua`, `settle.lua`).
local function change(j, set, now)
  local before_state, before_attempt = j.state, tonumber(j.attempt)
  unindex(j)
  local hset, hdel = {}, {}
  for f, v in pairs(set) do
    if v == false then
      -- Only a field the job has: an HDEL of nothing is a call for nothing.
      if j[f] ~= nil then hdel[#hdel + 1] = f end
      j[f] = nil
    else
      j[f] = v
      hset[#hset + 1] = f
      hset[#hset + 1] = v
    end
  end
  if #hset > 0 then redis.call('HSET', jk(j.id), unpack(hset)) end
  if #hdel > 0 then redis.call('HDEL', jk(j.id), unpack(hdel)) end
  if LIVE_STATES[before_state] and not LIVE_STATES[j.state] then stopped_live(j) end
  index(j)
  observe(before_state, before_attempt, j, now)
end

-- Deletes a stored job and its run's steps; its history stays until the purge takes it.
local function delete(j, now)
  unindex(j)
  if j.hd then
    -- A live job others depend on is gone for them as a finished one is; a finished one's
    -- dependents were judged when it ended.
    if LIVE_STATES[j.state] then
      redis.call('SADD', REL, j.id)
      noted = noted + 1
    else
      redis.call('DEL', Q .. ':dn:' .. j.id)
    end
  end
  -- A live member removed counts for its groups as one that ended (a finished one was noted
  -- when it ended); the children it invoked are its own. Groups it waits on stay: their
  -- members may still count for them (the purge drops them, `purge.lua`).
  if j.gr then member_ended(j) end
  if j.hc then redis.call('DEL', children_key(j.id)) end
  -- A live job's key, or a finished one's it still holds for its unique period.
  if redis.call('HGET', LIVE, live_key(j)) == j.id then
    redis.call('HDEL', LIVE, live_key(j))
  end
  redis.call('DEL', jk(j.id), steps_key(j.run))
  if redis.call('EXISTS', hist_key(j.id)) == 1 then redis.call('ZADD', GONE, now, j.id) end
end

-- Drops a group: its record, members and marks; its id goes in `dropped_groups` (nil until a
-- call drops one), which the driver takes out of the id index.
local function drop_group(group)
  redis.call('DEL', group_key(group), group_list_key(group), group_marks_key(group))
  if dropped_groups == nil then dropped_groups = {} end
  dropped_groups[#dropped_groups + 1] = group
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

-- The enqueue's rules, shared by `enqueue.lua` (a batch) and `enqueue_one.lua` (a lone job).
-- Its ARGV: a head of 5 (now, wake channel, count, queue, the id index's key head), then 13
-- fields a job (`enqueue.lua` lists them), job `i`'s from `enqueue_at(i)` + 1.
local function enqueue_at(i) return 5 + (i - 1) * 13 end

-- The id index shard of an id, as `keys.rs` names it: the id's last hex digit.
local function id_shard(ix, id)
  return ix .. (SHARD_OF[byte(id, -1)] or tonumber(string.sub(id, -1), 16)) .. '}:ids'
end

-- The job that holds a live key whose entry names `holder_id`: {id, run} while it holds it
-- (`holds_key`), or nil for a key left by a job that is gone, or by a finished one whose unique
-- period lapsed: that key is free, and the new job takes it.
local function key_holder(holder_id, now)
  local f = redis.call('HMGET', jk(holder_id), 'state', 'run', 'uq')
  if f[1] and holds_key(f[1], f[3], now) then return { holder_id, f[2] or holder_id } end
  return nil
end

-- Stores job `i` of the call's `argv` as a new job in `queue` with insertion order `seq` (a
-- text): its hash only; the caller files it in the indexes. Answers its state, its lane and its
-- run_at.
local function store_new(argv, i, queue, now, seq)
  local at = enqueue_at(i)
  local id, run, name, input, key, tenant, max, run_at, tp, actor, prio, uq =
    argv[at + 1], argv[at + 2], argv[at + 3], argv[at + 4], argv[at + 5], argv[at + 6],
    argv[at + 7], argv[at + 8], argv[at + 9], argv[at + 10], argv[at + 12], argv[at + 13]
  local state = 'delayed'
  if not_after(run_at, now) then state = 'ready' end
  -- A job with no optional field but its trace context (every traced enqueue's) is written
  -- without building the field table (a table, its growth and its unpacking were about 6% of
  -- a bulk enqueue's server instructions).
  if run == '' and tenant == '' and actor == '' and uq == '' and prio == '' then
    if tp == '' then
      redis.call('HSET', jk(id), 'name', name, 'queue', queue, 'input', input, 'key', key,
        'max', max, 'run_at', run_at, 'created', now, 'state', state, 'sq', seq)
    else
      redis.call('HSET', jk(id), 'name', name, 'queue', queue, 'input', input, 'key', key,
        'max', max, 'run_at', run_at, 'created', now, 'state', state, 'sq', seq, 'tp', tp)
    end
    return state, tenant, run_at
  end
  local h = { 'name', name, 'queue', queue, 'input', input, 'key', key, 'max', max,
    'run_at', run_at, 'created', now, 'state', state, 'sq', seq }
  if run ~= '' then h[#h + 1] = 'run'; h[#h + 1] = run end
  if tenant ~= '' then h[#h + 1] = 'tenant'; h[#h + 1] = tenant end
  if tp ~= '' then h[#h + 1] = 'tp'; h[#h + 1] = tp end
  if actor ~= '' then h[#h + 1] = 'actor'; h[#h + 1] = actor end
  if uq ~= '' then h[#h + 1] = 'uq'; h[#h + 1] = uq end
  -- The default priority is not stored; another gives the row a lane of its own.
  local row_lane = tenant
  if prio ~= '' then
    h[#h + 1] = 'prio'; h[#h + 1] = prio
    row_lane = tenant .. '\0' .. prio
  end
  redis.call('HSET', jk(id), unpack(h))
  return state, row_lane, run_at
end

-- Debounce: a holder still queued takes the later job's input and run_at (job `i` of `argv`);
-- one that started is left as it is. Answers the holder's new run_at when it was replaced.
local function replace_queued(holder_id, argv, i, now)
  local h = load(holder_id)
  if not (h and (h.state == 'ready' or h.state == 'delayed')) then return nil end
  local at = enqueue_at(i)
  local input, run_at = argv[at + 4], argv[at + 8]
  local state = 'delayed'
  if not_after(run_at, now) then state = 'ready' end
  change(h, { input = input, run_at = run_at, state = state, updated = now }, now)
  return run_at
end
