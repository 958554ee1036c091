/**
 * What a {@linkcode DenoKvStore} is given: where its database comes from, its options with their
 * defaults ({@linkcode DENO_KV_DEFAULTS}) and their check, and the counters it reports.
 *
 * @module
 */

import { isKeyPart } from "./deno_kv_layout.ts";

/**
 * Where a {@linkcode DenoKvStore} gets its database: an open `Deno.Kv` (yours to close), a path
 * for `Deno.openKv(path)` (`":memory:"` for a throwaway one), or a function returning a
 * `Deno.Kv` (sync or async). A path or a function is opened on the first reservation.
 *
 * @example The three kinds of source
 * ```ts
 * import { type DenoKvSource, DenoKvStore } from "@kvid/core/deno-kv";
 * import assert from "node:assert/strict";
 *
 * using kv = await Deno.openKv(":memory:"); // an open Deno.Kv stays yours to close
 * const sources: DenoKvSource[] = [kv, ":memory:", () => Deno.openKv(":memory:")];
 * for (const source of sources) {
 *   using store = new DenoKvStore(source); // a path or a function: opened and closed by the store
 *   const options = { floor: 0n, raiseTo: 0n, guard: true, exact: true };
 *   const { ranges } = await store.reserve("kvid", "order", 5, options);
 *   assert.ok(ranges[0].first === 1n && ranges[0].last === 5n);
 * }
 * ```
 */
export type DenoKvSource = Deno.Kv | string | (() => Deno.Kv | Promise<Deno.Kv>);

/**
 * Options of {@linkcode DenoKvStore}.
 *
 * @example Counters under a prefix in a shared database
 * ```ts
 * import { KvId } from "@kvid/core";
 * import { DenoKvStore, type DenoKvStoreOptions } from "@kvid/core/deno-kv";
 * import assert from "node:assert/strict";
 *
 * using kv = await Deno.openKv(":memory:");
 * const options: DenoKvStoreOptions = { prefix: ["shop", "ids"], maxAttempts: 8 };
 * using store = new DenoKvStore(kv, options);
 * await using ORDER_ID = new KvId("order", { store, minStep: 10 });
 * assert.ok(await ORDER_ID.next() === 1);
 * const entry = await kv.get<Deno.KvU64>(["shop", "ids", "kvid", "order"]);
 * assert.ok(entry.value?.value === 10n); // one reservation of 10 IDs
 * ```
 */
export interface DenoKvStoreOptions {
  /**
   * KV key parts put before `[key, name]`, to keep the counters apart from other data in a
   * shared database. With none, the counter of `new KvId("order")` is `["kvid", "order"]`.
   *
   * @default {[]}
   */
  prefix?: Deno.KvKey;
  /**
   * How many check-and-set attempts one reservation makes before it gives up (a transient
   * `"conflict"` {@linkcode KvIdError} the generator retries after its backoff).
   *
   * @default {32}
   */
  maxAttempts?: number;
  /**
   * The longest pause between two attempts, in ms; pauses are jittered.
   *
   * @default {50}
   */
  maxBackoff?: number;
}

/**
 * Counters of a {@linkcode DenoKvStore}, from {@linkcode DenoKvStore.stats}.
 *
 * @example After one uncontended reservation
 * ```ts
 * import { DenoKvStore, type DenoKvStoreStats } from "@kvid/core/deno-kv";
 * import assert from "node:assert/strict";
 *
 * using store = new DenoKvStore(":memory:");
 * await store.reserve("kvid", "order", 100, { floor: 0n, raiseTo: 0n, guard: true, exact: true });
 * const stats: DenoKvStoreStats = store.stats();
 * assert.ok(stats.reservations === 1 && stats.conflicts === 0 && stats.maxAttempts === 1);
 * ```
 */
export interface DenoKvStoreStats {
  /** Reservations committed. */
  reservations: number;
  /** Attempts that lost the check-and-set to another writer and were retried. */
  conflicts: number;
  /**
   * Attempts that found the database locked by another process (SQLite busy on a shared local
   * file) and were retried like a conflict.
   */
  busy: number;
  /** The most attempts one committed reservation needed (1 when never contended). */
  maxAttempts: number;
  /** Reservations that gave up after `maxAttempts` conflicting attempts. */
  exhausted: number;
  /** Counters found below the caller's floor and raised (rollback guard). */
  raised: number;
}

/** The defaults of {@linkcode DenoKvStoreOptions}, named by each option's `@default`. */
export const DENO_KV_DEFAULTS: Readonly<{
  prefix: Deno.KvKey;
  maxAttempts: number;
  maxBackoff: number;
}> = Object.freeze({ prefix: Object.freeze([]), maxAttempts: 32, maxBackoff: 50 });

/**
 * The options of a {@linkcode DenoKvStore}, checked, with the defaults applied.
 *
 * @throws {TypeError} A source that is not a Deno.Kv, a path or a function; a prefix that is
 *   not an array of KV key parts.
 * @throws {RangeError} `maxAttempts` or `maxBackoff` out of range.
 */
export function denoKvConfig(
  source: unknown,
  options: DenoKvStoreOptions,
): { prefix: Deno.KvKey; maxAttempts: number; maxBackoff: number } {
  if (
    source !== undefined && typeof source !== "string" && typeof source !== "function" &&
    typeof (source as Partial<Deno.Kv> | null)?.atomic !== "function"
  ) {
    throw new TypeError(
      "DenoKvStore takes a Deno.Kv, a path for Deno.openKv, or a function returning a Deno.Kv",
    );
  }
  const prefix = options.prefix ?? DENO_KV_DEFAULTS.prefix;
  if (!Array.isArray(prefix) || !prefix.every(isKeyPart)) {
    throw new TypeError(
      "DenoKvStore option prefix must be an array of KV key parts (string, number, bigint, boolean, Uint8Array)",
    );
  }
  const maxAttempts = options.maxAttempts ?? DENO_KV_DEFAULTS.maxAttempts;
  if (!Number.isInteger(maxAttempts) || maxAttempts < 1 || maxAttempts > 10_000) {
    throw new RangeError(
      `DenoKvStore option maxAttempts must be an integer from 1 to 10000, got ${maxAttempts}`,
    );
  }
  const maxBackoff = options.maxBackoff ?? DENO_KV_DEFAULTS.maxBackoff;
  if (typeof maxBackoff !== "number" || !(maxBackoff >= 0 && maxBackoff <= 60_000)) {
    throw new RangeError(
      `DenoKvStore option maxBackoff must be a number from 0 to 60000, got ${maxBackoff}`,
    );
  }
  return { prefix: [...prefix], maxAttempts, maxBackoff };
}
