/**
 * The stores the shared tests run on, in one list: a store added here gets the shared Store spec
 * (tests/stores/store_spec_test.ts for the stores that need no SQL server, tests/stores/sql/sql_store_spec_test.ts
 * for those that do) and the property test (tests/engine/property_test.ts), with no other file to touch.
 *
 * Each subject opens its own servers (Redis, Valkey when `.ci/run` sets `KVID_TEST_SERVER`), or
 * shares the one PostgreSQL and the one MariaDB of a {@linkcode SubjectServers}, and reaches every
 * server through a loopback proxy (tests/support/proxy.ts) the property test can hold, cut and slow. Its
 * counters are read and written behind the store's back over a separate connection (a lowered
 * counter is a fault).
 *
 * @module
 */

import mysql from "mysql2/promise";
import pg from "pg";
import { DenoKvStore } from "../../src/stores/deno_kv/deno_kv_store.ts";
import { InterleavedStore } from "../../src/stores/interleaved/interleaved_store.ts";
import { MySqlStore } from "../../src/stores/mysql/mod.ts";
import { PostgresStore } from "../../src/stores/postgres/mod.ts";
import { RedisStore } from "../../src/stores/redis/redis_store.ts";
import type { Store } from "../../src/stores/mod.ts";
import { type ClientKind, type OpenClient, openClient } from "./redis_clients.ts";
import { type Proxy, startProxy } from "./proxy.ts";
import {
  command,
  EXTERNAL_SERVER,
  startNoScriptingServer,
  startServer,
  type TestServer,
} from "./redis_server.ts";
import { closedPort, freshTable } from "./sql_store_cases.ts";
import { type SqlServer, startMariaDb, startPostgres } from "./sql_servers.ts";
import { MemoryStore } from "./memory_store.ts";
import type { StoreSubject } from "./store_spec.ts";

/** Which servers a subject needs: none (in-process), Redis servers, or the SQL servers. */
export type SubjectGroup = "local" | "redis" | "sql";

/** A counter read and written behind the store's back (absent: undefined). */
export interface CounterAccess {
  get(key: string, field: string): Promise<bigint | undefined>;
  set(key: string, field: string, value: bigint): Promise<void>;
}

/** One server (or in-process store) of a subject: one for a single store, each member's else. */
export interface SubjectMember {
  /** What it is, for messages: `"Redis"`, `"Deno KV"`, ... */
  readonly what: string;
  /** Its counters, behind the store's back. */
  readonly counter: CounterAccess;
  /** The proxy between the store and the server; none for an in-process store. */
  readonly link?: Proxy;
  /** A Redis server's URL, whose settings a fault can make lose data; none for other stores. */
  readonly redisUrl?: string;
}

/** An open subject: the spec's view and the property test's. */
export interface OpenSubject extends AsyncDisposable {
  /** What the shared Store spec runs (its `store` open until disposed). */
  readonly spec: StoreSubject;
  /**
   * A store over the same servers for generators: the spec's store, or for interleaved stores a
   * new set over the same members with `block` IDs a block and the generator's `timeout`.
   */
  store(options: { block: number; timeout: number }): Store;
  /** Its members, in order. */
  readonly members: readonly SubjectMember[];
  /** The guard can raise a lowered counter (false on a Redis server without scripting). */
  readonly guards: boolean;
  /**
   * Integer replies above 2^53 arrive rounded and no script returns them as strings (ioredis on
   * a server without scripting): a bigint generator there is refused (`config`).
   */
  readonly rounds: boolean;
}

/** One entry of {@linkcode SUBJECTS}. */
export interface Subject {
  /** Shown in test names: `store spec: <name>`, `property: <name>`. */
  readonly name: string;
  readonly group: SubjectGroup;
  /**
   * Why the shared spec does not apply (a degraded mode the property test still covers): the
   * spec's test is then shown as ignored with this text in its name.
   */
  readonly notSpec?: string;
  /** Why this environment cannot run it (e.g. an external Redis server): then ignored. */
  readonly unavailable?: () => string | undefined;
  open(servers: SubjectServers): Promise<OpenSubject>;
}

/** The PostgreSQL and MariaDB servers the SQL subjects share, each started on first use. */
export class SubjectServers implements AsyncDisposable {
  #postgres?: Promise<SqlServer>;
  #mariadb?: Promise<SqlServer>;

  /** The PostgreSQL server, started on first use. */
  postgres(): Promise<SqlServer> {
    return this.#postgres ??= startPostgres();
  }

  /** The MariaDB server, started on first use. */
  mariadb(): Promise<SqlServer> {
    return this.#mariadb ??= startMariaDb();
  }

  /**
   * Start the servers `subjects` will need now, in the background (a failure shows when a
   * subject asks for its server): they start while other subjects run.
   */
  warm(subjects: readonly Subject[]): void {
    if (!subjects.some((s) => s.group === "sql")) return;
    this.postgres().catch(() => {});
    this.mariadb().catch(() => {});
  }

  async [Symbol.asyncDispose](): Promise<void> {
    for (const server of [this.#postgres, this.#mariadb]) {
      if (server !== undefined) await (await server.catch(() => undefined))?.stop();
    }
  }
}

/** Disposers run in reverse order, each one's failure not stopping the rest. */
class Cleanup {
  readonly #ends: (() => Promise<unknown> | unknown)[] = [];
  add(end: () => Promise<unknown> | unknown): void {
    this.#ends.push(end);
  }
  async run(): Promise<void> {
    const errors: unknown[] = [];
    for (const end of this.#ends.splice(0).reverse()) {
      try {
        await end();
      } catch (err) {
        errors.push(err);
      }
    }
    if (errors.length > 0) throw errors[0];
  }
}

/** A Redis server (with AOF, as the library wants), a proxy before it, a client through that. */
async function redisMember(
  cleanup: Cleanup,
  kind: ClientKind,
  options: { scripting?: boolean } = {},
): Promise<{ member: SubjectMember; store: RedisStore; server: TestServer }> {
  const server = options.scripting === false
    ? await startNoScriptingServer()
    : await startServer({ persistence: "aof" });
  cleanup.add(() => server.stop());
  const link = await startProxy(server);
  cleanup.add(() => link.close());
  // failFast: under a fault, calls fail at once and the generator's retries are what is seen.
  // No ready check: one failing under a fault leaves an ioredis timer behind.
  const client = await openClient(kind, link.url, { failFast: true, readyCheck: false });
  cleanup.add(() => client.close());
  const counter: CounterAccess = {
    async get(key, field) {
      const value = await command(server.url, "HGET", key, field);
      return typeof value === "string" ? BigInt(value) : undefined;
    },
    async set(key, field, value) {
      await command(server.url, "HSET", key, field, String(value));
    },
  };
  return {
    member: { what: server.kind, counter, link, redisUrl: server.url },
    store: new RedisStore(client.redis),
    server,
  };
}

/** A Deno KV store on a file in a temp dir. */
async function denoKvMember(
  cleanup: Cleanup,
): Promise<{ member: SubjectMember; kv: Deno.Kv; store: DenoKvStore }> {
  const dir = await Deno.makeTempDir({ prefix: "kvid-subject-kv-" });
  cleanup.add(() => Deno.remove(dir, { recursive: true }));
  const kv = await Deno.openKv(`${dir}/ids.sqlite3`);
  cleanup.add(() => kv.close());
  const store = new DenoKvStore(kv);
  const counter: CounterAccess = {
    async get(key, field) {
      return (await kv.get<Deno.KvU64>(store.kvKey(key, field))).value?.value;
    },
    async set(key, field, value) {
      await kv.set(store.kvKey(key, field), new Deno.KvU64(value));
    },
  };
  return { member: { what: "Deno KV", counter }, kv, store };
}

/** Stores of `count` Redis servers this makes and kills, for the spec's unreachable case. */
function deadRedis(kind: ClientKind, wrap: (stores: Store[]) => Store, count = 1) {
  if (EXTERNAL_SERVER) return undefined;
  return async () => {
    const servers = await Promise.all(Array.from({ length: count }, () => startServer()));
    const clients: OpenClient[] = [];
    for (const server of servers) {
      clients.push(await openClient(kind, server.url, { failFast: true }));
    }
    for (const server of servers) await server.kill();
    return {
      store: wrap(clients.map((c) => new RedisStore(c.redis))),
      async [Symbol.asyncDispose]() {
        for (const c of clients) await c.close();
        for (const server of servers) await server.stop();
      },
    };
  };
}

type SqlKind = "postgres" | "mariadb";

/**
 * A PostgreSQL (`npm:pg`) or MariaDB (`npm:mysql2`) store on a fresh table of the shared server,
 * through a proxy; `port` instead: a store of a server nothing listens on (no proxy, no access).
 */
async function sqlMember(
  cleanup: Cleanup,
  servers: SubjectServers,
  kind: SqlKind,
  table: string,
): Promise<{ member: SubjectMember; store: Store; dead: () => Store }> {
  const server = await (kind === "postgres" ? servers.postgres() : servers.mariadb());
  const link = await startProxy(server);
  cleanup.add(() => link.close());
  const open = (port: number) => {
    if (kind === "postgres") {
      const pool = new pg.Pool({
        host: server.host,
        port,
        user: server.user,
        password: server.password,
        database: server.database,
        max: 4,
      });
      pool.on("error", () => {}); // an idle client lost: unheard, pg would crash the process
      cleanup.add(() => pool.end());
      return {
        store: new PostgresStore(pool, { table }),
        query: async (sql: string, values: unknown[]) => (await pool.query(sql, values)).rows,
      };
    }
    const pool = mysql.createPool({
      host: server.host,
      port,
      user: server.user,
      password: server.password,
      database: server.database,
      connectionLimit: 4,
    });
    cleanup.add(() => pool.end());
    return {
      store: new MySqlStore(pool, { table }),
      query: async (sql: string, values: unknown[]) =>
        (await pool.query(sql, values))[0] as Record<string, unknown>[],
    };
  };
  const { store } = open(link.port);
  // Behind the store's back: straight to the server, so a held link does not hold the test.
  const { query } = open(server.port);
  await query(
    kind === "postgres" ? PostgresStore.tableSql(table) : MySqlStore.tableSql(table),
    [],
  );
  const counter: CounterAccess = {
    async get(key, field) {
      const rows = await query(
        kind === "postgres"
          ? `SELECT value::text AS value FROM ${table} WHERE hash_key = $1 AND name = $2`
          : `SELECT CAST(value AS CHAR) AS value FROM ${table} WHERE hash_key = ? AND name = ?`,
        [key, field],
      );
      return rows.length === 0 ? undefined : BigInt(String(rows[0].value));
    },
    async set(key, field, value) {
      await query(
        kind === "postgres"
          ? `INSERT INTO ${table} (hash_key, name, value) VALUES ($1, $2, $3::bigint)
             ON CONFLICT (hash_key, name) DO UPDATE SET value = EXCLUDED.value`
          : `INSERT INTO ${table} (hash_key, name, value) VALUES (?, ?, CAST(? AS SIGNED))
             ON DUPLICATE KEY UPDATE value = VALUES(value)`,
        [key, field, String(value)],
      );
    },
  };
  return {
    member: { what: kind === "postgres" ? "PostgreSQL" : "MariaDB", counter, link },
    store,
    dead: () => open(closedPort()).store,
  };
}

/** An {@linkcode OpenSubject} of one store (not interleaved). */
function single(
  cleanup: Cleanup,
  member: SubjectMember,
  spec: StoreSubject,
  traits: { guards?: boolean; rounds?: boolean } = {},
): OpenSubject {
  return {
    spec,
    store: () => spec.store,
    members: [member],
    guards: traits.guards ?? true,
    rounds: traits.rounds ?? false,
    [Symbol.asyncDispose]: () => cleanup.run(),
  };
}

/** An {@linkcode OpenSubject} of interleaved `stores` (members `members`). */
function interleaved(
  cleanup: Cleanup,
  members: SubjectMember[],
  stores: Store[],
  spec: Omit<StoreSubject, "store" | "contiguous">,
): OpenSubject {
  return {
    spec: { ...spec, store: new InterleavedStore(stores, { block: 4 }), contiguous: false },
    store: (o) => new InterleavedStore(stores, o),
    members,
    guards: true,
    rounds: false,
    [Symbol.asyncDispose]: () => cleanup.run(),
  };
}

/** Open with a cleanup that runs if opening fails half way. */
async function opening(make: (cleanup: Cleanup) => Promise<OpenSubject>): Promise<OpenSubject> {
  const cleanup = new Cleanup();
  try {
    return await make(cleanup);
  } catch (err) {
    await cleanup.run().catch(() => {});
    throw err;
  }
}

const ownRedis = () =>
  EXTERNAL_SERVER ? "needs servers of its own (KVID_TEST_URL is set)" : undefined;

/** A RedisStore through `kind` on its own server. */
function redisSubject(kind: ClientKind): Subject {
  return {
    name: `RedisStore through ${kind}`,
    group: "redis",
    open: () =>
      opening(async (cleanup) => {
        const { member, store, server } = await redisMember(cleanup, kind);
        return single(cleanup, member, {
          store,
          contiguous: true,
          layout: true,
          corrupt: async (key, field) => void await command(server.url, "HSET", key, field, "x1"),
          durable: true,
          unreachable: deadRedis(kind, (s) => s[0]),
        });
      }),
  };
}

/**
 * Every store the shared tests run on. Adding a store: its entry here (and, when it needs a new
 * kind of server, a method of {@linkcode SubjectServers}).
 */
export const SUBJECTS: readonly Subject[] = [
  {
    name: "the in-memory reference store",
    group: "local",
    open: () =>
      opening((cleanup) => {
        const store = new MemoryStore();
        const counter: CounterAccess = {
          get: (key, field) => {
            const value = store.value(key, field);
            return Promise.resolve(value === 0n ? undefined : value);
          },
          set: (key, field, value) => Promise.resolve(store.setValue(key, field, value)),
        };
        return Promise.resolve(
          single(cleanup, { what: "memory", counter }, { store, contiguous: true }),
        );
      }),
  },
  redisSubject("node-redis"),
  redisSubject("ioredis"),
  {
    name: "RedisStore through ioredis on a server without scripting",
    group: "redis",
    notSpec: "degraded: without scripting no guard raise, exact ends past 2^53, compare-and-set " +
      "or step memory (tests/stores/redis/redis_exact_replies_test.ts covers that fallback)",
    unavailable: ownRedis,
    open: () =>
      opening(async (cleanup) => {
        const { member, store } = await redisMember(cleanup, "ioredis", { scripting: false });
        return single(cleanup, member, { store, contiguous: true }, {
          guards: false,
          rounds: true,
        });
      }),
  },
  {
    name: "InterleavedStore over two Redis servers",
    group: "redis",
    unavailable: ownRedis,
    open: () =>
      opening(async (cleanup) => {
        const a = await redisMember(cleanup, "node-redis");
        const b = await redisMember(cleanup, "node-redis");
        return interleaved(cleanup, [a.member, b.member], [a.store, b.store], {
          durable: true,
          unreachable: deadRedis("node-redis", (s) => new InterleavedStore(s, { block: 4 }), 2),
        });
      }),
  },
  {
    name: "InterleavedStore over a Redis server and a Deno KV file",
    group: "redis",
    unavailable: ownRedis,
    open: () =>
      opening(async (cleanup) => {
        const a = await redisMember(cleanup, "ioredis");
        const b = await denoKvMember(cleanup);
        return interleaved(cleanup, [a.member, b.member], [a.store, b.store], {});
      }),
  },
  {
    name: "DenoKvStore on a file",
    group: "local",
    open: () =>
      opening(async (cleanup) => {
        const { member, kv, store } = await denoKvMember(cleanup);
        return single(cleanup, member, {
          store,
          contiguous: true,
          layout: true,
          corrupt: async (key, field) => void await kv.set(store.kvKey(key, field), "x1"),
          durable: true,
        });
      }),
  },
  ...(["postgres", "mariadb"] as const).map((kind): Subject => ({
    name: kind === "postgres" ? "PostgresStore through pg" : "MySqlStore on MariaDB through mysql2",
    group: "sql",
    open: (servers) =>
      opening(async (cleanup) => {
        const { member, store, dead } = await sqlMember(cleanup, servers, kind, freshTable());
        // No corrupt(): the bigint column holds no non-integer.
        return single(cleanup, member, {
          store,
          contiguous: true,
          layout: true,
          durable: true,
          unreachable: () =>
            Promise.resolve({ store: dead(), [Symbol.asyncDispose]: () => Promise.resolve() }),
        });
      }),
  })),
  {
    name: "InterleavedStore over a PostgreSQL and a MariaDB",
    group: "sql",
    open: (servers) =>
      opening(async (cleanup) => {
        const table = freshTable();
        const a = await sqlMember(cleanup, servers, "postgres", table);
        const b = await sqlMember(cleanup, servers, "mariadb", table);
        return interleaved(cleanup, [a.member, b.member], [a.store, b.store], {
          durable: true,
          unreachable: () =>
            Promise.resolve({
              store: new InterleavedStore([a.dead(), b.dead()], { block: 4 }),
              [Symbol.asyncDispose]: () => Promise.resolve(),
            }),
        });
      }),
  },
];
