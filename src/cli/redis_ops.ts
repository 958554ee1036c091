/**
 * The Redis commands the CLI sends on `redis://` URLs besides the Store contract's: reading the
 * hash as it is (`get`, `list`, `daily`, `cleanup`, `next`'s check that the counter exists),
 * finding the daily serials (`list`), `floor`'s script. Their failures are {@linkcode KvIdError}s, classified as a reservation's
 * are (`toKvIdError`), so the CLI branches on codes, never on the server's words.
 *
 * @module
 */

import type { RedisClient } from "../contract/redis_client.ts";
import { toKvIdError } from "../contract/store_errors.ts";

/** The hash commands the CLI sends, on the node-redis client of `--url`. */
export interface NodeRedisHashes {
  /** `HGET`. */
  hGet(key: string, field: string): Promise<unknown>;
  /** `HGETALL`. */
  hGetAll(key: string): Promise<unknown>;
}

/** What the CLI sends to Redis directly. */
export interface RedisOps {
  /** `HGET key field`: the value, or null. */
  hGet(key: string, field: string): Promise<string | null>;
  /** `HGETALL key`: every field; `{}` for a key that does not exist. */
  hGetAll(key: string): Promise<Record<string, string>>;
  /** Every key matching `pattern` (`SCAN ... MATCH`), in no order. */
  scan(pattern: string): Promise<string[]>;
  /** `EVAL source` (one-shot: no `EVALSHA` first). */
  eval(source: string, keys: string[], args: string[]): Promise<unknown>;
}

/**
 * The CLI's Redis commands on `hashes` (the node-redis client) and `client` (its adapter).
 *
 * @example On a stand-in client
 * ```ts
 * import { redisOps } from "./redis_ops.ts";
 * import assert from "node:assert/strict";
 *
 * const hash: Record<string, string> = { order: "42" };
 * const hashes = {
 *   hGet: (_key: string, field: string) => Promise.resolve(hash[field] ?? null),
 *   hGetAll: () => Promise.resolve(hash),
 * };
 * const fail = () => Promise.reject(new Error("not in this example"));
 * const ops = redisOps(hashes, { hincrby: fail, eval: fail, evalsha: fail });
 * assert.ok(await ops.hGet("kvid", "order") === "42" && await ops.hGet("kvid", "x") === null);
 * await assert.rejects(ops.eval("return 1", ["kvid"], []), { name: "KvIdError" });
 * ```
 *
 * @param hashes The node-redis client.
 * @param client The same client, adapted (`fromNodeRedis`): scripts and raw commands.
 * @returns The commands; each rejects with a {@linkcode KvIdError}.
 */
export function redisOps(hashes: NodeRedisHashes, client: RedisClient): RedisOps {
  const mapped = <T>(work: () => Promise<T>, key: string, field: string): Promise<T> =>
    work().catch((err) => {
      throw toKvIdError(err, key, field);
    });
  return {
    hGet: (key, field) =>
      mapped(
        async () => {
          const value = await hashes.hGet(key, field);
          return value === null || value === undefined ? null : String(value);
        },
        key,
        field,
      ),
    hGetAll: (key) =>
      mapped(
        async () => {
          const all = await hashes.hGetAll(key) as Record<string, unknown>;
          const strings: Record<string, string> = {};
          for (const [f, v] of Object.entries(all)) strings[f] = String(v);
          return strings;
        },
        key,
        "",
      ),
    scan: (pattern) =>
      mapped(
        async () => {
          if (client.sendCommand === undefined) return [];
          const keys = new Set<string>();
          let cursor = "0";
          do {
            const reply = await client.sendCommand("SCAN", [
              cursor,
              "MATCH",
              pattern,
              "COUNT",
              "1000",
            ]) as [unknown, unknown[]];
            cursor = String(reply[0]);
            for (const k of reply[1]) keys.add(String(k));
          } while (cursor !== "0");
          return [...keys];
        },
        pattern,
        "",
      ),
    eval: (source, keys, args) => mapped(() => client.eval(source, keys, args), keys[0], args[0]),
  };
}
