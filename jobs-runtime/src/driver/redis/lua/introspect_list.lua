-- One queue's share of a job list page: the jobs of a lex range of the queue's `ALL` index (or
-- of one state's index) that pass the filters, from one end of the range, each as its fields
-- with the input left out (a page never carries payloads).
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
local index = ALL
if state ~= '' then index = state_key(state) end

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
  local members
  if order == 'desc' then
    members = redis.call('ZREVRANGEBYLEX', index, max, min, 'LIMIT', 0, take)
  else
    members = redis.call('ZRANGEBYLEX', index, min, max, 'LIMIT', 0, take)
  end
  for _, member in ipairs(members) do
    seen = seen + 1
    last = member
    local id = id_of(member)
    -- The id is in the member: a prefix filter needs no load.
    if not want.id or string.sub(id, 1, #want.id) == want.id then
      local j = load(id)
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
