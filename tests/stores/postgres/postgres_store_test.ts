/**
 * PostgresStore on a real PostgreSQL 15 this file starts: the shared SQL case suite through
 * `npm:pg` and through `npm:postgres` (postgres.js), and the errors a live server produces.
 */

import "../../support/deadline.ts"; // a time limit on every test of this file
import assert from "node:assert/strict";
import pg from "pg";
import postgres from "postgres";
import { KvId } from "../../../mod.ts";
import { PostgresStore, type PostgresStoreOptions } from "../../../src/stores/postgres/mod.ts";
import { postgresError } from "../../../src/stores/postgres/postgres_errors.ts";
import {
  deadlockVictim,
  runSqlStoreSuite,
  type SqlHarness,
  type SqlStore,
} from "../../support/sql_store_cases.ts";
import { type SqlServer, startPostgres } from "../../support/sql_servers.ts";

type Driver = "pg" | "postgres.js";

const GUARD = { floor: 0n, raiseTo: 0n, guard: true, exact: true };

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

  await t.step(
    "a connection exception the server sends (SQLSTATE 08P01) is transient",
    async () => {
      // A loopback proxy that, when armed, puts a message of no known type (byte 1) before the
      // client's next bytes: PostgreSQL answers FATAL 08P01 (protocol violation) and closes.
      const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
      let armed = false;
      const conns = new Set<Deno.Conn>();
      const piping: Promise<void>[] = [];
      const pipe = async (from: Deno.Conn, to: Deno.Conn, inject: boolean) => {
        try {
          for await (const chunk of from.readable.values({ preventCancel: true })) {
            if (inject && armed) {
              armed = false;
              await to.write(new Uint8Array([1, 0, 0, 0, 4]));
            }
            await to.write(chunk);
          }
        } catch { /* closed */ }
        for (const c of [from, to]) {
          try {
            c.close();
          } catch { /* closed already */ }
        }
      };
      const accepting = (async () => {
        for await (const client of listener) {
          const upstream = await Deno.connect({ hostname: server.host, port: server.port });
          conns.add(client).add(upstream);
          piping.push(pipe(client, upstream, true), pipe(upstream, client, false));
        }
      })().catch(() => {});
      const port = (listener.addr as Deno.NetAddr).port;
      const options = {
        host: "127.0.0.1",
        port,
        user: server.user,
        password: server.password,
        database: server.database,
      };
      const direct = new pg.Client(options);
      direct.on("error", () => {});
      const pool = new pg.Pool({ ...options, max: 1 });
      pool.on("error", () => {});
      try {
        await direct.connect();
        armed = true;
        const err = await direct.query("SELECT 1").then(
          () => undefined,
          (e: { code?: string }) => e,
        );
        assert.equal(err?.code, "08P01", String(err));
        assert.equal(postgresError(err, "kvid", "order", "kvid_counters").code, "connection");
        // Through a generator: the reservation that met it is retried on a new connection.
        await using id = new KvId("lost-link", {
          store: new PostgresStore(pool),
          minStep: 10,
          maxStep: 10,
          prefetchAt: 0,
          timeout: 10_000,
        });
        assert.deepEqual(await id.nextBatch(10), [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
        armed = true;
        const next = await id.next().then((v) => v, (e) => e);
        assert.ok(typeof next === "number" && next > 10, `after 08P01: ${next}`);
        assert.ok(id.stats().failures >= 1, "the reservation met the error");
      } finally {
        await direct.end().catch(() => {});
        await pool.end();
        listener.close();
        for (const c of conns) {
          try {
            c.close();
          } catch { /* closed already */ }
        }
        await accepting;
        await Promise.all(piping);
      }
    },
  );

  await t.step(
    "a table another process is creating: the loser of the race retries and serves",
    async () => {
      // The race staged, not hoped for: `admin` creates the table in a transaction left open, so
      // the store's probe finds none and its CREATE waits on admin's uncommitted catalog rows;
      // admin commits and the waiting CREATE fails (23505, the type exists) despite IF NOT
      // EXISTS. The store's one retry is a no-op and the reservation goes on.
      const options = {
        host: server.host,
        port: server.port,
        user: server.user,
        password: server.password,
        database: server.database,
      };
      const table = `kvid_race_${Date.now().toString(36)}`;
      const admin = new pg.Client(options);
      const watch = new pg.Client(options);
      const pool = new pg.Pool({ ...options, max: 1, application_name: "kvid-create-race" });
      pool.on("error", () => {});
      await admin.connect();
      await watch.connect();
      try {
        await admin.query("BEGIN");
        await admin.query(PostgresStore.tableSql(table));
        const store = new PostgresStore(pool, { table });
        const reserving = store.reserve("kvid", "order", 10, GUARD).then(
          (r) => r,
          (e: unknown) => e,
        );
        // Poll the server's own view until the store's CREATE waits on admin (bounded by the
        // file's deadline): a condition, not a guess at how long the store takes.
        for (;;) {
          const { rows } = await watch.query(
            `SELECT count(*)::int AS n FROM pg_stat_activity
WHERE application_name = 'kvid-create-race' AND wait_event_type = 'Lock'`,
          );
          if (rows[0].n > 0) break;
          await new Promise((r) => setTimeout(r, 10));
        }
        await admin.query("COMMIT");
        const got = await reserving;
        assert.deepEqual(got, { ranges: [{ first: 1n, last: 10n }], raised: false }, String(got));
        const { rows } = await admin.query(`SELECT value::text AS v FROM ${table}`);
        assert.deepEqual(rows, [{ v: "10" }]);
      } finally {
        await admin.end();
        await watch.end();
        await pool.end();
      }
    },
  );

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

Deno.test("PostgresStore durability: fsync and full_page_writes off are each a named problem", async () => {
  // Server-wide settings (no role can change them): a server of their own.
  await using server = await startPostgres({ settings: { fsync: "off", full_page_writes: "off" } });
  const pool = new pg.Pool({
    host: server.host,
    port: server.port,
    user: server.user,
    password: server.password,
    database: server.database,
    max: 1,
  });
  // pg's Pool.end() resolves before its sockets close: the server's stop can still reach one,
  // as an error event that, unheard, would crash the process.
  pool.on("error", () => {});
  try {
    const got = await new PostgresStore(pool).durability("kvid");
    assert.equal(got.durable, false);
    assert.equal(got.settings.fsync, "off");
    assert.equal(got.settings.full_page_writes, "off");
    assert.equal(got.problems.length, 2, got.problems.join("; "));
    assert.match(got.problems[0], /^fsync is off: .*set fsync = on$/);
    assert.match(got.problems[1], /^full_page_writes is off: .*set full_page_writes = on$/);
  } finally {
    await pool.end();
  }
});
