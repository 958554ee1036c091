/**
 * Reading a Redis hash's counters ({@linkcode readCounters}, the Redis store's
 * `CounterListing.counters`): one script that lists the counter fields with their values as
 * strings (exact above 2^53: Lua would round numbers through doubles) and each one's interleaved
 * layout, leaving out the library's own fields (their names begin with NUL: the remembered
 * step, the layout, the pool).
 *
 * @module
 */

import { KvIdError } from "../../contract/errors.ts";
import type { RedisClient } from "../../contract/redis_client.ts";
import type { CountersOptions, CounterValue } from "../../contract/store.ts";
import { isReplyError, toKvIdError } from "../../contract/store_errors.ts";
import { LAYOUT_FIELD_PREFIX } from "../interleaved/layout.ts";
import { isNoScripting, LuaScript } from "./lua_script.ts";

// ARGV[1] 'all': every field of KEYS[1]; 'names': the fields ARGV[2..]. Replies a flat list of
// name, value, layout ('' for none), values as the strings Redis holds. A field whose name
// begins with NUL is the library's own, never a counter.
const COUNTERS_SCRIPT = new LuaScript(`local out = {}
local function add(f, v, layout)
  if v and string.byte(f, 1) ~= 0 then
    out[#out + 1] = f
    out[#out + 1] = v
    out[#out + 1] = layout or ''
  end
end
if ARGV[1] == 'all' then
  local all = redis.call('HGETALL', KEYS[1])
  local h = {}
  for i = 1, #all, 2 do h[all[i]] = all[i + 1] end
  for i = 1, #all, 2 do add(all[i], all[i + 1], h['\\0layout:' .. all[i]]) end
else
  for i = 2, #ARGV do
    local got = redis.call('HMGET', KEYS[1], ARGV[i], '\\0layout:' .. ARGV[i])
    add(ARGV[i], got[1], got[2])
  end
end
return out`);

const COUNTER = /^(0|[1-9]\d*)$/;

/**
 * The counters of hash `key` on `client`, as `CounterListing.counters` describes: one script
 * (`HGETALL`, or `HMGET` of the names asked for); a server without scripting gets `HGETALL`
 * through `sendCommand`.
 *
 * @example On a stand-in client whose script replies name, value, layout
 * ```ts
 * import { readCounters } from "./counters.ts";
 * import assert from "node:assert/strict";
 *
 * const reply = ["order", "9007199254740993", "", "inter", "3", "v1 servers=2 block=10 index=0"];
 * const fail = () => Promise.reject(new Error("not in this example"));
 * const client = { hincrby: fail, evalsha: fail, eval: () => Promise.resolve(reply) };
 * const counters = await readCounters(client, "kvid");
 * assert.ok(counters.get("order")?.value === 9_007_199_254_740_993n);
 * assert.ok(counters.get("inter")?.layout === "v1 servers=2 block=10 index=0");
 * ```
 *
 * @param client The server's client.
 * @param key The hash.
 * @param options `names`: only these counters.
 * @returns The counters that exist, by name.
 * @throws {KvIdError} `"reply"` (reason `"not-a-counter"`) for a field holding no
 *   non-negative integer; the failures of a reservation, classified alike.
 */
export async function readCounters(
  client: RedisClient,
  key: string,
  options: CountersOptions = {},
): Promise<Map<string, CounterValue>> {
  const names = options.names;
  let flat: string[];
  try {
    flat = await listed(client, key, names);
  } catch (err) {
    throw toKvIdError(err, key, names?.length === 1 ? names[0] : "");
  }
  const counters = new Map<string, CounterValue>();
  for (let i = 0; i + 2 < flat.length; i += 3) {
    const [name, value, layout] = [flat[i], flat[i + 1], flat[i + 2]];
    if (!COUNTER.test(value) || value.length > 19 || BigInt(value) >= 1n << 63n) {
      throw new KvIdError("reply", "the counter field does not hold a non-negative integer", {
        key,
        field: name,
        reason: "not-a-counter",
        cause: new Error(`found ${JSON.stringify(value)}`),
      });
    }
    counters.set(name, layout === "" ? { value: BigInt(value) } : { value: BigInt(value), layout });
  }
  return counters;
}

/** The script's flat reply as strings; without scripting, the same from `HGETALL`. */
async function listed(
  client: RedisClient,
  key: string,
  names: readonly string[] | undefined,
): Promise<string[]> {
  const args = names === undefined ? ["all"] : ["names", ...names];
  try {
    const reply = await COUNTERS_SCRIPT.run(client, [key], args);
    return Array.isArray(reply) ? reply.map(text) : [];
  } catch (err) {
    if (!(isReplyError(err) && isNoScripting(err)) || client.sendCommand === undefined) throw err;
  }
  const reply = await client.sendCommand("HGETALL", [key]);
  const pairs: [string, string][] = Array.isArray(reply)
    ? Array.from(
      { length: reply.length >> 1 },
      (_, i) => [text(reply[2 * i]), text(reply[2 * i + 1])],
    )
    : Object.entries(reply as Record<string, unknown>).map(([f, v]) => [f, text(v)]);
  const all = new Map(pairs);
  const wanted = names === undefined ? [...all.keys()] : names;
  return wanted.flatMap((f) => {
    const value = all.get(f);
    if (value === undefined || f.startsWith("\0")) return [];
    return [f, value, all.get(LAYOUT_FIELD_PREFIX + f) ?? ""];
  });
}

function text(reply: unknown): string {
  return reply instanceof Uint8Array ? new TextDecoder().decode(reply) : String(reply);
}
