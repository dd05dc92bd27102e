-- The log's sums (SlidingWindowLog::kParts) alone, in plain Lua 5.1, the Lua Redis embeds, against a
-- brute-force model: random sequences of adds, changes (a settle: to 0, to fewer units, to more), trims
-- and searches, with every level's roll-over and every boundary hit on purpose, and a checker that
-- compares the whole structure with sums recomputed from the entries.
--
--   lua5.1 tests/lua/test_log_sums.lua SUMS_LUA [OPERATIONS] [SEED]
--
-- SUMS_LUA holds the part as swl sends it (tests/support/print_log_sums prints it). Exits 1 on the first
-- disagreement, naming the seed, the step and what differed.

local sums_path = assert(arg[1], 'usage: lua5.1 test_log_sums.lua SUMS_LUA [OPERATIONS] [SEED]')
local operations_wanted = tonumber(arg[2] or '1000000')
local first_seed = tonumber(arg[3] or '1')

-- struct.pack and struct.unpack for big-endian doubles ('>ddd...'), as Redis's Lua has them.
local function packDouble(value)
  if value == 0 then return string.char(0, 0, 0, 0, 0, 0, 0, 0) end
  local sign = 0
  if value < 0 then sign, value = 128, -value end
  local mantissa, exponent = math.frexp(value)  -- value = mantissa * 2^exponent, 0.5 <= mantissa < 1
  exponent = exponent + 1022
  assert(exponent > 0 and exponent < 2047, 'a double the shim does not pack')
  mantissa = (mantissa * 2 - 1) * 2 ^ 52  -- the 52 bits below the leading 1
  local bytes = {}
  for i = 8, 3, -1 do
    bytes[i] = mantissa % 256
    mantissa = math.floor(mantissa / 256)
  end
  bytes[2] = (exponent % 16) * 16 + mantissa
  bytes[1] = sign + math.floor(exponent / 16)
  return string.char(unpack(bytes))
end

local function unpackDouble(text, at)
  local b = {string.byte(text, at, at + 7)}
  local sign = b[1] >= 128 and -1 or 1
  local exponent = (b[1] % 128) * 16 + math.floor(b[2] / 16)
  local mantissa = b[2] % 16
  for i = 3, 8 do mantissa = mantissa * 256 + b[i] end
  if exponent == 0 and mantissa == 0 then return 0 end
  return sign * (1 + mantissa / 2 ^ 52) * 2 ^ (exponent - 1023)
end

local struct = {}
function struct.pack(format, ...)
  assert(format:match('^>d+$'), 'the shim packs big-endian doubles only')
  local values, parts = {...}, {}
  for i = 1, #format - 1 do parts[i] = packDouble(values[i]) end
  return table.concat(parts)
end
function struct.unpack(format, text, at)
  assert(format:match('^>d+$'), 'the shim unpacks big-endian doubles only')
  at = at or 1
  local values = {}
  for i = 1, #format - 1 do
    values[i] = unpackDouble(text, at)
    at = at + 8
  end
  values[#values + 1] = at
  return unpack(values)
end

local source = assert(io.open(sums_path)):read('*a')
local logSums, logSearches = assert(loadstring(source .. '\nreturn logSums, logSearches', 'kParts'))()
local sums = logSums(struct.pack, struct.unpack)
local searches = logSearches(sums)
local LEVELS, SIZE, FANOUT = sums.LEVELS, sums.SIZE, 16

-- What every boundary was crossed by, per level: printed at the end, and each must be above 0.
local hits = {}
local hit_names = {}
local function hit(name, level)
  local key = level and (name .. ' at level ' .. level) or name
  if not hits[key] then
    hits[key] = 0
    hit_names[#hit_names + 1] = key
  end
  hits[key] = hits[key] + 1
end

local seed, step = 0, 0
local function fail(message)
  io.stderr:write(string.format('test_log_sums: seed %d, step %d: %s\n', seed, step, message))
  os.exit(1)
end
local function expect(condition, message, ...)
  if not condition then fail(string.format(message, ...)) end
end

-- The brute-force model: every entry ever recorded, by number, with its units (those that left the set
-- included, since the nodes sum them too), and the range in the set.
local Model = {}
Model.__index = Model

local function newModel(count)
  -- The `count` entries it starts with hold one unit each, so they are left implicit: a number without
  -- units holds one, and sums nothing.
  local model = setmetatable({units = {}, oldest = 0, next = count, fresh = count, changed_fresh = {}, left_prefix = {}, left_memo = {},
                              sums = {}},
                             Model)
  setmetatable(model.units, {__index = function() return 1 end})
  for level = 1, LEVELS do model.sums[level] = {} end
  return model
end

-- The extra units of the entries numbered first..last (all of them, in the set or not).
function Model:extraOf(first, last)
  local extra = 0
  for number = first, last do extra = extra + self.units[number] - 1 end
  return extra
end

-- Prefix sums of extra units over entries that left the set: they never change again, so each is
-- summed once, as the oldest entry moves on.
function Model:leftExtraBefore(number)
  assert(number <= self.oldest, 'the model sums only entries that left')
  local memo = self.left_memo
  if memo.step ~= step then memo = {step = step}; self.left_memo = memo end
  if memo[number] == nil then memo[number] = self:leftExtraCounted(number) end
  return memo[number]
end

function Model:leftExtraCounted(number)
  local fresh, changed = self.fresh, 0
  for n in pairs(self.changed_fresh) do  -- the starting entries whose units changed
    if n < number then changed = changed + self.units[n] - 1 end
  end
  if number <= fresh then return changed end
  local prefix = self.left_prefix
  prefix[0] = prefix[0] or 0  -- prefix[i]: the extra units of entries fresh .. fresh + i - 1
  for i = #prefix, number - fresh - 1 do prefix[i + 1] = prefix[i] + self.units[fresh + i] - 1 end
  return changed + prefix[number - fresh]
end

-- The sum of node `index` of `level`, recomputed from its entries' extra units, those that left
-- included.
function Model:nodeSum(level, index)
  local size = SIZE[level]
  local first, last = index * size, math.min((index + 1) * size, self.next) - 1
  if first >= self.oldest then return self:extraOf(first, last) end
  local split = math.min(self.oldest, last + 1)  -- the entries before it left the set
  return self:leftExtraBefore(split) - self:leftExtraBefore(first) + self:extraOf(split, last)
end

-- The same kept as each entry is recorded or changed, so that the long traces can check the nodes a
-- step touches at once (a node of 65,536 entries is too many to sum after every step); checkWhole
-- holds it to the recomputed sums.
function Model:record(number, units)
  self.units[number] = units
  for level = 1, LEVELS do
    local index = math.floor(number / SIZE[level])
    self.sums[level][index] = (self.sums[level][index] or 0) + units - 1
  end
end

function Model:keptSum(level, index) return self.sums[level][index] or 0 end

function Model:unitsBefore(number)
  local units = 0
  for n = self.oldest, number - 1 do units = units + self.units[n] end
  return units
end

function Model:total() return self:unitsBefore(self.next) end

function Model:entryOfUnit(target)
  local before = 0
  for n = self.oldest, self.next - 1 do
    if before + self.units[n] >= target then return n, before end
    before = before + self.units[n]
  end
  return nil
end

-- A Fenwick tree over every entry's units: the long traces' second model, for queries over 10^5 entries
-- (a brute-force sum per query would take too long there); checked against the brute force at each
-- full check.
-- A Fenwick tree over every entry's units: the long traces' second model, for queries over 10^5 entries
-- (a brute-force sum per query would take too long there); held to the brute force at each whole check.
local FENWICK_SIZE = 2 ^ 20
local lowbit = {1}  -- lowbit[i]: the lowest set bit of i
for i = 2, FENWICK_SIZE do lowbit[i] = i % 2 == 1 and 1 or 2 * lowbit[i / 2] end

local function newFenwick(model)
  local tree, nodes = {}, {}
  for i = 1, FENWICK_SIZE do nodes[i] = 0 end
  function tree.add(number, delta)
    local i = number + 1
    while i <= FENWICK_SIZE do
      nodes[i] = nodes[i] + delta
      i = i + lowbit[i]
    end
  end
  function tree.prefix(number)  -- the units of the entries numbered below `number`
    local i, sum = number, 0
    while i > 0 do
      sum = sum + nodes[i]
      i = i - lowbit[i]
    end
    return sum
  end
  function tree.search(target)  -- the first entry whose prefix, itself included, reaches target
    local position, bit = 0, FENWICK_SIZE
    while bit >= 1 do
      if position + bit <= FENWICK_SIZE and nodes[position + bit] < target then
        position = position + bit
        target = target - nodes[position]
      end
      bit = bit / 2
    end
    return position
  end
  for number = 0, model.next - 1 do tree.add(number, model.units[number]) end
  return tree
end

-- The set as Redis would hold it, in memory: the stored nodes per level, and what the part read and
-- wrote, so that bounds and writes can be checked.
local function newStore(model)
  local store = {nodes = {}, node_reads = 0, entry_reads = 0, largest_node_read = 0, largest_entry_read = 0,
                 writes = 0}
  for level = 1, LEVELS do store.nodes[level] = {} end
  local io = {}
  function io:nodes(level, first, last)
    store.node_reads = store.node_reads + 1
    store.largest_node_read = math.max(store.largest_node_read, last - first + 1)
    local found, nodes = {}, store.nodes[level]
    for index = first, last do found[index - first + 1] = nodes[index] or 0 end
    return found
  end
  function io:entries(first, last)
    store.entry_reads = store.entry_reads + 1
    store.largest_entry_read = math.max(store.largest_entry_read, last - first + 1)
    expect(first >= model.oldest and last < model.next,
           'read entries %d..%d, outside the set (%d..%d)', first, last, model.oldest, model.next - 1)
    local units = {}
    for number = first, last do units[#units + 1] = model.units[number] end
    return units
  end
  function io:writeNode(level, index, sum, was)
    store.writes = store.writes + 1
    expect(store.nodes[level][index] == was, 'wrote node %d of level %d saying it held %s; it held %s', index, level,
           tostring(was), tostring(store.nodes[level][index]))
    store.nodes[level][index] = sum ~= 0 and sum or nil
  end
  function io:dropNodes(level, first, last)
    for index = first, last do store.nodes[level][index] = nil end
  end
  store.io = io
  return store
end

-- Every node of every level against the model, recomputed from the entries; the bookkeeping too.
local function checkWhole(book, model, store)
  expect(book.oldest == model.oldest and book.next == model.next, 'the set is %d..%d; the book says %d..%d',
         model.oldest, model.next - 1, book.oldest, book.next - 1)
  expect(book.extra == model:extraOf(model.oldest, model.next - 1), 'extra %d; the entries hold %d', book.extra,
         model:extraOf(model.oldest, model.next - 1))
  for level = 1, LEVELS do
    local size = SIZE[level]
    local oldest_node, open = math.floor(model.oldest / size), math.floor((model.next - 1) / size)
    local gone = model:leftExtraBefore(model.oldest) - model:leftExtraBefore(oldest_node * size)
    expect(book.gone[level] == gone, 'gone[%d] is %d; the entries that left its oldest node hold %d extra', level,
           book.gone[level], gone)
    if model.next > 0 then
      local open_sum = model:keptSum(level, open)
      expect(book.tail[level] == open_sum, 'tail[%d] is %d; node %d sums %d', level, book.tail[level], open, open_sum)
    end
    for index = oldest_node, open do
      expect(model:keptSum(level, index) == model:nodeSum(level, index), 'the model kept node %d of level %d wrong',
             index, level)
    end
    for index = oldest_node, open - 1 do
      local sum = model:keptSum(level, index)
      local stored = store.nodes[level][index]
      expect((stored or 0) == sum and (stored == nil or sum ~= 0), 'node %d of level %d holds %s; its entries sum %d',
             index, level, tostring(stored), sum)
    end
    for index in pairs(store.nodes[level]) do
      expect(index >= oldest_node and index < open, 'node %d of level %d is stored outside %d..%d', index, level,
             oldest_node, open - 1)
    end
  end
  if step % 16 ~= 0 then return end
  local decoded = sums.decode(sums.encode(book))
  for _, field in ipairs({'extra', 'oldest', 'next', 'newest', 'last_unit', 'horizon', 'writes'}) do
    expect(decoded[field] == book[field], 'the book encodes %s %s as %s', field, tostring(book[field]),
           tostring(decoded[field]))
  end
  for level = 1, LEVELS do
    expect(decoded.tail[level] == book.tail[level] and decoded.gone[level] == book.gone[level],
           'the book does not encode level %d', level)
  end
end

-- The nodes a step can change (each level's node holding `number`, the open ones, the oldest ones),
-- recomputed from the entries: what the long traces check after every step.
local function checkAround(book, model, store, number)
  expect(book.oldest == model.oldest and book.next == model.next, 'the book says %d..%d; the set is %d..%d',
         book.oldest, book.next - 1, model.oldest, model.next - 1)
  for level = 1, LEVELS do
    local size = SIZE[level]
    local oldest_node, open = math.floor(model.oldest / size), math.floor((model.next - 1) / size)
    for _, index in ipairs({number and math.floor(number / size) or open, open - 1, oldest_node}) do
      if index >= oldest_node and index < open then
        local sum = model:keptSum(level, index)
        expect((store.nodes[level][index] or 0) == sum, 'node %d of level %d holds %s; its entries sum %d', index,
               level, tostring(store.nodes[level][index]), sum)
      end
    end
  end
end

local random = math.random

-- Queries at random and at every boundary: node edges at each level, the set's ends, a unit either
-- side of a node's first and last unit.
local function checkQueries(book, model, store, fenwick, count)
  local total = fenwick and (fenwick.prefix(model.next) - fenwick.prefix(model.oldest)) or model:total()
  local expected_total = sums.total(book)
  expect(expected_total == total, 'the set holds %d units; total says %d', total, expected_total)
  local function unitsBefore(number)
    if fenwick then return fenwick.prefix(number) - fenwick.prefix(model.oldest) end
    return model:unitsBefore(number)
  end
  local function entryOfUnit(target)
    if not fenwick then return model:entryOfUnit(target) end
    local base = fenwick.prefix(model.oldest)
    if fenwick.prefix(model.next) - base < target then return nil end
    local number = fenwick.search(base + target)
    return number, fenwick.prefix(number) - base
  end
  local numbers = {model.oldest, model.next}
  for _ = 1, count do
    local level = random(1, LEVELS)
    local size = SIZE[level]
    local near = model.oldest + random(0, math.max(0, model.next - model.oldest))
    local edge = math.floor(near / size) * size + random(-1, 1)
    numbers[#numbers + 1] = near
    numbers[#numbers + 1] = edge
  end
  for _, number in ipairs(numbers) do
    if number >= model.oldest and number <= model.next then
      local before_reads = store.node_reads
      local got, want = searches.unitsBefore(book, store.io, number), unitsBefore(number)
      expect(got == want, 'unitsBefore(%d) is %d; the entries before it hold %d', number, got, want)
      expect(store.node_reads - before_reads <= LEVELS, 'unitsBefore read nodes %d times', store.node_reads - before_reads)
      if number > model.oldest and number < model.next then
        hit('unitsBefore from span level ' .. (function()
          local l = 0
          while l < LEVELS and math.floor(model.oldest / SIZE[l + 1]) ~= math.floor((number - 1) / SIZE[l + 1]) do l = l + 1 end
          return l
        end)())
      end
    end
  end
  if total > 0 then
    local targets = {1, total, random(1, total)}
    for _ = 1, count do
      -- the first and last unit of a node's worth of entries, and the units either side
      local number = model.oldest + random(0, model.next - model.oldest - 1)
      local size = SIZE[random(1, LEVELS)]
      local edge = math.max(model.oldest, math.min(model.next - 1, math.floor(number / size) * size))
      local at_edge = unitsBefore(edge)
      targets[#targets + 1] = at_edge + random(0, 1)
      targets[#targets + 1] = at_edge + model.units[edge]
    end
    for _, target in ipairs(targets) do
      if target >= 1 and target <= total then
        local got_number, got_before = searches.entryOfUnit(book, store.io, target)
        local want_number, want_before = entryOfUnit(target)
        expect(got_number == want_number and got_before == want_before,
               'entryOfUnit(%d) is %s (%s before); the entries say %s (%s before)', target, tostring(got_number),
               tostring(got_before), tostring(want_number), tostring(want_before))
        if want_number % FANOUT == 0 then hit('a search ending on a node\'s first entry') end
      end
    end
    expect(searches.entryOfUnit(book, store.io, total + 1) == nil, 'entryOfUnit past the last unit found an entry')
  end
  expect(store.largest_entry_read <= FANOUT, 'a query read %d entries at once', store.largest_entry_read)
  expect(store.largest_node_read <= FANOUT or model.next - model.oldest > FANOUT * SIZE[LEVELS],
         'a query read %d nodes at once', store.largest_node_read)
end

-- A cost as the log sees them: mostly one unit (a token budget), now and then more, sometimes a lot.
local function randomUnits(style)
  if style == 'ones' then return 1 end
  local kind = random(1, 100)
  if style == 'mostly_ones' then return kind <= 97 and 1 or random(2, 5) end
  if kind <= 60 then return 1 elseif kind <= 90 then return random(2, 20) else return random(21, 5000) end
end

local function add(book, model, store, fenwick, units)
  local number = model.next
  for level = 1, LEVELS do
    if number > 0 and number % SIZE[level] == 0 then
      hit('roll-over', level)
      if model:keptSum(level, number / SIZE[level] - 1) == 0 then hit('a node closed summing 0 (not stored)', level) end
    end
  end
  sums.add(book, store.io, units)
  model:record(number, units)
  model.next = number + 1
  if fenwick then fenwick.add(number, units) end
  return number
end

local function change(book, model, store, fenwick, number, new_units)
  local delta = new_units - model.units[number]
  for level = 1, LEVELS do
    if math.floor(number / SIZE[level]) == math.floor((model.next - 1) / SIZE[level]) then
      hit('a change in the open node', level)
    else
      hit('a change in a closed node', level)
      if (store.nodes[level][math.floor(number / SIZE[level])] or 0) + delta == 0 then
        hit('a change that empties a stored node', level)
      end
    end
  end
  if new_units == 0 then hit('a change to 0 units') elseif delta < 0 then hit('a change to fewer units')
  elseif delta > 0 then hit('a change to more units') end
  sums.change(book, store.io, number, delta)
  model.units[number] = new_units
  if number < model.fresh then model.changed_fresh[number] = true end
  for level = 1, LEVELS do
    local index = math.floor(number / SIZE[level])
    model.sums[level][index] = (model.sums[level][index] or 0) + delta
  end
  if fenwick then fenwick.add(number, delta) end
end

local function trim(book, model, store, count)
  local units = {}
  for i = 1, count do units[i] = model.units[model.oldest + i - 1] end
  for level = 1, LEVELS do
    if math.floor(model.oldest / SIZE[level]) ~= math.floor((model.oldest + count) / SIZE[level]) then
      hit('a trim past a node\'s end', level)
    end
  end
  if count > 0 and model.oldest + count == model.next then hit('a trim that empties the set') end
  sums.trim(book, store.io, units)
  model.oldest = model.oldest + count
end

-- One trace: `steps` operations on a set that starts with `start` one-unit entries (a set counted by
-- entries until now), of which `left` have already left it. Checks the whole structure after every step
-- when `whole_every` is 1, else the nodes each step touches and the whole every `whole_every` steps.
local function trace(options)
  local model = newModel(options.start)
  local store = newStore(model)
  local book = sums.fresh(options.start)
  -- The first `left` of them have left the set: as trim would leave it (their units are all one, so no
  -- node and nothing gone), written at once since a trim of a million entries would take seconds.
  book.oldest, model.oldest = options.left, options.left
  local fenwick = options.fenwick and newFenwick(model) or nil
  local done = 0
  for s = 1, options.steps do
    step = s
    local kind = random(1, 100)
    local touched = nil
    local present = model.next - model.oldest
    if kind <= options.adds or present == 0 then
      touched = add(book, model, store, fenwick, randomUnits(options.style))
    elseif kind <= options.adds + 15 then
      local number = model.oldest + random(0, present - 1)
      local r = random(1, 4)
      local new_units = r == 1 and 0 or r == 2 and math.max(0, model.units[number] - random(1, 3))
                        or model.units[number] + random(1, 50)
      change(book, model, store, fenwick, number, new_units)
      touched = number
    else
      local most = options.trim_most or 8
      trim(book, model, store, math.min(present, random(0, most)))
      present = model.next - model.oldest
      if present > options.keep then trim(book, model, store, math.min(present - options.keep, random(0, 200))) end
    end
    done = done + 1
    if options.whole_every == 1 or s % options.whole_every == 0 or s == options.steps then
      checkWhole(book, model, store)
      if fenwick then
        expect(fenwick.prefix(model.next) - fenwick.prefix(model.oldest) == model:total(), 'the Fenwick model drifted')
      end
    else
      checkAround(book, model, store, touched)
    end
    if s % options.query_every == 0 then checkQueries(book, model, store, fenwick, options.queries) end
  end
  return done, model.next
end

-- Every level's boundaries, hit on purpose, each step checked whole and queried: a node closed holding
-- extra units (stored), then changed to sum nothing (removed); a node closed summing nothing (never
-- stored); a change in a closed node and in the open one; a trim past a node's end.
local function boundaries(level)
  local size = SIZE[level]
  local function run(start, left, steps)
    step = 0
    local model = newModel(start)
    local store = newStore(model)
    local book = sums.fresh(start)
    book.oldest, model.oldest = left, left
    for _, act in ipairs(steps) do
      step = step + 1
      act(book, model, store)
      checkWhole(book, model, store)
      checkQueries(book, model, store, nil, 3)
    end
    return step
  end
  local count = 0
  count = count + run(size - 2, size - 10, {
    function(b, m, s) add(b, m, s, nil, 3) end,                           -- entry size - 2 holds 2 extra
    function(b, m, s) add(b, m, s, nil, 1) end,
    function(b, m, s) add(b, m, s, nil, 1) end,                           -- closes node 0: stored
    function(b, m, s) change(b, m, s, nil, size, 4) end,                  -- in the open node
    function(b, m, s) change(b, m, s, nil, size - 2, 1) end,              -- node 0 sums nothing: removed
    function(b, m, s) change(b, m, s, nil, size - 1, 0) end,              -- and less than nothing
    function(b, m, s) trim(b, m, s, 9) end,                               -- past node 0's end
  })
  count = count + run(size - 1, size - 3, {
    function(b, m, s) add(b, m, s, nil, 1) end,
    function(b, m, s) add(b, m, s, nil, 1) end,                           -- node 0 closes summing nothing
    function(b, m, s) trim(b, m, s, 4) end,                               -- every entry of it leaves, and the set empties
    function(b, m, s) add(b, m, s, nil, 7) end,
  })
  count = count + run(size - 1, size - 3, {
    function(b, m, s) add(b, m, s, nil, 5) end,                           -- node 0 sums 4 extra, open
    function(b, m, s) trim(b, m, s, 3) end,                               -- every entry leaves
    function(b, m, s) add(b, m, s, nil, 7) end,                           -- closes node 0: left behind, not stored
  })
  count = count + run(2 * size - 2, 0, {
    function(b, m, s) add(b, m, s, nil, 2) end,
    function(b, m, s) add(b, m, s, nil, 1) end,
    function(b, m, s) add(b, m, s, nil, 1) end,                           -- closes node 1 holding 1 extra
    function(b, m, s) trim(b, m, s, size + 5) end,                        -- node 0 goes, node 1 is the oldest
    function(b, m, s) change(b, m, s, nil, 2 * size - 2, 1) end,          -- node 1 then sums nothing
  })
  return count
end

local started = os.clock()
local operations, longest = 0, 0
seed = first_seed
for level = 1, LEVELS do operations = operations + boundaries(level) end
-- Long traces first: sets of over 70,000 entries that fill every level, including several nodes of
-- the top one. Then short ones in number, fast-forwarded past every level's edge, checked whole after
-- every step.
local long_traces = {
  {start = 0, left = 0, steps = 150000, adds = 80, keep = 140000, style = 'mostly_ones', whole_every = 25000,
   query_every = 100, queries = 4, fenwick = true},
  {start = 65500, left = 0, steps = 90000, adds = 75, keep = 100000, style = 'ones', whole_every = 30000,
   query_every = 100, queries = 4, fenwick = true},
  {start = 0, left = 0, steps = 120000, adds = 85, keep = 120000, style = 'weighted', whole_every = 30000,
   query_every = 100, queries = 4, fenwick = true},
}
for _, options in ipairs(long_traces) do
  math.randomseed(seed)
  local done, reached = trace(options)
  operations, longest = operations + done, math.max(longest, reached)
  seed = seed + 1
end
local edges = {0, 16 - 20, 256 - 40, 4096 - 60, 65536 - 80, 2 * 65536 - 100, 16 * 65536 - 150}
while operations < operations_wanted do
  math.randomseed(seed)
  local start = math.max(0, edges[random(1, #edges)] + random(0, 30))
  local styles = {'ones', 'mostly_ones', 'weighted'}
  local options = {start = start, left = math.max(0, start - random(0, 300)), steps = random(200, 3000),
                   adds = random(35, 70), keep = random(20, 400), style = styles[random(1, 3)], whole_every = 1,
                   query_every = random(4, 12), queries = 2, trim_most = random(1, 40)}
  local done, reached = trace(options)
  operations, longest = operations + done, math.max(longest, reached)
  seed = seed + 1
end

print(string.format('test_log_sums: %d operations in %d traces (seeds %d..%d), entries numbered up to %d, %.1f s',
                    operations, seed - first_seed, first_seed, seed - 1, longest, os.clock() - started))
print('boundaries crossed:')
local missing = {}
local expected = {}
for level = 1, LEVELS do
  for _, name in ipairs({'roll-over', 'a node closed summing 0 (not stored)', 'a change in the open node',
                         'a change in a closed node', 'a change that empties a stored node', 'a trim past a node\'s end'}) do
    expected[#expected + 1] = name .. ' at level ' .. level
  end
end
for level = 0, LEVELS do expected[#expected + 1] = 'unitsBefore from span level ' .. level end
for _, name in ipairs({'a change to 0 units', 'a change to fewer units', 'a change to more units',
                       'a trim that empties the set', 'a search ending on a node\'s first entry'}) do
  expected[#expected + 1] = name
end
for _, name in ipairs(expected) do
  print(string.format('  %-50s %d', name, hits[name] or 0))
  if (hits[name] or 0) == 0 then missing[#missing + 1] = name end
end
if #missing > 0 then
  io.stderr:write('test_log_sums: never reached: ' .. table.concat(missing, '; ') .. '\n')
  os.exit(1)
end
