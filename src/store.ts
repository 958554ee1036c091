/**
 * For store authors: the interface a backend implements ({@linkcode Store}), what a reservation
 * takes and returns, and the interleaving store for several independent servers. Applications
 * need none of it: `jsr:@kvid/core` has the generators, and `jsr:@kvid/core/deno-kv` the Deno
 * KV backend.
 *
 * @example An in-memory store, for tests
 * ```ts
 * import { KvId } from "@kvid/core";
 * import type { Store } from "@kvid/core/store";
 * import assert from "node:assert/strict";
 *
 * let counter = 0n;
 * const memory: Store = {
 *   reserve(_key, _field, count) {
 *     counter += BigInt(count);
 *     return Promise.resolve({ ranges: [{ first: counter - BigInt(count) + 1n, last: counter }], raised: false });
 *   },
 * };
 * await using ORDER_ID = new KvId("order", { store: memory });
 * assert.ok(await ORDER_ID.next() === 1);
 * ```
 *
 * @module
 */

export { InterleavedStore, type InterleavedStoreOptions } from "./interleaved_store.ts";
export {
  type IdRange,
  type Reservation,
  type ReserveOptions,
  stepField,
  type Store,
} from "./store_contract.ts";
