/**
 * The SQL stores beside Redis, in one run: one reservation's round trip on PostgreSQL (pg,
 * postgres.js), MariaDB (mysql2) and Redis (node-redis), and `next()` per ID on each (segments
 * hide the store: the per-ID figures should be equal). Every server is started here, durable:
 * PostgreSQL and MariaDB with their defaults (`fsync`, `synchronous_commit`,
 * `innodb_flush_log_at_trx_commit = 1`), Redis with `appendfsync always`.
 *
 * Then the choice the stores are built on, measured: 8 concurrent workers reserving on one
 * counter with the row-lock form (the stores' one `UPDATE ... value = value + step`) against seed
 * 003's optimistic version form (`SELECT value, version`, then `UPDATE ... WHERE version = v`,
 * again on a conflict). Each iteration is 200 reservations, 25 per worker.
 *
 * Last, the ID service (`createHandler`, `POST /v1/ids/{name}`, count=1, token auth) served
 * in this process by `Deno.serve` on each store, under `npm:autocannon` (50 connections,
 * `KVID_SQL_BENCH_SECONDS` (3) each, rounds interleaved): requests/s on PostgreSQL and MariaDB
 * beside Redis (the load generator shares the process and the machine: compare, do not quote).
 *
 *     deno bench -A bench/sql_bench.ts
 *
 * @module
 */

import pg from "pg";
import postgres from "postgres";
import mysql from "mysql2/promise";
import { createClient } from "redis";
import autocannon from "autocannon";
import { createHandler } from "../src/service/mod.ts";
import { fromNodeRedis, KvId } from "../mod.ts";
import { RedisStore } from "../src/stores/redis/redis_store.ts";
import type { Store } from "../src/contract/store.ts";
import { PostgresStore } from "../src/stores/postgres/mod.ts";
import { MySqlStore } from "../src/stores/mysql/mod.ts";
import { startServer } from "../tests/support/redis_server.ts";
import { startMariaDb, startPostgres } from "../tests/support/sql_servers.ts";

const RUN = Date.now().toString(36);
const PER_ITER = 1_000;
const WORKERS = 8;
const PER_WORKER = 25;
const PLAIN = { floor: 0n, raiseTo: 0n, guard: true, exact: true };

const redisServer = await startServer({ persistence: "aof" });
const pgServer = await startPostgres();
const myServer = await startMariaDb();
addEventListener("unload", () => {
  void redisServer.stop();
  pgServer.killNow();
  myServer.killNow();
});

const redis = createClient({ url: redisServer.url });
redis.on("error", () => {});
await redis.connect();
const pgPool = new pg.Pool({ connectionString: pgServer.url, max: WORKERS });
pgPool.on("error", () => {});
const sql = postgres(pgServer.url, { max: WORKERS, onnotice: () => {} });
const myPool = mysql.createPool({ uri: myServer.url, connectionLimit: WORKERS });
addEventListener("unload", () => {
  void redis.destroy();
  void pgPool.end();
  void sql.end({ timeout: 0 });
  void myPool.end();
});

const stores: Record<string, Store> = {
  "Redis (node-redis, appendfsync always)": new RedisStore(fromNodeRedis(redis)),
  "PostgreSQL 15 (pg)": new PostgresStore(pgPool),
  "PostgreSQL 15 (postgres.js)": new PostgresStore(sql),
  "MariaDB 10.11 (mysql2)": new MySqlStore(myPool),
};
// Tables made before the clock runs.
for (const store of Object.values(stores)) {
  await store.reserve("kvid-bench", `warm-${RUN}`, 1, PLAIN);
}

for (const [label, store] of Object.entries(stores)) {
  const name = `rt-${label}-${RUN}`;
  Deno.bench({
    name: `${label}: one reservation (round trip)`,
    group: "reservation round trip",
    baseline: label.startsWith("Redis"),
    fn: async () => void await store.reserve("kvid-bench", name, 100, PLAIN),
  });
}

for (const [label, store] of Object.entries(stores)) {
  // Default options: the step adapts, prefetch hides the reservations.
  const gen = new KvId(`next-${label}-${RUN}`, { store, key: "kvid-bench" });
  addEventListener("unload", () => void gen.close());
  Deno.bench({
    name: `${label}: next(), ${PER_ITER} IDs per iteration`,
    group: "next() per ID",
    baseline: label.startsWith("Redis"),
    fn: async () => {
      for (let i = 0; i < PER_ITER; i++) await gen.next();
    },
  });
}

// Row lock against optimistic versions, 8 workers on one counter.
await pgPool.query(
  "CREATE TABLE IF NOT EXISTS kvid_bench_versions (name text PRIMARY KEY, value bigint NOT NULL, version bigint NOT NULL)",
);
await myPool.query(
  "CREATE TABLE IF NOT EXISTS kvid_bench_versions (name VARCHAR(100) PRIMARY KEY, value BIGINT NOT NULL, version BIGINT NOT NULL) ENGINE=InnoDB",
);
const tally = { pg: { reservations: 0, retries: 0 }, mysql: { reservations: 0, retries: 0 } };

async function optimisticPg(name: string, step: number): Promise<bigint> {
  for (;;) {
    const { rows } = await pgPool.query(
      "SELECT value::text AS value, version::text AS version FROM kvid_bench_versions WHERE name = $1",
      [name],
    );
    const value = BigInt(rows[0].value) + BigInt(step);
    const done = await pgPool.query(
      "UPDATE kvid_bench_versions SET value = $2::bigint, version = version + 1 WHERE name = $1 AND version = $3::bigint",
      [name, String(value), rows[0].version],
    );
    tally.pg.reservations++;
    if (done.rowCount === 1) return value;
    tally.pg.retries++;
  }
}

async function optimisticMy(name: string, step: number): Promise<bigint> {
  for (;;) {
    const [rows] = await myPool.query(
      "SELECT CAST(value AS CHAR) AS value, CAST(version AS CHAR) AS version FROM kvid_bench_versions WHERE name = ?",
      [name],
    ) as unknown as [{ value: string; version: string }[]];
    const value = BigInt(rows[0].value) + BigInt(step);
    const [done] = await myPool.query(
      "UPDATE kvid_bench_versions SET value = CAST(? AS SIGNED), version = version + 1 WHERE name = ? AND version = CAST(? AS SIGNED)",
      [String(value), name, rows[0].version],
    ) as unknown as [{ affectedRows: number }];
    tally.mysql.reservations++;
    if (done.affectedRows === 1) return value;
    tally.mysql.retries++;
  }
}

// Deno.bench awaits only an async function (a function returning a promise is timed as sync).
async function workers(reserve: () => Promise<unknown>): Promise<void> {
  await Promise.all(
    Array.from({ length: WORKERS }, async () => {
      for (let i = 0; i < PER_WORKER; i++) await reserve();
    }),
  );
}

const lockName = `lock-${RUN}`;
const versionName = `version-${RUN}`;
await pgPool.query("INSERT INTO kvid_bench_versions VALUES ($1, 0, 0)", [versionName]);
await myPool.query("INSERT INTO kvid_bench_versions VALUES (?, 0, 0)", [versionName]);
const pgStore = stores["PostgreSQL 15 (pg)"];
const myStore = stores["MariaDB 10.11 (mysql2)"];
Deno.bench({
  name: "PostgreSQL: row lock (the store), 8 workers x 25",
  group: "8 workers on one counter, PostgreSQL",
  baseline: true,
  fn: async () => {
    await workers(() => pgStore.reserve("kvid-bench", lockName, 10, PLAIN));
  },
});
Deno.bench({
  name: "PostgreSQL: optimistic version, 8 workers x 25",
  group: "8 workers on one counter, PostgreSQL",
  fn: async () => {
    await workers(() => optimisticPg(versionName, 10));
  },
});
Deno.bench({
  name: "MariaDB: row lock (the store), 8 workers x 25",
  group: "8 workers on one counter, MariaDB",
  baseline: true,
  fn: async () => {
    await workers(() => myStore.reserve("kvid-bench", lockName, 10, PLAIN));
  },
});
Deno.bench({
  name: "MariaDB: optimistic version, 8 workers x 25",
  group: "8 workers on one counter, MariaDB",
  fn: async () => {
    await workers(() => optimisticMy(versionName, 10));
  },
});
addEventListener("unload", () => {
  for (const [db, t] of Object.entries(tally)) {
    if (t.reservations === 0) continue;
    const share = (100 * t.retries / t.reservations).toFixed(1);
    console.log(
      `optimistic ${db}: ${t.retries} of ${t.reservations} attempts lost to another worker (${share}%)`,
    );
  }
});

// The ID service on each store, in this process.
const SECONDS = Number(Deno.env.get("KVID_SQL_BENCH_SECONDS") ?? "3");
const TOKEN = "bench-token-0123456789abcdef";
let served = false;
Deno.bench({
  name: "the ID service on each store, count=1, 50 connections (figures printed)",
  group: "HTTP service",
  n: 1,
  warmup: 0,
  async fn() {
    if (served) return; // deno bench calls it more than once even with n: 1: measure once
    served = true;
    const targets: { label: string; url: string; stop: () => Promise<void> }[] = [];
    for (const [label, store] of Object.entries(stores)) {
      if (label.includes("postgres.js")) continue;
      const service = createHandler({ store, tokens: `${TOKEN}:*`, log: () => {} });
      const server = Deno.serve(
        { port: 0, hostname: "127.0.0.1", onListen() {} },
        service.fetch,
      );
      targets.push({
        label,
        url: `http://127.0.0.1:${server.addr.port}/v1/ids/svc-${RUN}`,
        stop: async () => {
          await server.shutdown();
          await service.close();
        },
      });
    }
    const rps = new Map<string, number[]>();
    try {
      for (let round = 0; round < 3; round++) {
        for (const t of targets) {
          const r = await autocannon({
            url: t.url,
            connections: 50,
            duration: round === 0 ? 1 : SECONDS, // round 0 warms up, not counted
            method: "POST",
            headers: { authorization: `Bearer ${TOKEN}` },
          });
          if (r.non2xx > 0 || r.errors > 0) {
            throw new Error(`${t.label}: ${r.non2xx} non-2xx, ${r.errors} errors`);
          }
          if (round > 0) rps.set(t.label, [...(rps.get(t.label) ?? []), r.requests.average]);
        }
      }
    } finally {
      for (const t of targets) await t.stop();
    }
    const load = Deno.readTextFileSync("/proc/loadavg").split(" ").slice(0, 3).join(" ");
    for (const [label, list] of rps) {
      console.log(
        `service on ${label}: ${list.map(Math.round).join(", ")} req/s (load ${load})`,
      );
    }
  },
});
