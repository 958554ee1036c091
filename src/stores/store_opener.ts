/**
 * What a store's folder provides to be opened from a URL (its `url.ts`): apart from
 * `store_url.ts`, which lists the openers, so an opener and the list do not import each other.
 *
 * @module
 */

import type { AnyStore } from "../contract/store.ts";

/** What a store opened from its URL gives: the store, its readiness probe, how to close it. */
export interface OpenedStore {
  /** The store. */
  store: AnyStore;
  /** Resolves when the server answers (the service's `/readyz`). */
  ping(): Promise<void>;
  /** Close what the opener connected. */
  close(): Promise<void>;
}

/**
 * How the stores of one kind open from a URL: what each store's folder provides (its `url.ts`)
 * and `STORE_URLS` (`store_url.ts`) lists.
 */
export interface StoreOpener<K extends string = string> {
  /** The kind, e.g. `"postgres"`: what `storeKind()` returns. */
  readonly kind: K;
  /** The URL schemes, with their colon: `["postgres:", "postgresql:"]`. */
  readonly schemes: readonly string[];
  /**
   * Import the store and its driver (only now: a user of another scheme never loads them) and
   * connect within `timeout` ms. Left out by Redis, whose URL the caller opens with its own
   * client (which also sends hash commands the contract has no call for: `SCAN`, a script).
   */
  open?(url: string, options: { timeout: number }): Promise<OpenedStore>;
  /**
   * The optional methods of {@linkcode Store} beyond those every URL store is seen through
   * (`reserve`, `release`, `loadStep`, `saveStep`, `deleteDaysBefore`, `durability`, `now`)
   * that the opened store has: the lazy store forwards them too.
   *
   * @default {undefined}
   */
  readonly also?: { giveBack?: boolean; reservesStep?: boolean; counters?: boolean };
}
