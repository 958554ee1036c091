/**
 * The service's configuration from environment variables: which store (node-redis on
 * `KVID_REDIS_URL`, another by the scheme of `KVID_STORE_URL`, else Deno KV), the tokens and
 * the caps. The one file of the service that names stores: the handler sees the Store contract
 * only.
 *
 * @module
 */

// Installs the resolver of the `redis` option (the contract's store source), for the
// `createHandler({ redis })` option and the generators, as `jsr:@kvid/core` does.
import "../stores/redis/redis_option.ts";
import { fromNodeRedis, type NodeRedisLike } from "../stores/redis/adapters.ts";
import { type DenoKvSource, DenoKvStore } from "../stores/deno_kv/deno_kv_store.ts";
import { parseForms } from "../codec/forms.ts";
import { parseKeys } from "../codec/encrypted.ts";
import type { RedisSource } from "../contract/redis_client.ts";
import { KvIdError } from "../contract/errors.ts";
import { storeFromUrl, storeKind } from "../stores/store_url.ts";
import { importDriver } from "../stores/drivers.ts";
import type { ServiceOptions } from "./options.ts";

/** What {@linkcode optionsFromEnv} makes: the options and the store's resources to close. */
export interface EnvConfig {
  /** The options for {@linkcode createHandler}. */
  options: ServiceOptions;
  /** Close the Redis client or Deno KV database opened from the environment. */
  close(): Promise<void>;
}

/**
 * Read the service's configuration from environment variables:
 *
 * - `KVID_STORE_URL`: the store, its scheme picks the kind: `redis://[user:password@]host:port[/db]`
 *   or `rediss://` (Redis, Valkey, Kvrocks, with node-redis); `postgres://`, `postgresql://`
 *   (`PostgresStore` with npm:pg), `mysql://` (`MySqlStore` with npm:mysql2), each driver loaded
 *   only when its scheme is used; another scheme is refused at startup. Unset: Deno KV.
 * - `KVID_REDIS_URL`: the same for a Redis URL, as before `KVID_STORE_URL` (both set: the same URL).
 * - `KVID_KV_PATH`: the Deno KV database path. Default: Deno's default (Deploy's KV there).
 * - `KVID_TOKENS`, `KVID_AUTH`, `KVID_TIME_ZONE`, `KVID_MAX_GENERATORS`, `KVID_TIMEOUT_MS`,
 *   `KVID_DURABILITY`, `KVID_BASE_PATH`: the options `tokens`, `auth`, `timeZone`, `maxGenerators`,
 *   `timeout`, `durability`, `basePath` of {@linkcode createHandler}.
 * - `KVID_ALLOWED_HOSTS` (`ids.internal,10.0.0.5`), `KVID_AUTH_LIMIT`: the options
 *   `allowedHosts` and `authFailuresPerMinute`.
 * - `KVID_NAMES`: the option `names` as JSON, e.g. `{"order": {"minStep": 1000}, "ticket":
 *   {"digits": 8}}`.
 * - `KVID_FORMATS` (`order=decimal:12:encrypted,...`, see `parseForms` of `@kvid/core/codec`)
 *   and `KVID_ID_KEY` (hex, see `parseKeys`): the option `codecs`.
 *
 * Nothing connects until the first request.
 *
 * @example Deno KV in memory, open on purpose
 * ```ts
 * import { createHandler, optionsFromEnv } from "@kvid/core/server";
 * import assert from "node:assert/strict";
 *
 * const env = new Map([["KVID_KV_PATH", ":memory:"], ["KVID_AUTH", "none"]]);
 * const config = optionsFromEnv((name) => env.get(name));
 * await using service = createHandler({ ...config.options, log: () => {} });
 * const res = await service.fetch(new Request("http://localhost/v1/daily/ticket", { method: "POST" }));
 * assert.match(await res.text(), /^\d{8}000001\n$/);
 * await service.close();
 * await config.close();
 * ```
 *
 * @param get Reads one variable; default `Deno.env.get`.
 * @returns The options and a `close` for what they opened.
 */
export function optionsFromEnv(
  get: (name: string) => string | undefined = (name) => Deno.env.get(name),
): EnvConfig {
  const int = (name: string): number | undefined => {
    const v = get(name);
    if (v === undefined || v === "") return undefined;
    if (!/^[0-9]+$/.test(v)) throw new TypeError(`${name} must be a positive integer, got ${v}`);
    return Number(v);
  };
  const authVar = get("KVID_AUTH");
  if (authVar !== undefined && authVar !== "" && authVar !== "none" && authVar !== "token") {
    throw new TypeError(`KVID_AUTH must be "none" or "token", got ${JSON.stringify(authVar)}`);
  }
  const durabilityVar = get("KVID_DURABILITY");
  if (
    durabilityVar !== undefined && durabilityVar !== "" && durabilityVar !== "strict" &&
    durabilityVar !== "best-effort"
  ) {
    throw new TypeError(
      `KVID_DURABILITY must be "strict" or "best-effort", got ${JSON.stringify(durabilityVar)}`,
    );
  }
  const base: ServiceOptions = {
    tokens: get("KVID_TOKENS") || undefined,
    auth: authVar === "none" ? "none" : "token",
    timeZone: get("KVID_TIME_ZONE") || undefined,
    maxGenerators: int("KVID_MAX_GENERATORS"),
    timeout: int("KVID_TIMEOUT_MS"),
    durability: durabilityVar === "best-effort" ? "best-effort" : "strict",
    basePath: get("KVID_BASE_PATH") || undefined,
    names: namesFromEnv(get("KVID_NAMES")),
    allowedHosts: get("KVID_ALLOWED_HOSTS")?.split(",").map((h) => h.trim()).filter((h) => h),
    authFailuresPerMinute: get("KVID_AUTH_LIMIT") === "0" ? 0 : int("KVID_AUTH_LIMIT"),
  };
  const forms = get("KVID_FORMATS");
  if (forms) {
    const key = get("KVID_ID_KEY");
    // Errors name the variable and a length, never the key.
    base.codecs = parseForms(forms, key ? parseKeys(key) : undefined);
  }
  const url = storeUrl(get);
  if (url && storeKind(url, "KVID_STORE_URL") !== "redis") {
    const opened = storeFromUrl(url, { timeout: base.timeout ?? 5_000, what: "KVID_STORE_URL" });
    const options = { ...base, store: opened.store, ready: opened.ready, storeLabel: opened.label };
    return { options, close: opened.close };
  }
  if (url) {
    const redis = connectNodeRedis(url, base.timeout ?? 5_000);
    return {
      options: { ...base, redis: redis.source, ready: redis.ping, storeLabel: redactUrl(url) },
      close: redis.close,
    };
  }
  const path = get("KVID_KV_PATH") || undefined;
  let kv: Promise<Deno.Kv> | undefined;
  const open: DenoKvSource = () => kv ??= Deno.openKv(path);
  const store = new DenoKvStore(open);
  return {
    options: {
      ...base,
      store,
      ready: async () => await (await open()).get(["kvid-ready"]),
      storeLabel: `Deno KV${path === undefined ? "" : ` ${path}`}`,
    },
    // The store closes the database it opened through `open`.
    close: () => Promise.resolve(store.close()),
  };
}

/** `KVID_STORE_URL`, else `KVID_REDIS_URL` (a Redis URL only), else undefined. */
function storeUrl(get: (name: string) => string | undefined): string | undefined {
  const store = get("KVID_STORE_URL") || undefined;
  const redis = get("KVID_REDIS_URL") || undefined;
  if (store !== undefined && redis !== undefined && store !== redis) {
    throw new KvIdError(
      "config",
      "KVID_STORE_URL and KVID_REDIS_URL are both set, to different URLs: set KVID_STORE_URL alone",
    );
  }
  if (
    store === undefined && redis !== undefined && storeKind(redis, "KVID_REDIS_URL") !== "redis"
  ) {
    throw new KvIdError(
      "config",
      "KVID_REDIS_URL takes a redis:// or rediss:// URL: set KVID_STORE_URL for another store",
    );
  }
  return store ?? redis;
}

function namesFromEnv(text: string | undefined): ServiceOptions["names"] {
  if (text === undefined || text === "") return undefined;
  try {
    return JSON.parse(text);
  } catch {
    throw new TypeError(
      'KVID_NAMES is not JSON: give {"<name>": {"minStep": 1000, ...}, "*": {...}}',
    );
  }
}

function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password !== "") u.password = "***";
    return u.toString();
  } catch {
    throw new TypeError("KVID_REDIS_URL is not a URL");
  }
}

type NodeRedisClient = {
  isReady: boolean;
  connect(): Promise<unknown>;
  ping(): Promise<unknown>;
  destroy(): void;
  on(event: string, listener: (err?: unknown) => void): unknown;
  off(event: string, listener: (err?: unknown) => void): unknown;
};

/** Resolves when `c` is connected, or after `ms` (whichever first): the probe then judges it. */
function connectedWithin(c: NodeRedisClient, ms: number): Promise<void> {
  if (c.isReady) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      c.off("ready", done);
      c.off("end", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    c.on("ready", done);
    c.on("end", done); // destroyed: close() does not wait for the timer
  });
}

// node-redis, loaded on first use so that a Deno KV service never loads it. Commands queue while
// it (re)connects; the generators' timeout bounds how long a request waits for them.
function connectNodeRedis(url: string, timeout: number) {
  redactUrl(url);
  let client: Promise<NodeRedisClient> | undefined;
  let lastLogged = 0;
  let lastError: unknown;
  // node-redis sleeps between reconnection attempts on a timer destroy() does not cancel:
  // close() outlasts it, so nothing of the client runs after close.
  let retryAt = 0;
  const open = () =>
    client ??= importDriver<typeof import("redis")>("redis", "KVID_STORE_URL redis://").then(
      ({ createClient }) => {
        const c = createClient({
          url,
          socket: {
            connectTimeout: Math.min(timeout, 5_000),
            reconnectStrategy: (n: number) => {
              const wait = Math.min(50 * 2 ** Math.min(n, 6), 2_000);
              retryAt = Date.now() + wait;
              return wait;
            },
          },
        }) as unknown as NodeRedisClient;
        c.on("error", (err) => {
          lastError = err;
          // Once every 10 s at most: a Redis outage must not flood the log.
          if (Date.now() - lastLogged < 10_000) return;
          lastLogged = Date.now();
          console.error(`kvid service: redis: ${err instanceof Error ? err.message : String(err)}`);
        });
        c.on("ready", () => lastError = undefined);
        c.connect().catch(() => {}); // reconnects by itself; requests see timeouts meanwhile
        return c;
      },
    );
  const source: RedisSource = async () => fromNodeRedis((await open()) as unknown as NodeRedisLike);
  return {
    source,
    ping: async () => {
      const c = await open();
      // The first probe comes as the client connects: it waits for that, within the probe's time.
      await connectedWithin(c, 800);
      // The client's last error says why (a refused password is a reply error, which the
      // readiness probe reports as a configuration error, not as a store that does not answer).
      if (!c.isReady) throw lastError ?? new Error("not connected");
      await c.ping();
    },
    close: async () => {
      if (client === undefined) return;
      (await client).destroy();
      const left = retryAt - Date.now();
      if (left > 0) await new Promise((resolve) => setTimeout(resolve, left + 10));
    },
  };
}
