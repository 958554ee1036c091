/**
 * The options of the service's `createHandler`: its store, tokens and caps. Their own
 * file, so that the handler and the reading of the environment both import them.
 *
 * @module
 */

import type { RedisSource } from "../redis_store.ts";
import type { Store } from "../store_contract.ts";
import type { DurabilityMode } from "../durability.ts";

/**
 * Options of {@linkcode createHandler}: where IDs come from, who may ask for them, and caps.
 *
 * @example Deno KV in memory, two tokens
 * ```ts
 * import { createHandler, type ServiceOptions } from "@kvid/core/server";
 * import { DenoKvStore } from "@kvid/core/deno-kv";
 * import assert from "node:assert/strict";
 *
 * using store = new DenoKvStore(":memory:");
 * const options: ServiceOptions = {
 *   store,
 *   tokens: "orders-secret-0123456789:order|invoice,admin-secret-0123456789:*",
 *   log: () => {},
 * };
 * await using service = createHandler(options);
 * const res = await service.fetch(new Request("http://localhost/v1/ids/user", {
 *   method: "POST",
 *   headers: { authorization: "Bearer orders-secret-0123456789" },
 * }));
 * assert.ok(res.status === 403); // "user" is outside that token's names
 * await res.body?.cancel();
 * ```
 */
export interface ServiceOptions {
  /** A Redis client (or a factory of it), e.g. `fromNodeRedis(client)`. Or give `store`. */
  redis?: RedisSource;
  /** Any store instead of `redis`, e.g. a `DenoKvStore`. */
  store?: Store;
  /**
   * Answers when the store answers, rejects (or takes over a second) when not: `GET /readyz`.
   * Default: `PING` with `redis`; with `store`, whether no generator's last reservation failed.
   */
  ready?: () => Promise<unknown>;
  /** How the store is named on the status page and in the log. Default `"redis"` or `"store"`. */
  storeLabel?: string;
  /**
   * The tokens, `"<token>:<names>,<token>:<names>"`, names `*` or `a|b|c`; each token
   * 16 to 1,024 printable ASCII characters. Required unless `auth` is `"none"`.
   */
  tokens?: string;
  /** `"none"`: no token needed by anyone (logged loudly). Default `"token"`. */
  auth?: "token" | "none";
  /** The IANA time zone of `/v1/daily` serials. Default `"UTC"`. */
  timeZone?: string;
  /** At most this many live generators (a new name past it answers 429). Default 1,000. */
  maxGenerators?: number;
  /** A generator unused this long (ms) may be closed to make room for a new name. Default 60,000. */
  idleMs?: number;
  /** The generators' `timeout`: how long a request waits for a reservation (ms). Default 5,000. */
  timeout?: number;
  /**
   * The generators' `durability` (env `KVID_DURABILITY`): `"strict"` refuses a store that can
   * lose reservations (no AOF: requests get 500 `config` naming the fix, `/readyz` 503);
   * `"best-effort"` serves from it.
   *
   * @default {"strict"}
   */
  durability?: DurabilityMode;
  /** Where the service logs (start-up, failures; never a token). Default `console.error`. */
  log?: (line: string) => void;
}
