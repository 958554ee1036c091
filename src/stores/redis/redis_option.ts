/**
 * Turning a generator's `redis` option (a client, a factory, or a list of either for interleaved
 * servers) into a {@linkcode Store}: the one place that knows which store serves which option.
 * Loading this module installs it as the runtime's store source (`src/runtime/store_source.ts`),
 * so the engine sees only the store contract; `mod.ts` loads it.
 *
 * @module
 */

import { defaultRedis } from "./configure.ts";
import { installStoreSource, type StoreSourceContext } from "../../runtime/store_source.ts";
import { InterleavedStore, MAX_MEMBERS } from "../interleaved/interleaved_store.ts";
import { checkRedisSource } from "./client_source.ts";
import type { RedisSource } from "../../contract/redis_client.ts";
import { RedisStore } from "./redis_store.ts";
import type { Store } from "../../contract/store.ts";

/** Throw a TypeError or RangeError unless `value` is a valid `redis` option of `who`. */
export function checkRedisOption(
  who: string,
  value: unknown,
  options: { list?: boolean } = { list: true },
): void {
  if (Array.isArray(value) && options.list !== false) {
    if (value.length === 0 || value.length > MAX_MEMBERS) {
      throw new RangeError(`${who} option redis must list 1 to ${MAX_MEMBERS} servers`);
    }
    value.forEach((r, i) => checkRedisSource(`${who} option redis[${i}]`, r));
    if (new Set(value).size !== value.length) {
      throw new TypeError(`${who} option redis lists the same client twice`);
    }
  } else if (value !== undefined) {
    checkRedisSource(`${who} option redis`, value);
  }
}

/**
 * The store for a `redis` option, or for {@linkcode configure}'s default when it is undefined;
 * undefined when there is neither.
 */
export function storeForRedis(
  redis: RedisSource | RedisSource[] | undefined,
  context: StoreSourceContext,
): Store | undefined {
  const source = redis ?? defaultRedis();
  if (source === undefined) return undefined;
  if (Array.isArray(source)) {
    // One RedisStore per client, shared: the set's members are the same stores a generator on
    // one of the servers alone would use, and what one set learns of a member's health, all do.
    // The generator's `block` and `timeout` options are the set's.
    const { block, timeout } = context.options;
    return new InterleavedStore(source.map(storeFor), {
      block: typeof block === "number" ? block : undefined,
      timeout: typeof timeout === "number" ? timeout : undefined,
    });
  }
  return storeFor(source);
}

installStoreSource({
  check: checkRedisOption,
  store: (value, context) =>
    storeForRedis(value as RedisSource | RedisSource[] | undefined, context),
});

const stores = new WeakMap<object, Store>();
/** One store per client, so generators sharing a client share what it learned. */
function storeFor(redis: RedisSource): Store {
  let store = stores.get(redis);
  if (store === undefined) stores.set(redis, store = new RedisStore(redis));
  return store;
}
