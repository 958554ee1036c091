/**
 * The options of the service's `createHandler`: its store, tokens and caps. Their own
 * file, so that the handler and the reading of the environment both import them.
 *
 * @module
 */

import type { Codec } from "../codec/codec.ts";
import type { RedisSource } from "../stores/redis/redis_store.ts";
import type { Store } from "../contract/store.ts";
import type { DurabilityMode } from "../contract/durability.ts";
import type { NameOptions } from "./generators.ts";

export type { NameOptions };

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
  /**
   * Generator options per name, e.g. `{ order: { minStep: 1000 }, ticket: { digits: 8 },
   * "*": { maxStep: 100000 } }` (`"*"`: every name not listed). Checked when the handler is made.
   * Default none: the engine's defaults.
   */
  names?: Record<string, NameOptions>;
  /** The IANA time zone of `/v1/daily` serials. Default `"UTC"`. */
  timeZone?: string;
  /** At most this many live generators (a new name past it answers 429). Default 1,000. */
  maxGenerators?: number;
  /** A generator unused this long (ms) may be closed to make room for a new name. Default 60,000. */
  idleMs?: number;
  /**
   * The most IDs one `POST /v1/segments/{name}` may reserve (an `HttpStore`'s `maxStep` at
   * most). Default 1,000,000 (`KvId`'s default `maxStep`).
   */
  maxSegment?: number;
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
  /**
   * More Prometheus series for `GET /metrics`, rendered lines (`# HELP`, `# TYPE`, samples), e.g.
   * the listener's connection counters. Default none.
   */
  metrics?: () => string[];
  /**
   * The prefix the handler is mounted under in a larger app, e.g. `"/ids"`: it answers
   * `/ids/v1/ids/{name}`, `/ids/metrics`, the status page at `/ids/` (its cookie scoped to the
   * prefix), and 404 for every path outside it. Default `""` (the root).
   */
  basePath?: string;
  /**
   * Public forms by name (`@kvid/core/codec`), for `/v1/ids/{name}`: each ID is answered with its
   * public form beside it (text: `<id>\t<encoded>` a line; JSON: an `"encoded"` array beside
   * `"ids"`). From the environment: `KVID_FORMATS` and `KVID_ID_KEY`. Default: none.
   */
  codecs?: ReadonlyMap<string, Codec<string>>;
  /** Where the service logs (start-up, failures; never a token). Default `console.error`. */
  log?: (line: string) => void;
}
