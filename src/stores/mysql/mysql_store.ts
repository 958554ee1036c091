/**
 * {@linkcode MySqlStore}: the counters of @kvid/core in a MySQL or MariaDB (InnoDB) table,
 * through a `npm:mysql2/promise` pool or connection, passed as is.
 *
 * @module
 */

import { KvIdError } from "../../contract/errors.ts";
import type {
  DurabilityOptions,
  IdRange,
  Reservation,
  ReserveOptions,
  Store,
  StoreDurability,
} from "../../contract/store.ts";
import {
  checkColumnTypes,
  checkSqlNames,
  checkTable,
  DAY_NAME,
  DEFAULT_TABLE,
  epochMs,
  exactInteger,
  layoutOf,
  MAX_ID,
  refuseFound,
  reservationOf,
  settingText,
  stepValue,
} from "../sql_table.ts";
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

/** What a statement other than a `SELECT` returned. */
interface Header {
  affectedRows: number;
  insertId: unknown;
}

// See PostgresStore: the rare path (a new counter, one below the floor) gives up after this many.
const MAX_ATTEMPTS = 8;

/**
 * A {@linkcode Store} on a MySQL or MariaDB table (InnoDB): pass it as the `store` option of
 * `KvId` or `DailyId`. One row per counter; a reservation is one
 * `UPDATE ... SET value = LAST_INSERT_ID(value + step)` (a row lock held for that statement
 * alone) whose result carries the new end exactly, to 2^63-1; see the module doc for the table,
 * the permissions and the guarantees.
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
export class MySqlStore implements Store {
  readonly #client: MySqlQueryable;
  readonly #table: string;
  readonly #create: boolean;
  #ready: Promise<void> | undefined;

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
    const table = options.table ?? DEFAULT_TABLE;
    checkTable("MySqlStore", table);
    const create = options.createTable ?? true;
    if (typeof create !== "boolean") {
      throw new TypeError(`MySqlStore option createTable must be a boolean, got ${create}`);
    }
    this.#client = client;
    this.#table = table;
    this.#create = create;
  }

  /** The counter table's name. */
  get table(): string {
    return this.#table;
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

  /**
   * Create the table if it is missing (what the first reservation does with `createTable` on).
   *
   * @example
   * ```ts ignore
   * await new MySqlStore(pool).ensureTable(); // e.g. in a migration step
   * ```
   */
  async ensureTable(): Promise<void> {
    await this.#createTable("", "");
  }

  async #createTable(key: string, field: string): Promise<void> {
    try {
      await this.#client.query(MySqlStore.tableSql(this.#table), []);
    } catch (err) {
      throw mysqlError(err, key, field, this.#table);
    }
  }

  /**
   * Reserve `count` IDs of counter `field` in hash `key`; see {@linkcode Store.reserve}.
   *
   * One `UPDATE ... SET value = LAST_INSERT_ID(value + count) WHERE ... AND value >= floor`
   * (its `insertId` is the new value); a counter that is missing or below the floor (`guard`)
   * takes a second statement, `INSERT ... ON DUPLICATE KEY UPDATE`, that inserts or raises it.
   */
  async reserve(
    key: string,
    field: string,
    count: number,
    options: ReserveOptions,
  ): Promise<Reservation> {
    if (!Number.isSafeInteger(count) || count < 1) {
      throw new RangeError(`MySqlStore.reserve: count must be a positive integer, got ${count}`);
    }
    checkSqlNames(key, field);
    const layout = layoutOf(options) ?? null;
    const t = this.#table;
    const floor = options.guard && options.floor > 0n ? options.floor : 0n;
    const raiseTo = options.raiseTo > MAX_ID ? MAX_ID : options.raiseTo;
    const start = (floor > 0n ? raiseTo : 0n) + BigInt(count);
    // Every number is sent as text and CAST in SQL: MySQL compares and adds a quoted number as
    // a double, which is inexact above 2^53.
    for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
      const done = await this.#write(
        key,
        field,
        `UPDATE ${t} SET value = LAST_INSERT_ID(value + CAST(? AS SIGNED)), modified = UTC_TIMESTAMP(6)
WHERE hash_key = ? AND name = ? AND value >= CAST(? AS SIGNED) AND layout <=> ?`,
        [String(count), key, field, String(floor), layout],
      );
      if (done.affectedRows > 0) {
        return reservationOf(done.insertId, count, false, layout ?? undefined, key, field);
      }
      if (start > MAX_ID) {
        throw new KvIdError("overflow", `raising the counter to ${raiseTo} would pass 2^63-1`, {
          key,
          field,
        });
      }
      // Missing (a new counter: 0), below the floor (raised to raiseTo first), or an interleaved
      // member's first use of a row at 0 without a layout (one saveStep made). insertId is the
      // new value, or 0 when the row was left alone (LAST_INSERT_ID(0)). The layout is set
      // first, correct whether the server assigns left to right (MySQL) or all at once
      // (SIMULTANEOUS_ASSIGNMENT): left to right, a row at 0 taken over with no floor is only
      // labelled here, and the next round's UPDATE increments it.
      const raised = await this.#write(
        key,
        field,
        `INSERT INTO ${t} (hash_key, name, value, layout, modified)
VALUES (?, ?, LAST_INSERT_ID(CAST(? AS SIGNED)), ?, UTC_TIMESTAMP(6))
ON DUPLICATE KEY UPDATE
  layout = IF(layout IS NULL AND ? IS NOT NULL AND value = 0, ?, layout),
  value = IF((layout <=> ? AND value >= 0 AND value < CAST(? AS SIGNED))
      OR (layout IS NULL AND ? IS NOT NULL AND value = 0),
    LAST_INSERT_ID(CAST(? AS SIGNED)), IF(LAST_INSERT_ID(0) = 0, value, value))`,
        [
          key,
          field,
          String(start),
          layout,
          layout,
          layout,
          layout,
          String(floor),
          layout,
          String(
            start,
          ),
        ],
      );
      if (exactInteger(raised.insertId) !== 0n) {
        return reservationOf(raised.insertId, count, floor > 0n, layout ?? undefined, key, field);
      }
      // Neither matched: moved by another process in between, another layout, or a negative
      // value (by hand).
      const found = await this.#select(
        key,
        field,
        `SELECT CAST(value AS CHAR) AS value, layout FROM ${t} WHERE hash_key = ? AND name = ?`,
        [key, field],
      );
      refuseFound(found[0], layout ?? undefined, key, field);
    }
    throw new KvIdError(
      "conflict",
      `the counter kept moving between the two statements of a reservation (${MAX_ATTEMPTS} attempts)`,
      { key, field },
    );
  }

  /**
   * Give back the unused tail `range` of the caller's last reservation; see
   * {@linkcode Store.release}: `UPDATE ... SET value = first - 1 WHERE value = last`.
   *
   * @param key The hash key.
   * @param field The counter.
   * @param range The unused IDs, ending at the end of the caller's last reservation.
   * @returns True when given back.
   */
  async release(key: string, field: string, range: IdRange): Promise<boolean> {
    if (range.first < 1n || range.last < range.first || range.last > MAX_ID) return false;
    checkSqlNames(key, field);
    const done = await this.#write(
      key,
      field,
      `UPDATE ${this.#table} SET value = CAST(? AS SIGNED), modified = UTC_TIMESTAMP(6)
WHERE hash_key = ? AND name = ? AND value = CAST(? AS SIGNED) AND layout IS NULL`,
      [String(range.first - 1n), key, field, String(range.last)],
    );
    return done.affectedRows === 1;
  }

  /**
   * The step the counter's processes last used (its row's `step` column); see
   * {@linkcode Store.loadStep}.
   *
   * @param key The hash key.
   * @param field The counter.
   * @returns The remembered step, or undefined (none, or not a positive safe integer).
   */
  async loadStep(key: string, field: string): Promise<number | undefined> {
    checkSqlNames(key, field);
    const rows = await this.#select(
      key,
      field,
      `SELECT CAST(step AS CHAR) AS step FROM ${this.#table} WHERE hash_key = ? AND name = ?`,
      [key, field],
    );
    return stepValue(rows[0]?.step);
  }

  /**
   * Remember `step` in the counter's row; see {@linkcode Store.saveStep}.
   *
   * @param key The hash key.
   * @param field The counter.
   * @param step The step to start from.
   */
  async saveStep(key: string, field: string, step: number): Promise<void> {
    checkSqlNames(key, field);
    await this.#write(
      key,
      field,
      `INSERT INTO ${this.#table} (hash_key, name, value, step, modified)
VALUES (?, ?, 0, CAST(? AS SIGNED), UTC_TIMESTAMP(6)) ON DUPLICATE KEY UPDATE step = CAST(? AS SIGNED)`,
      [key, field, String(step), String(step)],
    );
  }

  /**
   * Delete the rows of hash `key` whose name is a `yyyymmdd` day before `before`, nothing else:
   * a {@linkcode DailyId}'s cleanup. It picks `before` by the earlier of its clock and the
   * database's ({@linkcode MySqlStore.now}).
   *
   * @param key The hash key (a `DailyId`'s `key`).
   * @param before The first day kept, `yyyymmdd`.
   * @returns How many were deleted.
   */
  async deleteDaysBefore(key: string, before: string): Promise<number> {
    if (!DAY_NAME.test(before)) {
      throw new RangeError(`MySqlStore.deleteDaysBefore: not a yyyymmdd day: ${before}`);
    }
    const done = await this.#write(
      key,
      `<${before}`,
      `DELETE FROM ${this.#table}
WHERE hash_key = ? AND name REGEXP '^[0-9]{8}$' AND name < ? AND layout IS NULL`,
      [key, before],
    );
    return done.affectedRows;
  }

  /**
   * The database's clock (`UNIX_TIMESTAMP()`, whole seconds), in ms since the epoch; see
   * {@linkcode Store.now}.
   *
   * @returns The server's time.
   */
  async now(): Promise<number> {
    const rows = await this.#select("", "", "SELECT CAST(UNIX_TIMESTAMP() AS CHAR) AS s", []);
    return epochMs(Number(rows[0]?.s) * 1000, "UNIX_TIMESTAMP()");
  }

  /**
   * What the server can lose, read from its settings: `innodb_flush_log_at_trx_commit`,
   * `sync_binlog` (when the binary log is on), `innodb_doublewrite`, and the table's engine;
   * see {@linkcode StoreDurability}.
   *
   * @param key The hash key (named in errors).
   * @param options What the generator tells; its `stated` settings (the `serverSettings` option)
   *   stand in for a setting the server would not tell (read as `"unknown"`); a setting the server
   *   tells wins. `replicas` does not apply.
   * @returns The settings and the problems found.
   */
  async durability(key: string, options?: DurabilityOptions): Promise<StoreDurability> {
    const [schema, name] = this.#table.includes(".")
      ? this.#table.split(".")
      : [undefined, this.#table];
    const rows = await this.#select(
      key,
      "",
      `SELECT CAST(@@innodb_flush_log_at_trx_commit AS CHAR) AS innodb_flush_log_at_trx_commit,
CAST(@@sync_binlog AS CHAR) AS sync_binlog, CAST(@@log_bin AS CHAR) AS log_bin,
CAST(@@innodb_doublewrite AS CHAR) AS innodb_doublewrite,
(SELECT ENGINE FROM information_schema.TABLES
 WHERE TABLE_SCHEMA = COALESCE(?, DATABASE()) AND TABLE_NAME = ?) AS engine`,
      [schema ?? null, name],
    );
    const row = rows[0] ?? {};
    const settings: Record<string, string> = {};
    for (
      const s of [
        "innodb_flush_log_at_trx_commit",
        "sync_binlog",
        "log_bin",
        "innodb_doublewrite",
        "engine",
      ]
    ) {
      settings[s] = settingText(row[s]);
    }
    for (const [name, value] of Object.entries(options?.stated ?? {})) {
      if (settings[name] === "unknown") settings[name] = value;
    }
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
        `the table ${this.#table} is ENGINE=${settings.engine}, which is not crash-safe: ALTER TABLE ${this.#table} ENGINE=InnoDB`,
      );
    }
    // Nothing here loses a reservation without a crash (no eviction, no expiry).
    return { durable: problems.length === 0, settings, problems, lossWithoutCrash: false };
  }

  async #write(key: string, field: string, sql: string, values: unknown[]): Promise<Header> {
    const result = await this.#query(key, field, sql, values);
    const header = result as Partial<Header> | null;
    if (header === null || typeof header !== "object" || typeof header.affectedRows !== "number") {
      throw new KvIdError("reply", "the MySQL client returned no affectedRows for a write", {
        key,
        field,
      });
    }
    return header as Header;
  }

  async #select(
    key: string,
    field: string,
    sql: string,
    values: unknown[],
  ): Promise<Record<string, unknown>[]> {
    const rows = await this.#query(key, field, sql, values);
    if (!Array.isArray(rows)) {
      throw new KvIdError("reply", "the MySQL client returned no rows for a SELECT", {
        key,
        field,
      });
    }
    return rows as Record<string, unknown>[];
  }

  /** Run a statement; mysql2/promise resolves to `[result, fields]`: the result. */
  async #query(key: string, field: string, sql: string, values: unknown[]): Promise<unknown> {
    await this.#prepare(key, field);
    let reply: unknown;
    try {
      reply = await this.#client.query(sql, values);
    } catch (err) {
      throw mysqlError(err, key, field, this.#table);
    }
    return Array.isArray(reply) && reply.length === 2 &&
        (reply[1] === undefined || Array.isArray(reply[1]))
      ? reply[0]
      : reply;
  }

  /**
   * Refuse a table whose `value` or `step` is not `BIGINT` (made by hand as `VARCHAR` or
   * `DECIMAL`): MySQL would add to it as a double, inexact past 2^53. Once, on first use.
   */
  async #checkColumns(key: string, field: string): Promise<void> {
    const [schema, name] = this.#table.includes(".") ? this.#table.split(".") : [null, this.#table];
    let reply: unknown;
    try {
      reply = await this.#client.query(
        `SELECT COLUMN_NAME AS name, DATA_TYPE AS type FROM information_schema.COLUMNS
WHERE TABLE_SCHEMA = COALESCE(?, DATABASE()) AND TABLE_NAME = ?`,
        [schema, name],
      );
    } catch (err) {
      throw mysqlError(err, key, field, this.#table);
    }
    const rows = Array.isArray(reply) && Array.isArray(reply[0]) ? reply[0] : [];
    checkColumnTypes(rows, "bigint", this.#table, "MySqlStore", key, field);
  }

  /** On first use: find the table, creating it when missing and allowed (once per store). */
  #prepare(key: string, field: string): Promise<void> {
    this.#ready ??= (async () => {
      try {
        await this.#client.query(`SELECT 1 FROM ${this.#table} LIMIT 0`, []);
      } catch (err) {
        if (mysqlErrno(err) !== 1146 || !this.#create) {
          throw mysqlError(err, key, field, this.#table);
        }
        await this.#createTable(key, field);
      }
      await this.#checkColumns(key, field);
    })();
    const ready = this.#ready;
    // A failed check is tried again on the next call.
    ready.catch(() => {
      if (this.#ready === ready) this.#ready = undefined;
    });
    return ready;
  }
}
