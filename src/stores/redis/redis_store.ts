/**
 * The Redis/Kvrocks store: reserves ranges with `HINCRBY <key> <name> <step>`.
 *
 * @module
 */

import { KvIdError } from "../../contract/errors.ts";
import { describe } from "../../contract/validate.ts";
import { own } from "../../contract/shutdown.ts";
import type {
  CountersOptions,
  CounterValue,
  DurabilityOptions,
  IdRange,
  Reservation,
  ReserveOptions,
  Store,
  StoreDurability,
} from "../../contract/store.ts";
import { poolField, stepField } from "../../contract/store.ts";
import { errorMessage, isReplyError, toKvIdError } from "../../contract/store_errors.ts";
import {
  LAYOUT_FIELD_PREFIX as LAYOUT_PREFIX,
  otherLayout,
  singleStoreCounter,
} from "../interleaved/layout.ts";
import { isNoScripting, LuaScript } from "./lua_script.ts";
import { probeRedis } from "./durability_probe.ts";
import { deleteDaysBefore, serverNow } from "./daily_cleanup.ts";
import { readCounters } from "./counters.ts";

export type { RedisClient, RedisSource } from "../../contract/redis_client.ts";
import type { RedisClient, RedisSource } from "../../contract/redis_client.ts";

// Refuses a counter that interleaved servers own (its layout field exists: a plain increment
// of their cycle counter would repeat IDs). Raises the field to ARGV[4] if it is below the floor
// ARGV[3] (decimal strings compared exactly, never as Lua doubles), then HINCRBY, removes a TTL
// the hash has (an expired hash would restart every counter at 1), and returns the value as a
// string so values above 2^53 survive, whether it raised, and the TTL removed. A non-integer
// field is left for HINCRBY to refuse.
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

// ARGV: 1 field, 2 count, 3 floor, 4 raise-to, 5 the step field or '' (read the remembered step
// and reserve at least that many, at most ARGV[6]), 7 the pool field or '' (take from the pool).
// Replies {last, raised, count, first or false, remembered step or false}; values as strings.
// A pooled range is taken only above the floor (never below what the caller holds); the first
// such range, or its first `count` IDs when its end is below 10^15 (exact in Lua's doubles). A
// raised counter (the server lost data) drops the pool: its ranges may have been handed out
// since.
const RESERVE_SCRIPT = new LuaScript(
  LUA_BELOW + `if redis.call('HGET', KEYS[1], '\\0layout:' .. ARGV[1]) then
  return redis.error_reply('KVID_LAYOUT this counter belongs to interleaved servers (redis: [...])')
end
local raised = 0
local floor = ARGV[3]
if floor ~= '0' then
  local cur = redis.call('HGET', KEYS[1], ARGV[1])
  if not cur then cur = '0' end
  if string.match(cur, '^%-?%d+$') and below(cur, floor) then
    redis.call('HSET', KEYS[1], ARGV[1], ARGV[4])
    raised = 1
  end
end
local count = tonumber(ARGV[2])
local step = false
if ARGV[5] ~= '' then
  step = redis.call('HGET', KEYS[1], ARGV[5])
  local n = step and string.match(step, '^%d+$') and #step < 16 and tonumber(step)
  if n and n > count then count = math.min(n, tonumber(ARGV[6])) end
end
local ttl = redis.call('PTTL', KEYS[1])
if ttl > 0 then redis.call('PERSIST', KEYS[1]) else ttl = 0 end
if ARGV[7] ~= '' then
  local pool = redis.call('HGET', KEYS[1], ARGV[7])
  if pool and raised == 1 then
    redis.call('HDEL', KEYS[1], ARGV[7])
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
      if #kept == 0 then redis.call('HDEL', KEYS[1], ARGV[7])
      else redis.call('HSET', KEYS[1], ARGV[7], table.concat(kept, ' ')) end
      return {last, raised, 0, first, step, ttl}
    end
  end
end
redis.call('HINCRBY', KEYS[1], ARGV[1], count)
return {redis.call('HGET', KEYS[1], ARGV[1]), raised, count, false, step, ttl}`,
);

// The reservation of a member of an interleaved set (ReserveOptions.layout): the field counts
// that member's block cycles. Refuses another layout, and a value without a layout (a
// single-server counter, whose value is an ID); records the layout with the first increment (so
// they never exist apart); raises the field to ARGV[4] if below the floor ARGV[3] (compared as
// decimal strings). ARGV: field, count, floor, raiseTo, layout. Replies {'ok', value, raised},
// {'layout', layout found}, {'plain', value} or {'notint', value}.
const LAYOUT_RESERVE_SCRIPT = new LuaScript(
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
const RELEASE_SCRIPT = new LuaScript(`if redis.call('HGET', KEYS[1], '\\0layout:' .. ARGV[1]) then
  return 0
end
if redis.call('HGET', KEYS[1], ARGV[1]) == ARGV[2] then
  redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
  return 1
end
return 0`);

/** The most ranges a counter's pool holds; a give-back to a full pool is dropped (a gap). */
const POOL_MAX = 64;

// ARGV: 1 field, 2 pool field, 3 the top range's last ID, 4 its first ID - 1, then ranges
// "first-last" in increasing order, the top one last. The top one lowers the counter if it still
// ends there (compare-and-set, as RELEASE_SCRIPT); the others, and the top one otherwise, join
// the pool, kept sorted, at most POOL_MAX. Replies how many ranges were given back.
const GIVE_BACK_SCRIPT = new LuaScript(
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
const STEP_SCRIPT = new LuaScript(`if ARGV[2] ~= '' then
  redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
  return false
end
return redis.call('HGET', KEYS[1], ARGV[1])`);

const MAX_ID = (1n << 63n) - 1n;
// The least time a WAIT bounded by round trips (ReserveOptions.waitRoundTrips) gets in all.
const MIN_WAIT_MS = 200;
const INTERLEAVED_COUNTER =
  "this counter belongs to interleaved servers (its layout field exists): use a generator with the same redis: [...] list, or another name";
// Counters remembered as checked, at most: a bound for processes with very many names.
const MAX_CHECKED = 10_000;

const factoryClients = new WeakMap<() => unknown, Promise<RedisClient>>();

/** Resolve a {@linkcode RedisSource}, calling a factory once and sharing its client. */
export function resolveRedis(source: RedisSource): Promise<RedisClient> {
  if (typeof source !== "function") return Promise.resolve(source);
  let client = factoryClients.get(source);
  if (client === undefined) {
    const made = (async () => await source())();
    client = made;
    factoryClients.set(source, made);
    // A factory that failed is called again next time.
    made.catch(() => factoryClients.delete(source));
    // The library made this client and holds it alone: shutdown() closes it (and forgets it,
    // so the factory is called again if a generator is used after that).
    own({
      close: async () => {
        if (factoryClients.get(source) === made) factoryClients.delete(source);
        const c = await made.catch(() => undefined);
        await c?.close?.();
      },
    });
  }
  return client;
}

/**
 * The store on Redis or Kvrocks. With `guard` it runs one script per reservation (EVALSHA, and
 * EVAL when the server answers NOSCRIPT); without it, a plain `HINCRBY`. A server without
 * scripting makes it fall back to plain `HINCRBY` for good. As a member of an
 * {@linkcode InterleavedStore} it records and checks the set's layout in the same script (and
 * refuses to serve the set without scripting).
 *
 * @example A Redis server and a Deno KV file interleaving blocks
 * ```ts
 * import { KvId } from "@kvid/core";
 * import { DenoKvStore } from "@kvid/core/deno-kv";
 * import { InterleavedStore, RedisStore } from "@kvid/core/store";
 * import assert from "node:assert/strict";
 *
 * // `() => connect({ hostname: "127.0.0.1", port: 6379 })` with jsr:@db/redis in an app.
 * const redis = new RedisStore(() => Promise.reject(new Error("not in this example")));
 * using kv = new DenoKvStore(":memory:");
 * const store = new InterleavedStore([redis, kv], { block: 1000 });
 * await using ORDER_ID = new KvId("order", { store });
 * assert.ok(store.layout(1) === "v1 servers=2 block=1000 index=1" && ORDER_ID.name === "order");
 * ```
 */
export class RedisStore implements Store {
  /** The reserve script reads the remembered step in the same call. */
  readonly reservesStep = true;
  readonly #source: RedisSource;
  #scripting = true;
  // Set once the client replied with a rounded number: exact reads go through the script then.
  #rounding = false;
  // Counters (key, field) checked for an interleaved layout before their first plain HINCRBY.
  readonly #plainChecked = new Set<string>();

  /**
   * A store on one server; no I/O until the first reservation.
   *
   * @param source The client or a factory of it.
   */
  constructor(source: RedisSource) {
    this.#source = source;
  }

  /** False once the server refused scripting: reservations are plain `HINCRBY` since. */
  get scripting(): boolean {
    return this.#scripting;
  }

  /** Reserve `count` IDs; see {@linkcode Store.reserve}. */
  async reserve(
    key: string,
    field: string,
    count: number,
    options: ReserveOptions,
  ): Promise<Reservation> {
    let client: RedisClient;
    try {
      client = await resolveRedis(this.#source);
    } catch (cause) {
      throw new KvIdError("connection", "the Redis client factory failed", { key, field, cause });
    }
    const started = performance.now();
    const reservation = await this.#reserve(client, key, field, count, options);
    // A member of an interleaved set waits a few of its own round trips at most
    // (waitRoundTrips): one whose replicas or fsync do not confirm is skipped quickly.
    const rtt = performance.now() - started;
    let budget = (options.waitMs ?? 5_000) - rtt;
    if (options.waitRoundTrips !== undefined) {
      budget = Math.min(budget, Math.max(MIN_WAIT_MS, options.waitRoundTrips * rtt) - rtt);
    }
    await confirmReservation(client, key, field, options, Math.max(1, Math.floor(budget)));
    return reservation;
  }

  async #reserve(
    client: RedisClient,
    key: string,
    field: string,
    count: number,
    options: ReserveOptions,
  ): Promise<Reservation> {
    try {
      if (options.layout !== undefined) {
        return await this.#layoutScript(client, key, field, count, options, options.layout);
      }
      if ((options.guard || (options.exact && this.#rounding)) && this.#scripting) {
        const floor = options.guard ? options.floor : 0n;
        const pool = options.guard && options.pool === true; // the floor bounds what it takes
        const reply = await this.#script(client, key, field, count, { ...options, floor, pool });
        if (reply !== undefined) return reply;
      }
      await this.#checkPlain(client, key, field);
      // Sent together, one round trip: PERSIST right after the increment removes a TTL on the
      // hash (not atomically, as the script does; between the two only an expiry in that
      // instant can intervene).
      const [reply, persisted] = await Promise.all([
        client.hincrby(key, field, count),
        client.sendCommand?.("PERSIST", [key]).catch(() => undefined),
      ]);
      const value = parseInteger(reply);
      if (value === undefined) throw new Error("HINCRBY did not reply with an integer");
      const ttlRemovedMs = Number(String(persisted)) === 1 ? -1 : 0;
      if (value.exact) {
        return { ranges: [range(value.value, count)], raised: false, ttlRemovedMs };
      }
      // A numeric reply at or above 2^53 may be rounded: the range it stands for is unknown, so
      // it is spent and never handed out. Number mode cannot go there anyway.
      if (!options.exact) {
        throw new KvIdError(
          "unsafe",
          `the counter passed Number.MAX_SAFE_INTEGER (the client replied ${value.value}, a rounded number); use { bigint: true } with a client that reads integers exactly`,
          { key, field },
        );
      }
      // bigint mode: read the next range exactly through the script (its reply is a string).
      this.#rounding = true;
      if (this.#scripting) {
        // Only the increment's exact value is wanted here: never the pool (a pooled range may
        // lie below what the caller holds, which the floor 0 would not exclude).
        const exactOnly = { ...options, floor: 0n, pool: false, loadStep: false };
        const reply = await this.#script(client, key, field, count, exactOnly);
        if (reply !== undefined) return reply;
      }
      throw new KvIdError(
        "config",
        `the counter is above 2^53, the client replied with a rounded number (${value.value}) and the server has no scripting to read it exactly: make the client reply integers as strings (ioredis: new Redis({ stringNumbers: true }); node-redis through fromNodeRedis does) or allow EVAL/EVALSHA`,
        { key, field },
      );
    } catch (cause) {
      throw toKvIdError(cause, key, field);
    }
  }

  /**
   * Give back the unused tail of the last reservation; see {@linkcode Store.release}. False
   * without scripting (a plain read then write could lower a counter another process just
   * raised).
   */
  async release(key: string, field: string, range: IdRange): Promise<boolean> {
    if (!this.#scripting || range.first < 1n || range.last < range.first) return false;
    const client = await resolveRedis(this.#source);
    const args = [field, String(range.last), String(range.first - 1n)];
    try {
      return Number(await RELEASE_SCRIPT.run(client, [key], args)) === 1;
    } catch (err) {
      if (isReplyError(err) && isNoScripting(err)) {
        this.#scripting = false;
        return false;
      }
      throw toKvIdError(err, key, field);
    }
  }

  /**
   * What the server can lose for hash `key` (`INFO`, `CONFIG GET`, `PTTL`: one round trip);
   * see {@linkcode Store.durability} and {@linkcode probeRedis}.
   */
  async durability(key: string, options: DurabilityOptions): Promise<StoreDurability> {
    let client: RedisClient;
    try {
      client = await resolveRedis(this.#source);
    } catch (cause) {
      throw new KvIdError("connection", "the Redis client factory failed", {
        key,
        field: options.field,
        cause,
      });
    }
    try {
      return await probeRedis(client, key, options);
    } catch (err) {
      throw toKvIdError(err, key, options.field);
    }
  }

  /**
   * Delete the `yyyymmdd` counters of hash `key` before `before` (one script); see
   * {@linkcode Store.deleteDaysBefore}.
   */
  async deleteDaysBefore(key: string, before: string): Promise<number> {
    return deleteDaysBefore(await this.#clientFor(key, `<${before}`), key, before);
  }

  /** The counters of hash `key`, exact (one script); see {@linkcode Store.counters}. */
  async counters(key: string, options?: CountersOptions): Promise<Map<string, CounterValue>> {
    return await readCounters(await this.#clientFor(key, ""), key, options);
  }

  /** The server's clock (`TIME`) in epoch ms; see {@linkcode Store.now}. */
  async now(): Promise<number> {
    const client = await this.#clientFor("", "");
    try {
      return await serverNow(client);
    } catch (err) {
      throw toKvIdError(err, "", "");
    }
  }

  async #clientFor(key: string, field: string): Promise<RedisClient> {
    try {
      return await resolveRedis(this.#source);
    } catch (cause) {
      throw new KvIdError("connection", "the Redis client factory failed", { key, field, cause });
    }
  }

  /** The remembered step of a counter; see {@linkcode Store.loadStep}. */
  async loadStep(key: string, field: string): Promise<number | undefined> {
    const reply = await this.#stepScript(key, field, "");
    const step = parseInteger(reply)?.value;
    return step !== undefined && step > 0n && step <= BigInt(Number.MAX_SAFE_INTEGER)
      ? Number(step)
      : undefined;
  }

  /** Remember a counter's step; see {@linkcode Store.saveStep}. */
  async saveStep(key: string, field: string, step: number): Promise<void> {
    await this.#stepScript(key, field, String(step));
  }

  async #stepScript(key: string, field: string, step: string): Promise<unknown> {
    if (!this.#scripting) return undefined;
    const client = await resolveRedis(this.#source);
    try {
      return await STEP_SCRIPT.run(client, [key], [stepField(field), step]);
    } catch (err) {
      if (isReplyError(err) && isNoScripting(err)) {
        this.#scripting = false;
        return undefined;
      }
      throw toKvIdError(err, key, field);
    }
  }

  /**
   * Before the first plain `HINCRBY` of a counter (no guard, or no scripting), refuse one that
   * interleaved servers own: its field is their block cycle, and incrementing it as a plain
   * counter would hand out their IDs. Read with `HEXISTS` through `sendCommand`; a client
   * without `sendCommand` cannot be checked.
   */
  async #checkPlain(client: RedisClient, key: string, field: string): Promise<void> {
    const counter = `${key}\u0000${field}`;
    if (this.#plainChecked.has(counter) || client.sendCommand === undefined) return;
    const reply = await client.sendCommand("HEXISTS", [key, LAYOUT_PREFIX + field]);
    if (Number(String(reply)) === 1) {
      throw new KvIdError("config", INTERLEAVED_COUNTER, { key, field });
    }
    if (this.#plainChecked.size >= MAX_CHECKED) this.#plainChecked.clear();
    this.#plainChecked.add(counter);
  }

  /** A member's reservation in an interleaved set; see {@linkcode ReserveOptions.layout}. */
  async #layoutScript(
    client: RedisClient,
    key: string,
    field: string,
    count: number,
    options: ReserveOptions,
    layout: string,
  ): Promise<Reservation> {
    const where = { key, field };
    const noScripting = () =>
      new KvIdError(
        "config",
        "interleaving needs Lua scripting (EVAL/EVALSHA), which this server refuses: the layout cannot be checked with the increment",
        where,
      );
    if (!this.#scripting) throw noScripting();
    const raiseTo = options.raiseTo > MAX_ID ? MAX_ID : options.raiseTo;
    const floor = options.guard ? options.floor : 0n;
    const args = [field, String(count), String(floor), String(raiseTo), layout];
    let reply: unknown;
    try {
      reply = await LAYOUT_RESERVE_SCRIPT.run(client, [key], args);
    } catch (err) {
      if (isReplyError(err) && isNoScripting(err)) {
        this.#scripting = false;
        throw noScripting();
      }
      throw err;
    }
    const [status, a, c, ttl] = Array.isArray(reply) ? reply.map(text) : [];
    if (status === "layout") throw otherLayout(a, layout, where);
    if (status === "plain") throw singleStoreCounter(a, where);
    if (status === "notint") {
      throw new KvIdError("reply", "the counter field does not hold an integer", {
        ...where,
        reason: "not-a-counter",
        cause: new Error(`found ${JSON.stringify(a)}`),
      });
    }
    const value = parseInteger(a);
    if (status !== "ok" || value === undefined || !value.exact) {
      throw new Error(`unexpected script reply ${String(reply)}`);
    }
    const ttlRemovedMs = Number(ttl ?? 0) || 0;
    return { ranges: [range(value.value, count)], raised: c === "1", layout, ttlRemovedMs };
  }

  /** Run the reserve script; undefined when the server has no scripting. */
  async #script(
    client: RedisClient,
    key: string,
    field: string,
    count: number,
    options: ReserveOptions,
  ): Promise<Reservation | undefined> {
    // A counter is never written past 2^63-1 (no client could increment it again): capped, the
    // increment overflows and the counter stays a valid integer.
    const raiseTo = options.raiseTo > MAX_ID ? MAX_ID : options.raiseTo;
    const args = [
      field,
      String(count),
      String(options.floor),
      String(raiseTo),
      options.loadStep === true ? stepField(field) : "",
      String(Math.max(count, options.maxCount ?? count)),
      options.pool === true ? poolField(field) : "",
    ];
    let reply: unknown;
    try {
      reply = await RESERVE_SCRIPT.run(client, [key], args);
    } catch (err) {
      if (isReplyError(err) && isNoScripting(err)) {
        this.#scripting = false;
        return undefined;
      }
      throw err;
    }
    if (!Array.isArray(reply) || reply.length < 3) {
      throw new Error(`unexpected script reply ${String(reply)}`);
    }
    // Lua's false arrives as null (RESP2) or false (RESP3): anything not an integer reads as none.
    const last = parseInteger(reply[0]);
    const pooledFirst = parseInteger(reply[3]);
    const used = parseInteger(reply[2]);
    if (last === undefined || !last.exact || used === undefined) {
      throw new Error(`unexpected script reply ${String(reply[0])}`);
    }
    const first = pooledFirst !== undefined && pooledFirst.exact
      ? pooledFirst.value
      : last.value - used.value + 1n;
    if (first > last.value) throw new Error(`unexpected script reply ${String(reply)}`);
    const remembered = parseInteger(reply[4])?.value;
    const step = remembered !== undefined && remembered > 0n &&
        remembered <= BigInt(Number.MAX_SAFE_INTEGER)
      ? Number(remembered)
      : undefined;
    const ttlRemovedMs = Number(String(reply[5] ?? 0)) || 0;
    return {
      ranges: [{ first, last: last.value }],
      raised: Number(reply[1]) === 1,
      step,
      ttlRemovedMs,
    };
  }

  /**
   * Give back every unused range of the caller; see {@linkcode Store.giveBack}. 0 without
   * scripting (a plain read then write could lower a counter another process just raised).
   */
  async giveBack(key: string, field: string, ranges: IdRange[]): Promise<number> {
    const valid = ranges.filter((r) => r.first >= 1n && r.last >= r.first);
    const top = valid.at(-1);
    if (!this.#scripting || top === undefined) return 0;
    const client = await resolveRedis(this.#source);
    const args = [
      field,
      poolField(field),
      String(top.last),
      String(top.first - 1n),
      ...valid.map((r) => `${r.first}-${r.last}`),
    ];
    try {
      return Number(await GIVE_BACK_SCRIPT.run(client, [key], args));
    } catch (err) {
      if (isReplyError(err) && isNoScripting(err)) {
        this.#scripting = false;
        return 0;
      }
      throw toKvIdError(err, key, field);
    }
  }
}

// Clients whose server answered that it has no WAITAOF (Redis < 7.2, Kvrocks): not asked again.
const withoutWaitAof = new WeakSet<RedisClient>();

/**
 * Confirm a reservation just made on `client` before any of its IDs is served: with
 * `options.waitAof` (and a server that has it), `WAITAOF 1 0 ms`: fsynced to the server's AOF;
 * then, with `replicas`, `WAIT replicas ms`: received by that many replicas. Throws when not
 * confirmed (the range is then spent, never handed out).
 *
 * Replicas are not asked to fsync (`WAITAOF 1 replicas`): a replica with `appendfsync
 * everysec` acknowledges its fsync with its once-a-second ACK, and a reservation then took
 * 1,020 ms (median of 50, Valkey 8.0 on loopback, 2026-12-01) instead of 0.9 ms with `WAIT`.
 */
export async function confirmReservation(
  client: RedisClient,
  key: string,
  field: string,
  options: Pick<ReserveOptions, "replicas" | "waitAof">,
  ms: number,
): Promise<void> {
  const replicas = options.replicas ?? 0;
  const started = performance.now();
  if (options.waitAof === true) await waitForAof(client, key, field, ms);
  if (replicas > 0) {
    const left = Math.max(1, Math.floor(ms - (performance.now() - started)));
    await waitForReplicas(client, key, field, replicas, left);
  }
}

/**
 * `WAITAOF 1 0 ms` right after a reservation on the same connection: resolves true once the
 * server fsynced it to its AOF, false when it cannot be asked (a server without `WAITAOF`,
 * remembered for the client; a client without `sendCommand`), else throws: the range is then
 * spent.
 */
export async function waitForAof(
  client: RedisClient,
  key: string,
  field: string,
  ms: number,
): Promise<boolean> {
  if (withoutWaitAof.has(client)) return false;
  // The first WAITAOF on a client finds out whether the server has it; reservations made
  // meanwhile wait for that answer rather than each sending one (10,000 new names at once on
  // Redis 7.0 sent 10,000 WAITAOF that all failed).
  const probe = aofProbes.get(client);
  if (probe !== undefined) {
    await probe.catch(() => {});
    if (withoutWaitAof.has(client)) return false;
  } else if (!aofKnown.has(client)) {
    const sent = sendWaitAof(client, key, field, ms);
    aofProbes.set(client, sent);
    try {
      return await sent;
    } finally {
      aofProbes.delete(client);
    }
  }
  return await sendWaitAof(client, key, field, ms);
}

// A client's first WAITAOF, in flight: the others wait for what it finds.
const aofProbes = new WeakMap<RedisClient, Promise<boolean>>();
// Clients whose server answered WAITAOF once (it has the command).
const aofKnown = new WeakSet<RedisClient>();

async function sendWaitAof(
  client: RedisClient,
  key: string,
  field: string,
  ms: number,
): Promise<boolean> {
  const where = { key, field };
  let reply: unknown;
  try {
    if (typeof client.waitAof === "function") {
      reply = await client.waitAof(key, 1, 0, ms);
    } else if (typeof client.sendCommand === "function") {
      reply = await client.sendCommand("WAITAOF", ["1", "0", String(ms)]);
    } else {
      return false;
    }
  } catch (cause) {
    const message = errorMessage(cause);
    if (isReplyError(cause) && /unknown command|not supported|unknown subcommand/i.test(message)) {
      withoutWaitAof.add(client);
      return false;
    }
    if (isReplyError(cause) && /(^|: )NOPERM/.test(message)) {
      throw new KvIdError(
        "config",
        `the user may not run WAITAOF, which confirms each reservation is on disk: allow it (ACL +waitaof), or set waitAof: false: ${message}`,
        { ...where, cause },
      );
    }
    if (/appendonly is disabled/i.test(message)) {
      throw new KvIdError(
        "config",
        `the server keeps no AOF (appendonly no), so WAITAOF cannot confirm the reservation is on disk and its IDs are spent: turn AOF on (CONFIG SET appendonly yes, and appendonly yes in the config file), or set waitAof: false to accept that a crash can lose reservations: ${message}`,
        { ...where, cause },
      );
    }
    if (/replica instances|UNBLOCKED/i.test(message)) {
      throw new KvIdError(
        "connection",
        `the server became a replica before confirming the reservation; its IDs are spent: ${message}`,
        { ...where, cause },
      );
    }
    throw toKvIdError(cause, key, field);
  }
  const counts = Array.isArray(reply) ? reply.map(parseInteger) : [];
  const local = counts[0];
  if (counts.length !== 2 || local === undefined) {
    throw new KvIdError(
      "reply",
      `WAITAOF did not reply with two integers: ${String(reply)}`,
      where,
    );
  }
  aofKnown.add(client);
  if (local.value < 1n) {
    throw new KvIdError(
      "timeout",
      `the server did not fsync the reservation to its AOF within ${ms} ms; its IDs are spent`,
      where,
    );
  }
  return true;
}

/**
 * `WAIT replicas ms` right after a reservation on the same connection: resolves once at least
 * `replicas` replicas acknowledged it, else throws (the range is then spent, never handed out).
 */
export async function waitForReplicas(
  client: RedisClient,
  key: string,
  field: string,
  replicas: number,
  ms: number,
): Promise<void> {
  const where = { key, field };
  let reply: unknown;
  try {
    if (typeof client.waitReplicas === "function") {
      reply = await client.waitReplicas(key, replicas, ms);
    } else if (typeof client.sendCommand === "function") {
      reply = await client.sendCommand("WAIT", [String(replicas), String(ms)]);
    } else {
      throw new KvIdError(
        "config",
        "the replicas option needs a client with waitReplicas() or sendCommand() to send WAIT",
        where,
      );
    }
  } catch (cause) {
    if (cause instanceof KvIdError) throw cause;
    if (
      isReplyError(cause) &&
      /unknown command|not supported|unknown subcommand/i.test(errorMessage(cause))
    ) {
      throw new KvIdError(
        "config",
        `the server has no WAIT command, which the replicas option needs (Redis >= 3, Kvrocks >= 2.13): ${
          errorMessage(cause)
        }`,
        { ...where, cause },
      );
    }
    if (/replica instances|UNBLOCKED/i.test(errorMessage(cause))) {
      // Demoted while (or just before) waiting: a failover, transient; the range is spent.
      throw new KvIdError(
        "connection",
        `the server became a replica before confirming the reservation; its IDs are spent: ${
          errorMessage(cause)
        }`,
        { ...where, cause },
      );
    }
    throw toKvIdError(cause, key, field);
  }
  const seen = parseInteger(reply);
  if (seen === undefined) {
    throw new KvIdError("reply", `WAIT did not reply with an integer: ${String(reply)}`, where);
  }
  if (seen.value < BigInt(replicas)) {
    throw new KvIdError(
      "timeout",
      `the reservation reached ${seen.value} of ${replicas} replicas within ${ms} ms; its IDs are spent`,
      where,
    );
  }
}

function text(value: unknown): string {
  if (value instanceof Uint8Array) return new TextDecoder().decode(value);
  return String(value);
}

/** The range a counter reply V stands for: V - count + 1 .. V. */
function range(last: bigint, count: number): IdRange {
  return { first: last - BigInt(count) + 1n, last };
}

/** An integer reply as a bigint, with whether it is exact (a number above 2^53 is not). */
function parseInteger(reply: unknown): { value: bigint; exact: boolean } | undefined {
  if (typeof reply === "bigint") return { value: reply, exact: true };
  if (typeof reply === "number") {
    if (!Number.isInteger(reply)) return undefined;
    return { value: BigInt(reply), exact: Number.isSafeInteger(reply) };
  }
  if (reply instanceof Uint8Array) reply = new TextDecoder().decode(reply);
  if (typeof reply === "string" && /^-?\d+$/.test(reply)) {
    return { value: BigInt(reply), exact: true };
  }
  return undefined;
}

/** Throw a TypeError unless `value` is a Redis client or a function. */
export function checkRedisSource(what: string, value: unknown): void {
  if (typeof value === "function") return;
  if (
    value === null || typeof value !== "object" ||
    typeof (value as { hincrby?: unknown }).hincrby !== "function" ||
    typeof (value as { eval?: unknown }).eval !== "function" ||
    typeof (value as { evalsha?: unknown }).evalsha !== "function"
  ) {
    throw new TypeError(
      `${what} must be a client with hincrby/eval/evalsha (wrap npm clients with fromNodeRedis or fromIoredis) or a function returning one, got ${
        describe(value)
      }`,
    );
  }
}
