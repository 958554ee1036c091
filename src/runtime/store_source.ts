/**
 * The seam through which a generator's `redis` option (or the process-wide default set by
 * `configure()`) becomes a {@linkcode Store}, without the engine naming a store module: the Redis
 * store installs its resolver when `jsr:@kvid/core` is loaded (`src/stores/redis/redis_option.ts`).
 * A generator given `store` never asks it.
 *
 * @module
 */

import { KvIdError } from "../contract/errors.ts";
import type { GeneratorOptions, Store } from "../contract/store.ts";

/** What a resolver needs besides the option's value. */
export interface StoreSourceContext {
  /** The counter's hash, named in the error when no client is configured. */
  key: string;
  /** The counter's name (or the field an error names), named in that error too. */
  field: string;
  /** Who asks, named in the error: `"KvId"` or `"DailyId"`. */
  who: string;
  /**
   * The asker's options, checked, by name: the resolver reads those of the store it makes (the
   * Redis store's: `block` for interleaved servers, `timeout`).
   */
  options: GeneratorOptions;
}

/** Turns a `redis` option into a store; the Redis store module installs the one there is. */
export interface StoreSourceResolver {
  /** Throw a TypeError or RangeError unless `value` is a valid `redis` option of `who`. */
  check(who: string, value: unknown, options?: { list?: boolean }): void;
  /**
   * The store for `value`, or for the configured default when `value` is undefined; undefined
   * when there is neither.
   */
  store(value: unknown, context: StoreSourceContext): Store | undefined;
}

let installed: StoreSourceResolver | undefined;

/** Install the resolver of the `redis` option (the Redis store module does, once). */
export function installStoreSource(resolver: StoreSourceResolver): void {
  installed = resolver;
}

/**
 * Check a `redis` option of `who`: the installed resolver's check, or a TypeError naming the
 * missing module when a value is given and nothing can resolve it.
 *
 * @throws {TypeError} The value is not a client, a factory or (where `list` is allowed) a list.
 * @throws {RangeError} A list of the wrong length.
 */
export function checkStoreSource(who: string, value: unknown, options?: { list?: boolean }): void {
  if (installed !== undefined) installed.check(who, value, options);
  else if (value !== undefined) {
    throw new TypeError(`${who} option redis needs the Redis store: import "jsr:@kvid/core"`);
  }
}

/**
 * The store for a `redis` option (undefined: the configured default).
 *
 * @throws {KvIdError} `config` when there is no client and no default.
 */
export function storeFromSource(value: unknown, context: StoreSourceContext): Store {
  const store = installed?.store(value, context);
  if (store !== undefined) return store;
  throw new KvIdError(
    "config",
    `no Redis client: pass { redis } to new ${context.who}() or call configure({ redis })`,
    { key: context.key, field: context.field },
  );
}
