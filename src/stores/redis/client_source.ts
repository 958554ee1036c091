/**
 * A generator's `redis` option as a client: a factory called once and its client shared
 * ({@linkcode resolveRedis}), and the check of the option's shape ({@linkcode checkRedisSource}).
 *
 * @module
 */

import { describe } from "../../contract/validate.ts";
import { own } from "../../runtime/shutdown.ts";
import type { RedisClient, RedisSource } from "../../contract/redis_client.ts";

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
