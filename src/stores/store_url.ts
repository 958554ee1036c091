/**
 * One URL picks the store, for the service (`KVID_STORE_URL`) and the CLI (`--url`): its scheme
 * names the kind ({@linkcode storeKind}), and a store of a kind other than Redis is made by the
 * opener its folder provides (`src/stores/<store>/url.ts`, listed in {@linkcode STORE_URLS}),
 * which imports the store and its driver only when that scheme is used
 * ({@linkcode storeFromUrl}), so a Redis user never loads a SQL driver.
 *
 * | scheme                       | store                                    |
 * | ---------------------------- | ---------------------------------------- |
 * | `redis://`, `rediss://`      | Redis, Valkey, Kvrocks (node-redis)      |
 * | `postgres://`, `postgresql://` | PostgreSQL (`PostgresStore`, npm:pg)   |
 * | `mysql://`                   | MySQL, MariaDB (`MySqlStore`, npm:mysql2) |
 *
 * @module
 */

import { KvIdError } from "../contract/errors.ts";
import { toKvIdError } from "../contract/store_errors.ts";
import type { AnyStore } from "../contract/store.ts";
import { importDriver } from "./drivers.ts";
import type { NodeRedisLike } from "./redis/adapters.ts";
import { MYSQL_URL } from "./mysql/url.ts";
import { POSTGRES_URL } from "./postgres/url.ts";

export type { OpenedStore, StoreOpener } from "./store_opener.ts";
import type { OpenedStore, StoreOpener } from "./store_opener.ts";

/** What of node-redis the Redis opener uses (its own type: see the PostgreSQL opener's). */
interface NodeRedisModule {
  createClient(options: {
    url: string;
    socket: {
      connectTimeout: number;
      reconnectStrategy: (n: number, cause: Error) => number | Error;
    };
  }): {
    on(event: "error", listener: () => void): unknown;
    connect(): Promise<unknown>;
    ping(): Promise<unknown>;
    close(): Promise<unknown>;
  };
}

/**
 * A Redis, Valkey or Kvrocks URL: a {@linkcode RedisStore} on a node-redis client, both imported
 * only when such a URL is used. The service and the CLI open these with their own client (which
 * also sends hash commands the contract has no call for); {@linkcode openStore} with this one.
 */
const REDIS_URL: StoreOpener<"redis"> = {
  kind: "redis",
  schemes: ["redis:", "rediss:"],
  also: { giveBack: true, counters: true, reservesStep: true },
  async open(url, { timeout }) {
    const [{ createClient }, { RedisStore }, { fromNodeRedis }] = await Promise.all([
      importDriver<NodeRedisModule>("redis", "a redis:// URL"),
      import("./redis/redis_store.ts"),
      import("./redis/adapters.ts"),
    ]);
    let connected = false;
    const client = createClient({
      url,
      socket: {
        connectTimeout: timeout,
        // The first connection fails with its reason (the next use tries again); once connected,
        // a lost connection is retried by the client.
        reconnectStrategy: (n: number, cause: Error) =>
          connected ? Math.min(50 * 2 ** Math.min(n, 6), 2_000) : cause,
      },
    });
    client.on("error", () => {}); // reported through the commands that fail
    await client.connect();
    connected = true;
    return {
      store: new RedisStore(fromNodeRedis(client as unknown as NodeRedisLike)),
      ping: async () => void await client.ping(),
      close: async () => void await client.close(),
    };
  },
};

/** Every kind of store a URL can name, by scheme: one entry per store that has URLs. */
export const STORE_URLS = [REDIS_URL, POSTGRES_URL, MYSQL_URL] as const;

/** The kinds of store a URL can name. */
export type StoreKind = (typeof STORE_URLS)[number]["kind"];

/** The opener of `scheme` (`"postgres:"`), or undefined. */
function openerOf(scheme: string): (typeof STORE_URLS)[number] | undefined {
  return STORE_URLS.find((o) => o.schemes.includes(scheme));
}

/** The URL without its password, for messages and labels. */
export function redactStoreUrl(url: string): string {
  return url.replace(/\/\/([^@/]*)@/, (_, auth: string) => `//${auth.replace(/:.*/, ":***")}@`);
}

/**
 * The kind of store `url` names, by its scheme; a `"config"` {@linkcode KvIdError} naming
 * `what` (where the URL came from) for a text that is not a URL or an unknown scheme.
 *
 * @example
 * ```ts
 * import { storeKind } from "./store_url.ts";
 * import assert from "node:assert/strict";
 *
 * assert.ok(storeKind("rediss://:secret@cache.internal:6380") === "redis");
 * assert.ok(storeKind("postgresql://kvid@db/ids") === "postgres");
 * assert.throws(() => storeKind("ftp://db", "KVID_STORE_URL"), /unknown scheme "ftp:"/);
 * ```
 *
 * @param url The URL.
 * @param what Where it came from, for the message: `"KVID_STORE_URL"`, `"--url"`.
 * @returns Its kind.
 */
export function storeKind(url: string, what = "the store URL"): StoreKind {
  let scheme: string;
  try {
    scheme = new URL(url).protocol;
  } catch {
    throw new KvIdError("config", `${what} is not a URL: ${JSON.stringify(redactStoreUrl(url))}`);
  }
  const opener = openerOf(scheme);
  if (opener === undefined) {
    const schemes = STORE_URLS.flatMap((o) => o.schemes.map((s) => `${s}//`));
    throw new KvIdError(
      "config",
      `${what} has an unknown scheme "${scheme}" (${JSON.stringify(redactStoreUrl(url))}): use ${
        schemes.slice(0, -1).join(", ")
      } or ${schemes.at(-1)}`,
    );
  }
  return opener.kind;
}

/** A store opened from a URL, connecting on its first use. */
export interface UrlStore {
  /** The store; its driver is imported and connected on the first call. */
  store: AnyStore;
  /** Resolves when the database answers, rejects otherwise (the service's `/readyz`). */
  ready(): Promise<void>;
  /** Close the connection the store opened, if it did. */
  close(): Promise<void>;
  /** The URL without its password. */
  label: string;
}

/**
 * The store of a URL, made lazily: nothing is imported or connected until the first
 * reservation or {@linkcode UrlStore.ready}. The service and the CLI open Redis URLs with their
 * own Redis client, which also sends commands the contract has none for; an unknown scheme is
 * refused at once with a `"config"` {@linkcode KvIdError}.
 *
 * @example PostgreSQL: nothing is loaded or connected until the first ID
 * ```ts
 * import { storeFromUrl } from "./store_url.ts";
 * import assert from "node:assert/strict";
 *
 * const opened = storeFromUrl("postgres://kvid:secret@127.0.0.1:5432/ids", { what: "KVID_STORE_URL" });
 * assert.ok(opened.label === "postgres://kvid:***@127.0.0.1:5432/ids");
 * await opened.close(); // never connected: nothing to close
 * ```
 *
 * @param url A `postgres://`, `postgresql://` or `mysql://` URL.
 * @param options `timeout`: connecting, in ms (default 5,000); `what`: where the URL came from.
 * @returns The store, connecting on first use.
 */
export function storeFromUrl(
  url: string,
  options: { timeout?: number; what?: string } = {},
): UrlStore {
  const what = options.what ?? "the store URL";
  storeKind(url, what);
  const opener: StoreOpener = openerOf(new URL(url).protocol)!;
  const factory = opener.open?.bind(opener);
  if (factory === undefined) {
    throw new TypeError(`storeFromUrl: ${opener.kind} URLs are opened with the caller's client`);
  }
  const timeout = options.timeout ?? 5_000;
  let opened: Promise<OpenedStore> | undefined;
  let closed = false;
  let got: OpenedStore | undefined; // the store once opened, for describe (synchronous)
  const open = () => {
    if (closed) return Promise.reject(new KvIdError("closed", `${what}: the store was closed`));
    if (opened === undefined) {
      // Its failure in the contract's words: a host that does not resolve or a refused login
      // is "config" at once, a server that is down "connection", retried by the caller.
      const made = factory(url, { timeout }).catch((err) => {
        throw toKvIdError(err, "", "");
      });
      opened = made;
      made.then((o) => void (got = o), () => {});
      made.catch(() => { // a failed connection is tried again on the next call
        if (opened === made) opened = undefined;
      });
    }
    return opened;
  };
  const store: AnyStore = {
    reserve: async (key, field, count, reserveOptions) =>
      await (await open()).store.reserve(key, field, count, reserveOptions),
    release: async (key, field, range) => {
      const s = (await open()).store;
      return s.release === undefined ? false : await s.release(key, field, range);
    },
    loadStep: async (key, field) => {
      const s = (await open()).store;
      return s.loadStep === undefined ? undefined : await s.loadStep(key, field);
    },
    saveStep: async (key, field, step) => {
      const s = (await open()).store;
      if (s.saveStep !== undefined) await s.saveStep(key, field, step);
    },
    deleteDaysBefore: async (key, before) => {
      const s = (await open()).store;
      if (s.deleteDaysBefore === undefined) {
        throw new KvIdError("config", `${what}: this store cannot delete old days`, {
          key,
          field: before,
        });
      }
      return await s.deleteDaysBefore(key, before);
    },
    durability: async (key, durabilityOptions) => {
      const s = (await open()).store;
      // A store without a probe is trusted, as it would be on its own.
      return s.durability === undefined
        ? { durable: true, settings: {}, problems: [] }
        : await s.durability(key, durabilityOptions);
    },
    now: async () => {
      const s = (await open()).store;
      if (s.now === undefined) throw new KvIdError("config", `${what}: this store has no clock`);
      return await s.now();
    },
    // Forgotten before any later call reaches the store (each awaits the same opening first).
    forgetReads: () => void opened?.then((o) => o.store.forgetReads?.(), () => {}),
    // Before the store opened: "", the counter named as a hash.
    describe: (key, field) => got?.store.describe?.(key, field) ?? "",
  };
  // What the opener says its store has beyond those: forwarded too, never silently dropped.
  if (opener.also?.giveBack) {
    store.giveBack = async (key, field, ranges) =>
      await (await open()).store.giveBack?.(key, field, ranges) ?? 0;
  }
  if (opener.also?.counters) {
    store.counters = async (key, countersOptions) => {
      const s = (await open()).store;
      if (s.counters === undefined) {
        throw new KvIdError("config", `${what}: this store cannot read counters`, { key });
      }
      return await s.counters(key, countersOptions);
    };
  }
  if (opener.also?.reservesStep) Object.assign(store, { reservesStep: true });
  return {
    store,
    ready: async () => await (await open()).ping(),
    close: async () => {
      closed = true;
      const o = await opened?.catch(() => undefined);
      await o?.close();
    },
    label: redactStoreUrl(url),
  };
}

/** Options of {@linkcode openStore}. */
export interface OpenStoreOptions {
  /**
   * How long connecting may take, in ms (each use waits at most the generator's own `timeout`).
   *
   * @default {5000}
   */
  timeout?: number;
}

/**
 * A {@linkcode Store} from a URL, by the rules of the service's `KVID_STORE_URL` and the CLI's
 * `--url`: the scheme picks the store, whose driver is imported on the first use (nothing is
 * loaded or connected before), so an application fetches only the driver of its own scheme.
 *
 * | scheme                         | store                                | driver (npm) |
 * | ------------------------------ | ------------------------------------ | ------------ |
 * | `redis://`, `rediss://`        | `RedisStore` (Redis, Valkey, Kvrocks) | `redis` 5    |
 * | `postgres://`, `postgresql://` | `PostgresStore`                      | `pg` 8       |
 * | `mysql://`                     | `MySqlStore` (MySQL, MariaDB)        | `mysql2` 3   |
 *
 * On Deno the driver comes as `npm:<driver>@<range>` (nothing to install); on Node and Bun the
 * application installs it (`npm install pg`). An unknown scheme or a text that is not a URL is a
 * `"config"` {@linkcode KvIdError} at once; so are a host that does not resolve and refused
 * credentials, on the first use. `close()` closes the connection it opened.
 *
 * @example A generator on a URL
 * ```ts ignore
 * import { KvId } from "@kvid/core";
 * import { openStore } from "@kvid/core/store";
 *
 * const opened = openStore("redis://127.0.0.1:6379");
 * const ORDER_ID = new KvId("order", { store: opened.store });
 * console.log(await ORDER_ID.next());
 * await ORDER_ID.close();
 * await opened.close();
 * ```
 *
 * @example Refused at once
 * ```ts
 * import { openStore } from "@kvid/core/store";
 * import assert from "node:assert/strict";
 *
 * assert.throws(() => openStore("http://127.0.0.1:6379"), /unknown scheme "http:"/);
 * ```
 *
 * @param url A `redis://`, `rediss://`, `postgres://`, `postgresql://` or `mysql://` URL.
 * @param options How long connecting may take.
 * @returns The store (connecting on first use), its readiness probe, `close()`, and the URL
 *   without its password.
 * @throws {KvIdError} `"config"` for a text that is not a URL or an unknown scheme.
 */
export function openStore(url: string, options: OpenStoreOptions = {}): UrlStore {
  return storeFromUrl(url, { timeout: options.timeout ?? 5_000, what: "openStore()" });
}
