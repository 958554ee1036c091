/**
 * One URL picks the store, for the service (`KVID_STORE_URL`) and the CLI (`--url`): its scheme
 * names the kind ({@linkcode storeKind}), and a store of a kind other than Redis is made by a
 * factory that imports its driver only when that scheme is used ({@linkcode storeFromUrl}), so
 * a Redis user never loads a SQL driver.
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
import type { Store } from "../contract/store.ts";

/** The kinds of store a URL can name. */
export type StoreKind = "redis" | "postgres" | "mysql";

const KINDS: Readonly<Record<string, StoreKind>> = {
  "redis:": "redis",
  "rediss:": "redis",
  "postgres:": "postgres",
  "postgresql:": "postgres",
  "mysql:": "mysql",
};

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
  const kind = KINDS[scheme];
  if (kind === undefined) {
    throw new KvIdError(
      "config",
      `${what} has an unknown scheme "${scheme}" (${
        JSON.stringify(redactStoreUrl(url))
      }): use redis://, rediss://, postgres://, postgresql:// or mysql://`,
    );
  }
  return kind;
}

/** A store opened from a URL, connecting on its first use. */
export interface UrlStore {
  /** The store; its driver is imported and connected on the first call. */
  store: Store;
  /** Resolves when the database answers, rejects otherwise (the service's `/readyz`). */
  ready(): Promise<void>;
  /** Close the connection the store opened, if it did. */
  close(): Promise<void>;
  /** The URL without its password. */
  label: string;
}

/** What a factory opens: the store, its readiness probe, and how to close it. */
interface Opened {
  store: Store;
  ping(): Promise<void>;
  close(): Promise<void>;
}

/** A kind's factory: imports its driver (only then) and connects. */
type Factory = (url: string, options: { timeout: number }) => Promise<Opened>;

// The SQL stores, by kind, each importing its store and driver only when its scheme is used.
const FACTORIES: Readonly<Record<Exclude<StoreKind, "redis">, Factory>> = {
  postgres: async (url, { timeout }) => {
    const [{ default: pg }, { PostgresStore }] = await Promise.all([
      import("pg"),
      import("./postgres/postgres_store.ts"),
    ]);
    const pool = new pg.Pool({ connectionString: url, connectionTimeoutMillis: timeout });
    // An idle client's error (a restarted server) is emitted on the pool: unheard, pg would
    // crash the process; the next query reconnects.
    pool.on("error", () => {});
    return {
      store: new PostgresStore(pool),
      ping: async () => void await pool.query("SELECT 1"),
      close: () => pool.end(),
    };
  },
  mysql: async (url, { timeout }) => {
    const [{ default: mysql }, { MySqlStore }] = await Promise.all([
      import("mysql2/promise"),
      import("./mysql/mysql_store.ts"),
    ]);
    // Integers as strings: a BIGINT above 2^53 is read exactly.
    const pool = mysql.createPool({
      uri: url,
      connectTimeout: timeout,
      supportBigNumbers: true,
      bigNumberStrings: true,
    });
    return {
      store: new MySqlStore(pool),
      ping: async () => void await pool.query("SELECT 1"),
      close: () => pool.end(),
    };
  },
};

/**
 * The store of a non-Redis URL, made lazily: nothing is imported or connected until the first
 * reservation or {@linkcode UrlStore.ready}. Redis URLs are left to the caller's own Redis
 * client (the service's, the CLI's), which knows Redis-only commands; an unknown scheme is
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
  const kind = storeKind(url, what);
  if (kind === "redis") {
    throw new TypeError("storeFromUrl: redis:// URLs are opened with a Redis client");
  }
  const factory = FACTORIES[kind];
  const timeout = options.timeout ?? 5_000;
  let opened: Promise<Opened> | undefined;
  let closed = false;
  const open = () => {
    if (closed) return Promise.reject(new KvIdError("closed", `${what}: the store was closed`));
    if (opened === undefined) {
      const made = factory(url, { timeout });
      opened = made;
      made.catch(() => { // a failed connection is tried again on the next call
        if (opened === made) opened = undefined;
      });
    }
    return opened;
  };
  const store: Store = {
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
  };
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
