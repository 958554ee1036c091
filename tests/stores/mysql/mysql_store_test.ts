/**
 * MySqlStore on a real MariaDB 10.11 this file starts: the shared SQL case suite through
 * `npm:mysql2/promise` (with and without `supportBigNumbers`/`bigNumberStrings`), and the errors
 * a live server produces.
 */

import "../../support/deadline.ts"; // a time limit on every test of this file
import assert from "node:assert/strict";
import mysql from "mysql2/promise";
import { KvId } from "../../../mod.ts";
import { MySqlStore, type MySqlStoreOptions } from "../../../src/stores/mysql/mod.ts";
import { mysqlError } from "../../../src/stores/mysql/mysql_errors.ts";
import {
  deadlockVictim,
  runSqlStoreSuite,
  type SqlHarness,
  type SqlStore,
} from "../../support/sql_store_cases.ts";
import { type SqlServer, startMariaDb } from "../../support/sql_servers.ts";
import { rejectsWith } from "../../support/assert.ts";

type Driver = "mysql2" | "mysql2 (bigNumberStrings)";

const GUARD = { floor: 0n, raiseTo: 0n, guard: true, exact: true };

/** A pool of `server`'s superuser on its database; the caller ends it. */
function superuserPool(server: SqlServer, connectionLimit: number) {
  return mysql.createPool({
    host: server.host,
    port: server.port,
    user: server.user,
    database: server.database,
    connectionLimit,
  });
}

/** A harness over `server` whose pools are all ended on dispose. */
function harness(server: SqlServer, driver: Driver): SqlHarness {
  const ends: (() => Promise<unknown>)[] = [];
  const connect = (user: string, password: string, port = server.port) => {
    const pool = mysql.createPool({
      host: server.host,
      port,
      user,
      password,
      database: server.database,
      connectionLimit: 4,
      ...(driver === "mysql2" ? {} : { supportBigNumbers: true, bigNumberStrings: true }),
    });
    ends.push(() => pool.end());
    return pool;
  };
  const admin = connect(server.user, server.password);
  const exec = async (sql: string, values: unknown[] = []) => {
    const [rows] = await admin.query(sql, values);
    return Array.isArray(rows) ? rows as Record<string, unknown>[] : [];
  };
  return {
    label: `MariaDB via ${driver}`,
    store: (options?: MySqlStoreOptions) =>
      new MySqlStore(connect(server.user, server.password), options) as SqlStore,
    storeAs: (user, password, options) =>
      new MySqlStore(connect(user, password), options) as SqlStore,
    storeAt: (port) => new MySqlStore(connect(server.user, server.password, port)) as SqlStore,
    exec,
    async setValue(table, key, name, value) {
      await exec(`UPDATE ${table} SET value = ${value} WHERE hash_key = ? AND name = ?`, [
        key,
        name,
      ]);
    },
    async value(table, key, name) {
      const rows = await exec(
        `SELECT CAST(value AS CHAR) AS v FROM ${table} WHERE hash_key = ? AND name = ?`,
        [key, name],
      );
      return rows[0]?.v as string | undefined;
    },
    async createAppUser(user, password, table) {
      await exec(`DROP USER IF EXISTS '${user}'@'%'`);
      await exec(`CREATE USER '${user}'@'%' IDENTIFIED BY '${password}'`);
      await exec(
        `GRANT SELECT, INSERT, UPDATE, DELETE ON ${server.database}.${table} TO '${user}'@'%'`,
      );
    },
    async readOnly() {
      await exec("SET GLOBAL read_only = 1");
      return async () => {
        await exec("SET GLOBAL read_only = 0");
      };
    },
    async unsafeDurability() {
      await exec("SET GLOBAL innodb_flush_log_at_trx_commit = 2");
      return {
        setting: /innodb_flush_log_at_trx_commit is 2/,
        undo: async () => {
          await exec("SET GLOBAL innodb_flush_log_at_trx_commit = 1");
        },
      };
    },
    async notCrashSafeTable() {
      const table = `kvid_myisam_${Date.now().toString(36)}`;
      // MyISAM keys are at most 1,000 bytes: shorter names for this one.
      await exec(
        MySqlStore.tableSql(table).replace("ENGINE=InnoDB", "ENGINE=MyISAM")
          .replaceAll("VARCHAR(255)", "VARCHAR(100)"),
      );
      return table;
    },
    async textValueTable() {
      const table = `kvid_text_${Date.now().toString(36)}`;
      await exec(MySqlStore.tableSql(table).replace("value BIGINT", "value VARCHAR(30)"));
      return table;
    },
    async [Symbol.asyncDispose]() {
      await Promise.all(ends.map((end) => end()));
    },
  };
}

Deno.test("MySqlStore refuses what is not a client, a table name that is not an identifier", () => {
  assert.throws(() => new MySqlStore({} as never), /mysql2\/promise/);
  const pool = { query: () => Promise.resolve([[], []]) };
  assert.throws(() => new MySqlStore(pool, { table: "`kvid`" }), /identifier/);
  assert.throws(() => new MySqlStore(pool, { createTable: 1 as never }), /boolean/);
  assert.ok(MySqlStore.tableSql("ids.counters").includes("ids.counters ("));
});

Deno.test("MySqlStore on MariaDB 10.11: the SQL store cases, with mysql2", async (t) => {
  await using server = await startMariaDb();
  await runSqlStoreSuite(t, server, ["mysql2", "mysql2 (bigNumberStrings)"] as const, harness);

  await t.step("names are case-sensitive: Order and order are two counters", async () => {
    const pool = superuserPool(server, 2);
    try {
      const store = new MySqlStore(pool, { table: "kvid_names" });
      const fixed = { store, minStep: 5, maxStep: 5, prefetchAt: 0 };
      await using upper = new KvId("Order", fixed);
      await using lower = new KvId("order", fixed);
      assert.deepEqual(await upper.nextBatch(5), [1, 2, 3, 4, 5]);
      assert.deepEqual(await lower.nextBatch(5), [1, 2, 3, 4, 5], "a counter of its own");
      const [rows] = await pool.query(
        "SELECT name, CAST(value AS CHAR) AS v FROM kvid_names ORDER BY BINARY name",
      );
      assert.deepEqual(
        (rows as { name: string; v: string }[]).map((r) => `${r.name}=${r.v}`),
        ["Order=5", "order=5"],
      );
      // A table made by hand with a collation that folds case: refused, naming the collation.
      await pool.query(
        MySqlStore.tableSql("kvid_names_ci").replaceAll("utf8mb4_bin", "utf8mb4_general_ci"),
      );
      await using folded = new KvId("Order", {
        store: new MySqlStore(pool, { table: "kvid_names_ci" }),
        timeout: 2_000,
      });
      await rejectsWith(folded.next(), "config", /collation utf8mb4_general_ci/);
    } finally {
      await pool.end();
    }
  });

  await t.step(
    "a client that does not answer [result, fields]: a reply error naming it",
    async () => {
      const pool = superuserPool(server, 2);
      // The real pool's replies, distorted: `answer` sees each reply and the statement.
      const through = (answer: (reply: unknown[], sql: string) => unknown, table: string) =>
        new MySqlStore({
          query: async (sql: string, values?: unknown[]) =>
            answer(await pool.query(sql, values) as unknown as unknown[], sql),
        } as never, { table });
      const isWrite = (sql: string) => /^(INSERT|UPDATE|DELETE)/.test(sql);
      try {
        const table = `kvid_shape_${Date.now().toString(36)}`;
        await pool.query(MySqlStore.tableSql(table));
        const shape = /did not resolve to \[result, fields\]: pass a npm:mysql2\/promise/;
        const notTuples: [string, (reply: unknown[]) => unknown][] = [
          ["the bare result", (reply) => reply[0]],
          ["three elements", (reply) => [...reply, []]],
          ["fields that are not a list", (reply) => [reply[0], "fields"]],
        ];
        for (const [what, answer] of notTuples) {
          const err = await rejectsWith(
            through(answer, table).reserve("kvid", "order", 10, GUARD),
            "reply",
            shape,
          );
          assert.match(err.message, new RegExp(`table ${table}`), what);
        }
        for (const header of [{}, null, 5, { affectedRows: "1" }]) {
          const store = through((reply, sql) => isWrite(sql) ? [header, undefined] : reply, table);
          await rejectsWith(
            store.reserve("kvid", "order", 10, GUARD),
            "reply",
            /returned no affectedRows for a write/,
          );
        }
        const selectAsWrite = through(
          (reply, sql) =>
            sql.startsWith("SELECT COLUMN_NAME") ? [{ affectedRows: 0 }, undefined] : reply,
          table,
        );
        await rejectsWith(
          selectAsWrite.reserve("kvid", "order", 10, GUARD),
          "reply",
          /returned no rows for a SELECT/,
        );
        // None of them moved the counter.
        const [rows] = await pool.query(`SELECT name FROM ${table}`);
        assert.deepEqual(rows, []);
      } finally {
        await pool.end();
      }
    },
  );

  await t.step(
    "a table qualified by another database is read there, not in the default one",
    async () => {
      const pool = superuserPool(server, 2);
      try {
        await pool.query("CREATE DATABASE IF NOT EXISTS kvid_other");
        // A good table of the same name in the default database: read by mistake, it would pass.
        await pool.query(MySqlStore.tableSql("kvid_there"));
        await pool.query(
          MySqlStore.tableSql("kvid_other.kvid_there").replace("value BIGINT", "value VARCHAR(30)"),
        );
        await rejectsWith(
          new MySqlStore(pool, { table: "kvid_other.kvid_there" }).reserve("kvid", "o", 1, GUARD),
          "config",
          /the column value of the table kvid_other\.kvid_there is varchar/,
        );
        await pool.query(MySqlStore.tableSql("kvid_fragile"));
        await pool.query(
          MySqlStore.tableSql("kvid_other.kvid_fragile").replace("ENGINE=InnoDB", "ENGINE=MyISAM")
            .replaceAll("VARCHAR(255)", "VARCHAR(100)"),
        );
        const got = await new MySqlStore(pool, { table: "kvid_other.kvid_fragile" }).durability(
          "kvid",
        );
        assert.equal(got.settings.engine, "MyISAM");
        assert.deepEqual(got.problems, [
          "the table kvid_other.kvid_fragile is ENGINE=MyISAM, which is not crash-safe: ALTER TABLE kvid_other.kvid_fragile ENGINE=InnoDB",
        ]);
      } finally {
        await pool.query("DROP DATABASE IF EXISTS kvid_other");
        await pool.end();
      }
    },
  );

  await t.step("a deadlock is transient (unavailable)", async () => {
    const options = {
      host: server.host,
      port: server.port,
      user: server.user,
      database: server.database,
    };
    const a = await mysql.createConnection(options);
    const b = await mysql.createConnection(options);
    try {
      await a.query(
        "CREATE TABLE IF NOT EXISTS kvid_locks (id INT PRIMARY KEY, v INT) ENGINE=InnoDB",
      );
      await a.query("INSERT IGNORE INTO kvid_locks VALUES (1, 0), (2, 0)");
      const victim = await deadlockVictim(
        (q) => a.query(q),
        (q) => b.query(q),
        "START TRANSACTION",
      );
      const err = mysqlError(victim, "kvid", "order", "kvid_counters");
      assert.equal(err.code, "unavailable", err.message);
      assert.match(err.message, /1213/);
    } finally {
      await a.end();
      await b.end();
    }
  });
});

Deno.test("MySqlStore durability: each unsafe server setting is a named problem", async () => {
  // Settings no session can change (the binary log, the doublewrite buffer): a server of their own.
  await using server = await startMariaDb({
    settings: {
      "log-bin": "kvid-bin",
      "sync-binlog": "0",
      "innodb-doublewrite": "0",
      "innodb-flush-log-at-trx-commit": "0",
    },
  });
  const pool = superuserPool(server, 1);
  try {
    const store = new MySqlStore(pool);
    await store.ensureTable();
    const got = await store.durability("kvid");
    assert.equal(got.durable, false);
    assert.deepEqual(got.problems, [
      "innodb_flush_log_at_trx_commit is 0: a crash of the server loses about the last second of reservations; set innodb_flush_log_at_trx_commit = 1",
      "the binary log is on and sync_binlog is 0: after a crash of the machine, recovery rolls back reservations the binary log lost; set sync_binlog = 1",
      "innodb_doublewrite is off: a crash of the machine can leave torn pages in the table; set innodb_doublewrite = ON",
    ]);
    // At 2 the log is written at each commit and flushed once a second: only the machine's crash
    // loses it. With sync_binlog = 1 the binary log is no problem, though it is on.
    await pool.query("SET GLOBAL innodb_flush_log_at_trx_commit = 2");
    await pool.query("SET GLOBAL sync_binlog = 1");
    const then = await store.durability("kvid");
    assert.equal(then.settings.log_bin, "ON");
    assert.deepEqual(then.problems, [
      "innodb_flush_log_at_trx_commit is 2: a crash of the machine loses about the last second of reservations; set innodb_flush_log_at_trx_commit = 1",
      "innodb_doublewrite is off: a crash of the machine can leave torn pages in the table; set innodb_doublewrite = ON",
    ]);
  } finally {
    await pool.end();
  }
});
