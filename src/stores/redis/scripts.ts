/**
 * The Lua scripts of the Redis store, each an atomic step on the counter's hash: the guarded
 * reservation ({@linkcode RESERVE_SCRIPT}, and {@linkcode FIRST_RESERVE_SCRIPT}, which reads the
 * server's durability in the same call), an interleaved member's reservation, the give-backs and
 * the remembered step. Values travel as decimal strings: Lua numbers are doubles.
 *
 * @module
 */

import { LuaScript } from "./lua_script.ts";

/**
 * Lua: `below(a, b)` is `a < b` for decimal integer strings without leading zeros (`b` not
 * negative), compared as text so counters above 2^53 are never rounded through Lua's doubles.
 */
export const LUA_BELOW = `local function below(a, b)
  if string.sub(a, 1, 1) == '-' then return true end
  if #a ~= #b then return #a < #b end
  return a < b
end
`;

// Refuses a counter that interleaved servers own (its layout field exists: a plain increment
// of their cycle counter would repeat IDs). Raises the field to ARGV[4] if it is below the floor
// ARGV[3] (decimal strings compared exactly, never as Lua doubles), then HINCRBY, removes a TTL
// the hash has (an expired hash would restart every counter at 1), and returns the value as a
// string so values above 2^53 survive, whether it raised, and the TTL removed. A non-integer
// field is left for HINCRBY to refuse.
// ARGV: 1 field, 2 count, 3 floor, 4 raise-to, 5 the step field or '' (read the remembered step
// and reserve at least that many, at most ARGV[6]), 7 the pool field or '' (take from the pool).
// Replies {last, raised, count, first or false, remembered step or false}; values as strings.
// A pooled range is taken only above the floor (never below what the caller holds); the first
// such range, or its first `count` IDs when its end is below 10^15 (exact in Lua's doubles). A
// raised counter (the server lost data) drops the pool: its ranges may have been handed out
// since.
const RESERVE_BODY = `if redis.call('HGET', KEYS[1], '\\0layout:' .. args[1]) then
  return redis.error_reply('KVID_LAYOUT this counter belongs to interleaved servers (redis: [...])')
end
local raised = 0
local floor = args[3]
if floor ~= '0' then
  local cur = redis.call('HGET', KEYS[1], args[1])
  if not cur then cur = '0' end
  if string.match(cur, '^%-?%d+$') and below(cur, floor) then
    redis.call('HSET', KEYS[1], args[1], args[4])
    raised = 1
  end
end
local count = tonumber(args[2])
local step = false
if args[5] ~= '' then
  step = redis.call('HGET', KEYS[1], args[5])
  local n = step and string.match(step, '^%d+$') and #step < 16 and tonumber(step)
  if n and n > count then count = math.min(n, tonumber(args[6])) end
end
local ttl = redis.call('PTTL', KEYS[1])
if ttl > 0 then redis.call('PERSIST', KEYS[1]) else ttl = 0 end
if args[7] ~= '' then
  local pool = redis.call('HGET', KEYS[1], args[7])
  if pool and raised == 1 then
    redis.call('HDEL', KEYS[1], args[7])
  elseif pool then
    local kept = {}
    local first, last
    for a, b in string.gmatch(pool, '(%d+)-(%d+)') do
      if first == nil and below(floor, a) then
        first = a
        last = b
        if #b < 16 and tonumber(b) - tonumber(a) + 1 > count then
          last = string.format('%.0f', tonumber(a) + count - 1)
          table.insert(kept, string.format('%.0f', tonumber(a) + count) .. '-' .. b)
        end
      else
        table.insert(kept, a .. '-' .. b)
      end
    end
    if first ~= nil then
      if #kept == 0 then redis.call('HDEL', KEYS[1], args[7])
      else redis.call('HSET', KEYS[1], args[7], table.concat(kept, ' ')) end
      return {last, raised, 0, first, step, ttl}
    end
  end
end
redis.call('HINCRBY', KEYS[1], args[1], count)
return {redis.call('HGET', KEYS[1], args[1]), raised, count, false, step, ttl}`;

/** The guarded reservation; see the comment above `RESERVE_BODY`. */
export const RESERVE_SCRIPT: LuaScript = new LuaScript(
  LUA_BELOW + "local args = ARGV\n" + RESERVE_BODY,
);

/** Kvrocks' setting that turns its write-ahead log off (set in its config file only). */
export const KVROCKS_DISABLE_WAL = "rocksdb.write_options.disable_wal";

/** The `INFO` fields the durability read uses (`durability_probe.ts`), by section. */
export const DURABILITY_FACTS = {
  server: ["redis_version", "valkey_version", "kvrocks_version"],
  persistence: ["aof_enabled"],
  memory: ["maxmemory_policy", "maxmemory"],
  replication: ["role", "connected_slaves"],
} as const;

// A generator's first reservation and the server's durability in one call (one round trip,
// with the CONFIG GETs a script cannot send pipelined beside it): reads the DURABILITY_FACTS
// from INFO server, persistence and memory and the hash's PTTL (on Kvrocks also CONFIG GET
// rocksdb.write_options.disable_wal, which Kvrocks runs in scripts and Redis does not), and
// reserves as RESERVE_SCRIPT only when what it read is served: Kvrocks with its write-ahead log
// on (or off or unknown accepted), or no allkeys-* eviction policy and AOF on (or AOF off or
// unknown accepted). Otherwise the counter is not touched: the client judges the facts
// (durability_probe.ts) and refuses, or reserves in a second call. ARGV: 1 field, 2 count,
// 3 floor, 4 raise-to, 5 the most IDs the remembered step may raise the count to, 6 flags: '1'
// or '0' for read the remembered step, take from the pool, AOF off or unknown accepted (under
// "best-effort" or with replicas), serverSettings states appendonly yes, loss accepted
// ("best-effort": Kvrocks' WAL off); then a stated maxmemory_policy, if any. Six arguments, not RESERVE_SCRIPT's seven: a server refuses a
// command of more than 10 parts from a client that has not authenticated by closing the
// connection (the retries then hid the NOAUTH until the timeout); with 10 it answers NOAUTH.
// Replies RESERVE_SCRIPT's reply (or {false, 0, 0, false, false, 0} when it did not reserve),
// then the facts as `name:value` lines and the PTTL.
export const FIRST_RESERVE_SCRIPT: LuaScript = new LuaScript(
  LUA_BELOW + `local flags = ARGV[6]
local function on(i) return string.sub(flags, i, i) == '1' end
local args = {ARGV[1], ARGV[2], ARGV[3], ARGV[4], on(1) and '\\0step:' .. ARGV[1] or '', ARGV[5],
  on(2) and '\\0pool:' .. ARGV[1] or ''}
local found = {}
local facts = {}
-- Each field is looked for only in its section, as plain text after a line break.
for _, section in ipairs({${
    Object.entries(DURABILITY_FACTS).map(([section, names]) =>
      `{'${section}', {'${names.join("', '")}'}}`
    ).join(", ")
  }}) do
  local text = redis.call('INFO', section[1])
  for _, name in ipairs(section[2]) do
    local at = string.find(text, '\\n' .. name .. ':', 1, true)
    if at then
      found[name] = string.match(text, '^[^\\r\\n]*', at + #name + 2)
      table.insert(facts, name .. ':' .. found[name])
    end
  end
end
local pttl = redis.call('PTTL', KEYS[1])
local served = true
if found['kvrocks_version'] then
  local wal = redis.pcall('CONFIG', 'GET', '${KVROCKS_DISABLE_WAL}')
  if type(wal) == 'table' and wal[2] then
    table.insert(facts, '${KVROCKS_DISABLE_WAL}:' .. wal[2])
    if wal[2] ~= 'no' and not on(5) then served = false end
  elseif not on(5) then served = false end
else
  local policy = found['maxmemory_policy'] or string.sub(flags, 6)
  if string.sub(policy, 1, 8) == 'allkeys-' then served = false end
  local aof = found['aof_enabled']
  if aof ~= '1' and not on(3) and not (aof == nil and on(4)) then served = false end
end
local r = {false, 0, 0, false, false, 0}
if served then
  local function reserve()
` + RESERVE_BODY + `
  end
  r = reserve()
  if r.err then return r end
end
r[7] = table.concat(facts, '\\n')
r[8] = pttl
return r`,
);

// The reservation of a member of an interleaved set (MemberReserveOptions.layout): the field counts
// that member's block cycles. Refuses another layout, and a value without a layout (a
// single-server counter, whose value is an ID); records the layout with the first increment (so
// they never exist apart); raises the field to ARGV[4] if below the floor ARGV[3] (compared as
// decimal strings). ARGV: field, count, floor, raiseTo, layout. Replies {'ok', value, raised},
// {'layout', layout found}, {'plain', value} or {'notint', value}.
export const LAYOUT_RESERVE_SCRIPT = new LuaScript(
  LUA_BELOW + `local found = redis.call('HGET', KEYS[1], ARGV[1]) or '0'
if not string.match(found, '^%-?%d+$') then return {'notint', found} end
local lf = '\\0layout:' .. ARGV[1]
local layout = redis.call('HGET', KEYS[1], lf)
if layout and layout ~= ARGV[5] then return {'layout', layout} end
if not layout and found ~= '0' then return {'plain', found} end
local raised = 0
if below(found, ARGV[3]) then
  redis.call('HSET', KEYS[1], ARGV[1], ARGV[4])
  raised = 1
end
if not layout then redis.call('HSET', KEYS[1], lf, ARGV[5]) end
redis.call('HINCRBY', KEYS[1], ARGV[1], ARGV[2])
local ttl = redis.call('PTTL', KEYS[1])
if ttl > 0 then redis.call('PERSIST', KEYS[1]) else ttl = 0 end
return {'ok', redis.call('HGET', KEYS[1], ARGV[1]), raised, ttl}`,
);

// Compare-and-set: lower the counter to ARGV[3] only if it still holds ARGV[2] (the end of the
// caller's last reservation, compared as a decimal string: exact past 2^53). A counter that
// interleaved servers own is left alone.
export const RELEASE_SCRIPT = new LuaScript(
  `if redis.call('HGET', KEYS[1], '\\0layout:' .. ARGV[1]) then
  return 0
end
if redis.call('HGET', KEYS[1], ARGV[1]) == ARGV[2] then
  redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
  return 1
end
return 0`,
);

/** The most ranges a counter's pool holds; a give-back to a full pool is dropped (a gap). */
export const POOL_MAX = 64;

// ARGV: 1 field, 2 pool field, 3 the top range's last ID, 4 its first ID - 1, then ranges
// "first-last" in increasing order, the top one last. The top one lowers the counter if it still
// ends there (compare-and-set, as RELEASE_SCRIPT); the others, and the top one otherwise, join
// the pool, kept sorted, at most POOL_MAX. Replies how many ranges were given back.
export const GIVE_BACK_SCRIPT = new LuaScript(
  LUA_BELOW + `if redis.call('HGET', KEYS[1], '\\0layout:' .. ARGV[1]) then
  return 0
end
local n = #ARGV - 4
local given = 0
if redis.call('HGET', KEYS[1], ARGV[1]) == ARGV[3] then
  redis.call('HSET', KEYS[1], ARGV[1], ARGV[4])
  n = n - 1
  given = 1
end
if n == 0 then return given end
local entries = {}
local pool = redis.call('HGET', KEYS[1], ARGV[2])
if pool then
  for a, b in string.gmatch(pool, '(%d+)-(%d+)') do table.insert(entries, {a, b}) end
end
for i = 5, 4 + n do
  local a, b = string.match(ARGV[i], '^(%d+)-(%d+)$')
  if a and #entries < ${POOL_MAX} then
    table.insert(entries, {a, b})
    given = given + 1
  end
end
table.sort(entries, function(x, y) return below(x[1], y[1]) end)
local out = {}
local prev
for _, e in ipairs(entries) do
  -- Adjacent ranges merge (exact below 10^15; larger ones stay apart).
  if prev and #prev[2] < 16 and #e[1] < 16 and tonumber(prev[2]) + 1 == tonumber(e[1]) then
    prev[2] = e[2]
    out[#out] = prev[1] .. '-' .. prev[2]
  else
    prev = {e[1], e[2]}
    table.insert(out, e[1] .. '-' .. e[2])
  end
end
redis.call('HSET', KEYS[1], ARGV[2], table.concat(out, ' '))
return given`,
);

// Reads (and with ARGV[2], first writes) the remembered step of a counter.
export const STEP_SCRIPT = new LuaScript(`if ARGV[2] ~= '' then
  redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
  return false
end
return redis.call('HGET', KEYS[1], ARGV[1])`);
