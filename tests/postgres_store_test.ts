/**
 * PostgresStore on a real PostgreSQL 15 this file starts: the shared SQL case suite through
 * `npm:pg` and through `npm:postgres` (postgres.js), and the errors a live server produces.
 */

import "./deadline.ts"; // a time limit on every test of this file
import assert from "node:assert/strict";
import pg from "pg";
import postgres from "postgres";
import { PostgresStore, type PostgresStoreOptions } from "../src/stores/postgres/mod.ts";
import { postgresError } from "../src/stores/postgres/postgres_errors.ts";
import {
  deadlockVictim,
  runSqlStoreSuite,
  type SqlHarness,
  type SqlStore,
} from "./sql_store_cases.ts";
import { type SqlServer, startPostgres } from "./sql_servers.ts";

type Driver = "pg" | "postgres.js";

/** A harness over `server` whose clients are all ended on dispose. */
function harness(server: SqlServer, driver: Driver): SqlHarness {
  const ends: (() => Promise<unknown>)[] = [];
  const connect = (user: string, password: string, port = server.port) => {
    const options = {
      host: server.host,
      port,
      user,
      password,
      database: server.database,
    };
    if (driver === "pg") {
      const pool = new pg.Pool({ ...options, max: 4 });
      // An idle client's error (a killed server) is emitted on the pool: unheard, it would
      // crash the process.
      pool.on("error", () => {});
      ends.push(() => pool.end());
      return pool;
    }
    const sql = postgres({ ...options, max: 4, onnotice: () => {} });
    ends.push(() => sql.end({ timeout: 1 }));
    return sql;
  };
  const admin = new pg.Pool({
    host: server.host,
    port: server.port,
    user: server.user,
    password: server.password,
    database: server.database,
    max: 2,
  });
  admin.on("error", () => {});
  const exec = async (text: string, values: unknown[] = []) =>
    (await admin.query(text, values)).rows;
  return {
    label: `PostgreSQL via ${driver}`,
    store: (options?: PostgresStoreOptions) =>
      new PostgresStore(connect(server.user, server.password), options) as SqlStore,
    storeAs: (user, password, options) =>
      new PostgresStore(connect(user, password), options) as SqlStore,
    storeAt: (port) => new PostgresStore(connect(server.user, server.password, port)) as SqlStore,
    exec,
    async setValue(table, key, name, value) {
      await exec(`UPDATE ${table} SET value = ${value} WHERE hash_key = $1 AND name = $2`, [
        key,
        name,
      ]);
    },
    async value(table, key, name) {
      const rows = await exec(
        `SELECT value::text AS v FROM ${table} WHERE hash_key = $1 AND name = $2`,
        [key, name],
      );
      return rows[0]?.v as string | undefined;
    },
    async createAppUser(user, password, table) {
      await exec(`DROP ROLE IF EXISTS ${user}`).catch(() => {});
      await exec(`CREATE ROLE ${user} LOGIN PASSWORD '${password}'`).catch(() => {});
      await exec(`GRANT SELECT, INSERT, UPDATE, DELETE ON ${table} TO ${user}`);
    },
    async readOnly(user) {
      await exec(`ALTER ROLE ${user} SET default_transaction_read_only = on`);
      return async () => {
        await exec(`ALTER ROLE ${user} RESET default_transaction_read_only`);
      };
    },
    async unsafeDurability(user) {
      await exec(`ALTER ROLE ${user} SET synchronous_commit = off`);
      return {
        setting: /synchronous_commit is off/,
        undo: async () => {
          await exec(`ALTER ROLE ${user} RESET synchronous_commit`);
        },
      };
    },
    async notCrashSafeTable() {
      const table = `kvid_unlogged_${Date.now().toString(36)}`;
      await exec(PostgresStore.tableSql(table).replace("CREATE TABLE", "CREATE UNLOGGED TABLE"));
      return table;
    },
    async textValueTable() {
      const table = `kvid_text_${Date.now().toString(36)}`;
      await exec(PostgresStore.tableSql(table).replace("value bigint", "value text"));
      return table;
    },
    async [Symbol.asyncDispose]() {
      await Promise.all(ends.map((end) => end()));
      await admin.end();
    },
  };
}

Deno.test("PostgresStore refuses what is not a client, a table name that is not an identifier", () => {
  assert.throws(() => new PostgresStore({} as never), /npm:pg .* npm:postgres/);
  const pool = { query: () => Promise.resolve({ rows: [] }) };
  assert.throws(() => new PostgresStore(pool, { table: "kvid; DROP TABLE x" }), /identifier/);
  assert.throws(() => new PostgresStore(pool, { createTable: "no" as never }), /boolean/);
  assert.ok(PostgresStore.tableSql("ids.counters").includes("ids.counters ("));
});

Deno.test("PostgresStore on PostgreSQL 15: the SQL store cases, with pg and postgres.js", async (t) => {
  await using server = await startPostgres();
  await runSqlStoreSuite(t, server, ["pg", "postgres.js"] as const, harness);

  await t.step("a deadlock and a serialization failure are transient (unavailable)", async () => {
    const connect = () =>
      new pg.Client({
        host: server.host,
        port: server.port,
        user: server.user,
        password: server.password,
        database: server.database,
      });
    const a = connect();
    const b = connect();
    await a.connect();
    await b.connect();
    try {
      await a.query("CREATE TABLE IF NOT EXISTS kvid_locks (id int PRIMARY KEY, v int)");
      await a.query("INSERT INTO kvid_locks VALUES (1, 0), (2, 0) ON CONFLICT DO NOTHING");
      const victim = await deadlockVictim((q) => a.query(q), (q) => b.query(q), "BEGIN");
      const err = postgresError(victim, "kvid", "order", "kvid_counters");
      assert.equal(err.code, "unavailable", err.message);
      assert.match(err.message, /40P01/);
      // Serializable transactions that read what the other writes: one fails with 40001.
      await a.query("BEGIN ISOLATION LEVEL SERIALIZABLE");
      await b.query("BEGIN ISOLATION LEVEL SERIALIZABLE");
      await a.query("SELECT sum(v) FROM kvid_locks");
      await b.query("SELECT sum(v) FROM kvid_locks");
      await a.query("UPDATE kvid_locks SET v = v + 1 WHERE id = 1");
      await b.query("UPDATE kvid_locks SET v = v + 1 WHERE id = 2");
      await a.query("COMMIT");
      const serial = await b.query("COMMIT").then(() => undefined, (e: unknown) => e);
      assert.ok(serial, "the second commit failed");
      const mapped = postgresError(serial, "kvid", "order", "kvid_counters");
      assert.equal(mapped.code, "unavailable", mapped.message);
      assert.match(mapped.message, /40001/);
    } finally {
      await a.end();
      await b.end();
    }
  });
});
