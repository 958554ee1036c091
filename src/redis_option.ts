/**
 * Turning a generator's `redis` option (a client, a factory, or a list of either for interleaved
 * servers) into a {@linkcode Store}: the one place that knows which store serves which option,
 * so the engine sees only the store contract.
 *
 * @module
 */

import { defaultRedis } from "./configure.ts";
import { KvIdError } from "./errors.ts";
import { InterleavedStore, MAX_MEMBERS } from "./stores/interleaved/interleaved_store.ts";
import { checkRedisSource, type RedisSource, RedisStore } from "./redis_store.ts";
import type { Store } from "./store_contract.ts";

/** Throw a TypeError or RangeError unless `value` is a valid `redis` option of `who`. */
export function checkRedisOption(who: string, value: unknown): void {
  if (Array.isArray(value)) {
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

/** What {@linkcode storeForRedis} needs besides the option. */
export interface RedisStoreContext {
  /** The counter's hash, named in the error when no client is configured. */
  key: string;
  /** The counter's name, named in that error too. */
  field: string;
  /** IDs per block on interleaved servers. */
  block?: number;
  /** The generator's timeout in ms, bounding an interleaved `WAIT`. */
  timeout: number;
}

/**
 * The store for a `redis` option, or for {@linkcode configure}'s default when it is undefined;
 * a `config` error when there is neither.
 */
export function storeForRedis(
  redis: RedisSource | RedisSource[] | undefined,
  context: RedisStoreContext,
): Store {
  const source = redis ?? defaultRedis();
  if (source === undefined) {
    throw new KvIdError(
      "config",
      "no Redis client: pass { redis } to new KvId() or call configure({ redis })",
      { key: context.key, field: context.field },
    );
  }
  if (Array.isArray(source)) {
    // One RedisStore per client, shared: the set's members are the same stores a generator on
    // one of the servers alone would use, and what one set learns of a member's health, all do.
    return new InterleavedStore(source.map(storeFor), {
      block: context.block,
      timeout: context.timeout,
    });
  }
  return storeFor(source);
}

const stores = new WeakMap<object, Store>();
/** One store per client, so generators sharing a client share what it learned. */
function storeFor(redis: RedisSource): Store {
  let store = stores.get(redis);
  if (store === undefined) stores.set(redis, store = new RedisStore(redis));
  return store;
}
