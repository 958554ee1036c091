/**
 * `DailyId` cleanup on Redis: which `yyyymmdd` counters are old, deleting them in one script,
 * and the server's clock that bounds what "old" means (the Redis store's
 * `deleteDaysBefore()` and `now()`; the CLI too).
 *
 * @module
 */

import { MAX_EPOCH_MS, MIN_EPOCH_MS } from "../../contract/calendar_bounds.ts";
import { LAYOUT_FIELD_PREFIX } from "../interleaved/layout.ts";
import type { RedisClient } from "../../contract/redis_client.ts";
import { isNoScripting, LuaScript } from "./lua_script.ts";
import { toKvIdError } from "../../contract/store_errors.ts";
import { poolField } from "../../contract/store.ts";
import { describe } from "../../contract/validate.ts";

// Deletes the fields of KEYS[1] that are yyyymmdd dates before ARGV[1] (same length: compared as
// strings); other fields are left alone, and so is a date-named counter of interleaved servers
// (it has a layout field: a KvId's, not a day's). A deleted day's pool of given-back ranges
// (ARGV[3] then the day) goes with it. Returns how many were deleted.
const CLEANUP_SCRIPT = new LuaScript(`local n = 0
for _, f in ipairs(redis.call('HKEYS', KEYS[1])) do
  if #f == 8 and string.match(f, '^%d+$') and f < ARGV[1]
    and redis.call('HEXISTS', KEYS[1], ARGV[2] .. f) == 0 then
    redis.call('HDEL', KEYS[1], f, ARGV[3] .. f)
    n = n + 1
  end
end
return n`);

const DATE_FIELD = /^\d{8}$/;

/**
 * The fields among `fields` (all of one hash) that a cleanup deletes: `yyyymmdd` dates before
 * `before`, except a date-named counter of interleaved servers (its layout field is there too).
 */
export function oldDays(fields: readonly string[], before: string): string[] {
  const all = new Set(fields);
  return fields.filter((f) =>
    DATE_FIELD.test(f) && f < before && !all.has(LAYOUT_FIELD_PREFIX + f)
  );
}

/**
 * Delete the fields of hash `key` that are `yyyymmdd` dates before `before`, atomically (one
 * script). A server without scripting gets `HKEYS` then `HDEL` through `sendCommand`.
 * Resolves to how many were deleted.
 */
export async function deleteDaysBefore(
  client: RedisClient,
  key: string,
  before: string,
): Promise<number> {
  if (!DATE_FIELD.test(before)) throw new RangeError(`not a yyyymmdd day: ${describe(before)}`);
  const field = `<${before}`;
  try {
    let reply: unknown;
    try {
      reply = await CLEANUP_SCRIPT.run(client, [key], [
        before,
        LAYOUT_FIELD_PREFIX,
        poolField(""),
      ]);
    } catch (err) {
      if (!isNoScripting(err) || client.sendCommand === undefined) throw err;
      const fields = await client.sendCommand("HKEYS", [key]);
      const old = oldDays((Array.isArray(fields) ? fields : []).map(String), before);
      reply = old.length === 0 ? 0 : await client.sendCommand("HDEL", [key, ...old]);
    }
    const n = Number(reply);
    if (!Number.isSafeInteger(n)) throw new Error(`unexpected cleanup reply ${String(reply)}`);
    return n;
  } catch (err) {
    throw toKvIdError(err, key, field);
  }
}

const TIME_SCRIPT = new LuaScript("return redis.call('TIME')");

/**
 * The server's clock (`TIME`) in epoch ms: the one clock every process sharing a counter sees.
 * Sent through `sendCommand` when the client has it, else as a script.
 */
export async function serverNow(client: RedisClient): Promise<number> {
  const reply = client.sendCommand !== undefined
    ? await client.sendCommand("TIME", [])
    : await TIME_SCRIPT.run(client, [], []);
  const number = (x: unknown) =>
    Number(x instanceof Uint8Array ? new TextDecoder().decode(x) : String(x));
  const [seconds, micros] = Array.isArray(reply) ? reply.map(number) : [];
  const ms = seconds * 1000 + Math.floor(micros / 1000);
  if (!(ms >= MIN_EPOCH_MS && ms <= MAX_EPOCH_MS)) {
    throw new Error(`unexpected TIME reply ${String(reply)}`);
  }
  return ms;
}
