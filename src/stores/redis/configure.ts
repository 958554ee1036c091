/**
 * The process-wide default Redis client.
 *
 * @module
 */

import { checkRedisSource } from "./client_source.ts";
import type { RedisSource } from "../../contract/redis_client.ts";

/**
 * What {@linkcode configure} sets.
 *
 * @example Set a default, then clear it
 * ```ts
 * import { configure, type KvIdDefaults, type RedisClient } from "@kvid/core";
 *
 * const connect = (): Promise<RedisClient> => Promise.reject(new Error("not in this example"));
 * const defaults: KvIdDefaults = { redis: connect };
 * configure(defaults);
 * configure({ redis: undefined }); // a key set to undefined clears it
 * ```
 */
export interface KvIdDefaults {
  /**
   * The client (or a factory of it) used by generators created without a `redis` option;
   * undefined: none, so such a generator fails with `config` on its first reservation.
   *
   * @default {undefined}
   */
  redis?: RedisSource;
}

const defaults: KvIdDefaults = {};

/**
 * Set the process-wide default Redis client, so `new KvId(name)` needs none. Generators read it
 * when they make their first reservation, so it may be called after they are declared.
 *
 * @example Configure once at start-up
 * ```ts
 * import { configure, type RedisClient } from "@kvid/core";
 *
 * const connect = (): Promise<RedisClient> => Promise.reject(new Error("not in this example"));
 * configure({ redis: connect }); // called on the first reservation of any generator
 * ```
 *
 * @param options The defaults; a key set to `undefined` clears it.
 */
export function configure(options: KvIdDefaults): void {
  if (options === null || typeof options !== "object") {
    throw new TypeError("configure() takes an options object");
  }
  if (options.redis !== undefined) checkRedisSource("configure() option redis", options.redis);
  if ("redis" in options) defaults.redis = options.redis;
}

/** The current default client, if any. */
export function defaultRedis(): RedisSource | undefined {
  return defaults.redis;
}
