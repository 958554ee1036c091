/**
 * The options of the service's `createHandler`: its store, tokens and caps, and their defaults
 * ({@linkcode SERVICE_DEFAULTS}, which the handler uses). Their own file, so that the handler and
 * the reading of the environment both import them.
 *
 * @module
 */

import type { Codec } from "../codec/codec.ts";
import type { RedisSource } from "../contract/redis_client.ts";
import type { Store } from "../contract/store.ts";
import type { DurabilityMode } from "../contract/durability.ts";
import type { NameOptions } from "./generators.ts";
import { KVID_DEFAULTS } from "../engine/defaults.ts";

export type { NameOptions };

/**
 * The defaults of {@linkcode ServiceOptions}, written once: the handler reads them from here and
 * each option's `@default` names the same value.
 *
 * @example
 * ```ts
 * import { SERVICE_DEFAULTS } from "./options.ts";
 * import assert from "node:assert/strict";
 *
 * assert.ok(SERVICE_DEFAULTS.timeout === 5000 && SERVICE_DEFAULTS.durability === "strict");
 * ```
 */
export const SERVICE_DEFAULTS = {
  auth: "token",
  timeZone: "UTC",
  maxGenerators: 1000,
  idleMs: 60000,
  // The generators' own defaults (maxSegment: KvId's maxStep), read from their table.
  maxSegment: KVID_DEFAULTS.maxStep,
  timeout: KVID_DEFAULTS.timeout,
  durability: KVID_DEFAULTS.durability,
  basePath: "",
} as const satisfies Partial<ServiceOptions>;

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
  /**
   * A Redis client (or a factory of it), e.g. `fromNodeRedis(client)`; resolved through the
   * `redis` option's resolver, as a generator's is. Or give `store`.
   * @default {undefined}
   */
  redis?: RedisSource;
  /**
   * Any store instead of `redis`, e.g. a `DenoKvStore`: one that passes the shared Store spec.
   * @default {undefined}
   */
  store?: Store;
  /**
   * Answers when the store answers, rejects (or takes over a second) when not: `GET /readyz`.
   * By default the store's own clock read (`ServerClock.now`) when it offers one, else whether no
   * generator's last reservation failed; the store's `durability()` read follows either way.
   * @default {store.now, else the generators' last reservations}
   */
  ready?: () => Promise<unknown>;
  /**
   * How the store is named on the status page and in the log.
   * @default {"redis" with the redis option, else "store"}
   */
  storeLabel?: string;
  /**
   * The tokens, `"<token>:<names>,<token>:<names>"`, names `*` or `a|b|c`; each token
   * 16 to 1,024 printable ASCII characters. Required unless `auth` is `"none"`. `admin=` before
   * the names (`"<token>:admin=*"`) makes a token administrative on them: it may raise a counter
   * past its value plus `maxSegment` and remember a step above `maxSegment`, which other tokens
   * (`*` ones too) may not (docs/security.md).
   * @default {undefined}
   */
  tokens?: string;
  /**
   * `"none"`: no token needed by anyone (logged loudly).
   * @default {"token"}
   */
  auth?: "token" | "none";
  /**
   * Generator options per name, e.g. `{ order: { minStep: 1000 }, ticket: { digits: 8 },
   * "*": { maxStep: 100000 } }` (`"*"`: every name not listed). Checked when the handler is made.
   * None: the engine's defaults.
   * @default {undefined}
   */
  names?: Record<string, NameOptions>;
  /**
   * The IANA time zone of `/v1/daily` serials.
   * @default {"UTC"}
   */
  timeZone?: string;
  /**
   * At most this many live generators (a new name past it answers 429).
   * @default {1_000}
   */
  maxGenerators?: number;
  /**
   * A generator unused this long (ms) may be closed to make room for a new name.
   * @default {60_000}
   */
  idleMs?: number;
  /**
   * The most IDs one `POST /v1/segments/{name}` may reserve (an `HttpStore`'s `maxStep` at
   * most; `KvId`'s default `maxStep`).
   * @default {1_000_000}
   */
  maxSegment?: number;
  /**
   * The generators' `timeout`: how long a request waits for a reservation (ms).
   * @default {5_000}
   */
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
   * the listener's connection counters.
   * @default {undefined}
   */
  metrics?: () => string[];
  /**
   * The prefix the handler is mounted under in a larger app, e.g. `"/ids"`: it answers
   * `/ids/v1/ids/{name}`, `/ids/metrics`, the status page at `/ids/` (its cookie scoped to the
   * prefix), and 404 for every path outside it. `""`: the root.
   * @default {""}
   */
  basePath?: string;
  /**
   * Public forms by name (`@kvid/core/codec`), for `/v1/ids/{name}`: each ID is answered with its
   * public form beside it (text: `<id>\t<encoded>` a line; JSON: an `"encoded"` array beside
   * `"ids"`). From the environment: `KVID_FORMATS` and `KVID_ID_KEY`.
   * @default {undefined}
   */
  codecs?: ReadonlyMap<string, Codec<string>>;
  /**
   * Where the service logs (start-up, failures; never a token).
   * @default {console.error}
   */
  log?: (line: string) => void;
  /**
   * Host names (without port) the unauthenticated mode answers beside `localhost`, 127.0.0.0/8
   * and `[::1]` (env `KVID_ALLOWED_HOSTS`, comma-separated): any other `Host` is 403, so a page
   * that points its own name at 127.0.0.1 (DNS rebinding) reads nothing. Unused with tokens.
   * @default {[]}
   */
  allowedHosts?: readonly string[];
  /**
   * Failed authentications (401 answers) a peer address may have within a minute before it is
   * answered 429 with `Retry-After` until the minute is over (env
   * `KVID_AUTH_LIMIT`); 0: no limit. Needs the peer: `Deno.serve`'s and
   * `@kvid/core/serve`'s handler info. Behind a proxy every client is the proxy's address.
   * @default {10}
   */
  authFailuresPerMinute?: number;
}
