/**
 * {@linkcode MySqlStore}: the counters of @kvid/core in a MySQL or MariaDB (InnoDB) table,
 * through a `npm:mysql2/promise` pool or connection, passed as is.
 *
 * @module
 */

import { KvIdError } from "../../contract/errors.ts";
import type { Store } from "../../contract/store.ts";
import { type SqlDialect, SqlTableStore } from "../sql/sql_table_store.ts";
import {
  checkTable,
  DEFAULT_TABLE,
  epochMs,
  exactInteger,
  sqlCounter,
} from "../sql/table_values.ts";
import { mysqlErrno, mysqlError } from "./mysql_errors.ts";

/**
 * A `npm:mysql2/promise` `Pool`, `PoolConnection` or `Connection`: anything with
 * `query(sql, values)` resolving to `[result, fields]` (rows for a `SELECT`, a header with
 * `affectedRows` and `insertId` otherwise). A callback pool is passed as `pool.promise()`.
 *
 * @example The shape, by hand
 * ```ts
 * import type { MySqlQueryable } from "@kvid/core/mysql";
 * import assert from "node:assert/strict";
 *
 * const fake: MySqlQueryable = {
 *   query: () => Promise.resolve([{ affectedRows: 1, insertId: 10 }, undefined]),
 * };
 * assert.ok(Array.isArray(await fake.query("UPDATE ...", [])));
 * ```
 */
export interface MySqlQueryable {
  /** Run one statement with `?` placeholders. */
  query(sql: string, values: unknown[]): Promise<unknown>;
}

/**
 * Options of {@linkcode MySqlStore}.
 *
 * @example A table of its own name, created by a migration
 * ```ts
 * import type { MySqlStoreOptions } from "@kvid/core/mysql";
 * import assert from "node:assert/strict";
 *
 * const options: MySqlStoreOptions = { table: "ids.counters", createTable: false };
 * assert.ok(options.createTable === false);
 * ```
 */
export interface MySqlStoreOptions {
  /**
   * The counter table, optionally database-qualified (`"ids.counters"`): a plain identifier.
   *
   * @default {"kvid_counters"}
   */
  table?: string;
  /**
   * Create the table (`CREATE TABLE IF NOT EXISTS`) on first use when it is missing. False for a
   * user without DDL rights: a missing table is then a `"config"` error naming the DDL
   * ({@linkcode MySqlStore.tableSql}).
   *
   * @default {true}
   */
  createTable?: boolean;
}

/**
 * A {@linkcode Store} on a MySQL or MariaDB table (InnoDB): pass it as the `store` option of
 * `KvId` or `DailyId`. One row per counter; a reservation is one
 * `UPDATE ... SET value = LAST_INSERT_ID(value + step)` (a row lock held for that statement
 * alone) whose result carries the new end exactly, to 2^63-1; a counter that is missing or below
 * the floor takes a second statement, `INSERT ... ON DUPLICATE KEY UPDATE`. See the module doc
 * for the table, the permissions and the guarantees; the methods are {@linkcode SqlTableStore}'s.
 *
 * The pool stays yours: the store never closes it.
 *
 * @example With `npm:mysql2`
 * ```ts ignore
 * import mysql from "npm:mysql2/promise";
 * import { KvId } from "@kvid/core";
 * import { MySqlStore } from "@kvid/core/mysql";
 *
 * const pool = mysql.createPool(Deno.env.get("MYSQL_URL")!);
 * export const ORDER_ID = new KvId("order", { store: new MySqlStore(pool) });
 * console.log(await ORDER_ID.next()); // 1, 2, 3, ...
 * await ORDER_ID.close(); // at exit: the unused rest of the range goes back, then the pool
 * await pool.end();
 * ```
 */
export class MySqlStore extends SqlTableStore implements Store {
  /**
   * Make a store on `client`; nothing is sent until the first reservation.
   *
   * @param client A `mysql2/promise` pool or connection.
   * @param options See {@linkcode MySqlStoreOptions}.
   */
  constructor(client: MySqlQueryable, options: MySqlStoreOptions = {}) {
    if (typeof (client as Partial<MySqlQueryable> | null)?.query !== "function") {
      throw new TypeError(
        "MySqlStore takes a npm:mysql2/promise pool or connection (query(sql, values)); a callback pool as pool.promise()",
      );
    }
    super("MySqlStore", options, (table) => mysqlDialect(client, table));
  }

  /**
   * The DDL of the counter table, for a migration or a DBA: what the store runs on first use
   * with `createTable` on. The names are `utf8mb4_bin`, so `"Order"` and `"order"` are two
   * counters.
   *
   * @example
   * ```ts
   * import { MySqlStore } from "@kvid/core/mysql";
   * import assert from "node:assert/strict";
   *
   * assert.ok(MySqlStore.tableSql().includes("ENGINE=InnoDB"));
   * ```
   *
   * @param table The table's name.
   * @returns One `CREATE TABLE IF NOT EXISTS` statement.
   */
  static tableSql(table: string = DEFAULT_TABLE): string {
    checkTable("MySqlStore.tableSql", table);
    return `CREATE TABLE IF NOT EXISTS ${table} (
  hash_key VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
  name VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
  value BIGINT NOT NULL DEFAULT 0,
  step BIGINT NULL,
  layout VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL,
  modified DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  PRIMARY KEY (hash_key, name)
) ENGINE=InnoDB`;
  }
}

/** What a statement other than a `SELECT` returned. */
interface Header {
  affectedRows: number;
  insertId: unknown;
}

/** A client that answered a statement without what it returns: mapped to `"reply"`. */
class NoResult extends Error {}

/** Run a statement; mysql2/promise resolves to `[result, fields]`: the result. */
async function result(client: MySqlQueryable, sql: string, values: unknown[]): Promise<unknown> {
  const reply = await client.query(sql, values);
  if (
    !Array.isArray(reply) || reply.length !== 2 ||
    !(reply[1] === undefined || Array.isArray(reply[1]))
  ) {
    throw new NoResult(
      "the MySQL client did not resolve to [result, fields]: pass a npm:mysql2/promise pool or connection",
    );
  }
  return reply[0];
}

/** A write's header, checked (a client that returned none is a `"reply"` error). */
async function write(client: MySqlQueryable, sql: string, values: unknown[]): Promise<Header> {
  const header = await result(client, sql, values) as Partial<Header> | null;
  if (header === null || typeof header !== "object" || typeof header.affectedRows !== "number") {
    throw new NoResult("the MySQL client returned no affectedRows for a write");
  }
  return header as Header;
}

/** A `SELECT`'s rows, checked (a client that returned none is a `"reply"` error). */
async function select(
  client: MySqlQueryable,
  sql: string,
  values: unknown[],
): Promise<Record<string, unknown>[]> {
  const rows = await result(client, sql, values);
  if (!Array.isArray(rows)) {
    throw new NoResult("the MySQL client returned no rows for a SELECT");
  }
  return rows as Record<string, unknown>[];
}

// What durability() reads, as MySQL names it (and the table's engine).
const SETTINGS = [
  "innodb_flush_log_at_trx_commit",
  "sync_binlog",
  "log_bin",
  "innodb_doublewrite",
  "engine",
];

/**
 * MySQL's statements on `t`. Every number is sent as text and CAST in SQL: MySQL compares and
 * adds a quoted number as a double, which is inexact above 2^53.
 */
function mysqlDialect(client: MySqlQueryable, t: string): SqlDialect {
  const [schema, name] = t.includes(".") ? t.split(".") : [null, t];
  return {
    error: (err, key, field) =>
      err instanceof NoResult
        ? new KvIdError("reply", err.message, sqlCounter(t, key, field))
        : mysqlError(err, key, field, t),
    isMissingTable: (err) => mysqlErrno(err) === 1146,
    probe: async () => void await client.query(`SELECT 1 FROM ${t} LIMIT 0`, []),
    createTable: async () => void await client.query(MySqlStore.tableSql(t), []),
    columns: () =>
      select(
        client,
        `SELECT COLUMN_NAME AS name, DATA_TYPE AS type, COLLATION_NAME AS collation
FROM information_schema.COLUMNS
WHERE TABLE_SCHEMA = COALESCE(?, DATABASE()) AND TABLE_NAME = ?`,
        [schema, name],
      ),
    async increment(key, field, count, floor, layout) {
      const done = await write(
        client,
        `UPDATE ${t} SET value = LAST_INSERT_ID(value + CAST(? AS SIGNED)), modified = UTC_TIMESTAMP(6)
WHERE hash_key = ? AND name = ? AND value >= CAST(? AS SIGNED) AND layout <=> ?`,
        [String(count), key, field, String(floor), layout],
      );
      return done.affectedRows > 0 ? done.insertId : undefined;
    },
    async insertOrRaise(key, field, start, floor, layout) {
      // insertId is the new value, or 0 when the row was left alone (LAST_INSERT_ID(0)). The
      // layout is set first, correct whether the server assigns left to right (MySQL) or all at
      // once (SIMULTANEOUS_ASSIGNMENT): left to right, a row at 0 taken over with no floor is
      // only labelled here, and the next round's UPDATE increments it.
      const s = String(start);
      const done = await write(
        client,
        `INSERT INTO ${t} (hash_key, name, value, layout, modified)
VALUES (?, ?, LAST_INSERT_ID(CAST(? AS SIGNED)), ?, UTC_TIMESTAMP(6))
ON DUPLICATE KEY UPDATE
  layout = IF(layout IS NULL AND ? IS NOT NULL AND value = 0, ?, layout),
  value = IF((layout <=> ? AND value >= 0 AND value < CAST(? AS SIGNED))
      OR (layout IS NULL AND ? IS NOT NULL AND value = 0),
    LAST_INSERT_ID(CAST(? AS SIGNED)), IF(LAST_INSERT_ID(0) = 0, value, value))`,
        [key, field, s, layout, layout, layout, layout, String(floor), layout, s],
      );
      return exactInteger(done.insertId) !== 0n ? done.insertId : undefined;
    },
    async find(key, field) {
      const rows = await select(
        client,
        `SELECT CAST(value AS CHAR) AS value, layout FROM ${t} WHERE hash_key = ? AND name = ?`,
        [key, field],
      );
      return rows[0];
    },
    async counters(key, names) {
      const only = names === undefined ? "" : ` AND name IN (${names.map(() => "?").join(", ")})`;
      return await select(
        client,
        `SELECT name, CAST(value AS CHAR) AS value, layout FROM ${t}
WHERE hash_key = ? AND (value > 0 OR layout IS NOT NULL)${only}`,
        [key, ...names ?? []],
      );
    },
    async release(key, field, to, from) {
      const done = await write(
        client,
        `UPDATE ${t} SET value = CAST(? AS SIGNED), modified = UTC_TIMESTAMP(6)
WHERE hash_key = ? AND name = ? AND value = CAST(? AS SIGNED) AND layout IS NULL`,
        [String(to), key, field, String(from)],
      );
      return done.affectedRows === 1;
    },
    async loadStep(key, field) {
      const rows = await select(
        client,
        `SELECT CAST(step AS CHAR) AS step FROM ${t} WHERE hash_key = ? AND name = ?`,
        [key, field],
      );
      return rows[0]?.step;
    },
    async saveStep(key, field, step) {
      await write(
        client,
        `INSERT INTO ${t} (hash_key, name, value, step, modified)
VALUES (?, ?, 0, CAST(? AS SIGNED), UTC_TIMESTAMP(6)) ON DUPLICATE KEY UPDATE step = CAST(? AS SIGNED)`,
        [key, field, String(step), String(step)],
      );
    },
    async deleteDaysBefore(key, before) {
      const done = await write(
        client,
        `DELETE FROM ${t}
WHERE hash_key = ? AND name REGEXP '^[0-9]{8}$' AND name < ? AND layout IS NULL`,
        [key, before],
      );
      return done.affectedRows;
    },
    async now() {
      const rows = await select(client, "SELECT CAST(UNIX_TIMESTAMP() AS CHAR) AS s", []);
      return epochMs(rows[0]?.s, "UNIX_TIMESTAMP()", 1000);
    },
    async settings() {
      const rows = await select(
        client,
        `SELECT CAST(@@innodb_flush_log_at_trx_commit AS CHAR) AS innodb_flush_log_at_trx_commit,
CAST(@@sync_binlog AS CHAR) AS sync_binlog, CAST(@@log_bin AS CHAR) AS log_bin,
CAST(@@innodb_doublewrite AS CHAR) AS innodb_doublewrite,
(SELECT ENGINE FROM information_schema.TABLES
 WHERE TABLE_SCHEMA = COALESCE(?, DATABASE()) AND TABLE_NAME = ?) AS engine`,
        [schema, name],
      );
      const row = rows[0] ?? {};
      return Object.fromEntries(SETTINGS.map((setting) => [setting, row[setting]]));
    },
    problems(settings) {
      const problems: string[] = [];
      const flush = settings.innodb_flush_log_at_trx_commit;
      if (flush !== "1") {
        problems.push(
          `innodb_flush_log_at_trx_commit is ${flush}: a crash of the ${
            flush === "2" ? "machine" : "server"
          } loses about the last second of reservations; set innodb_flush_log_at_trx_commit = 1`,
        );
      }
      if (/^(1|ON)$/i.test(settings.log_bin) && settings.sync_binlog !== "1") {
        problems.push(
          `the binary log is on and sync_binlog is ${settings.sync_binlog}: after a crash of the machine, recovery rolls back reservations the binary log lost; set sync_binlog = 1`,
        );
      }
      if (/^(0|OFF)$/i.test(settings.innodb_doublewrite)) {
        problems.push(
          "innodb_doublewrite is off: a crash of the machine can leave torn pages in the table; set innodb_doublewrite = ON",
        );
      }
      if (settings.engine !== "unknown" && settings.engine.toLowerCase() !== "innodb") {
        problems.push(
          `the table ${t} is ENGINE=${settings.engine}, which is not crash-safe: ALTER TABLE ${t} ENGINE=InnoDB`,
        );
      }
      return problems;
    },
  };
}
