/**
 * {@linkcode PostgresStore}: the counters of @kvid/core in a PostgreSQL table, through the
 * client of `npm:pg` or `npm:postgres` (postgres.js), passed as is.
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
  layoutOf,
  MAX_ID,
  refuseFound,
  reservationOf,
  settingText,
  stepValue,
} from "../sql_table.ts";
import { postgresError, sqlState } from "./postgres_errors.ts";

/**
 * A node-postgres (`npm:pg`) `Pool`, `Client` or `PoolClient`: anything with
 * `query(text, values)` resolving to `{ rows }`. Passed as is.
 *
 * @example The shape, by hand
 * ```ts
 * import type { PgQueryable } from "@kvid/core/postgres";
 * import assert from "node:assert/strict";
 *
 * const fake: PgQueryable = { query: () => Promise.resolve({ rows: [{ value: "10" }] }) };
 * assert.ok((await fake.query("SELECT 1", [])).rows[0].value === "10");
 * ```
 */
export interface PgQueryable {
  /** Run one parameterized statement (`$1`, `$2`, ...); the store sends every value as text. */
  query(text: string, values: (string | null)[]): Promise<{ rows: Record<string, unknown>[] }>;
}

/**
 * A postgres.js (`npm:postgres`) `sql` instance: anything with `unsafe(text, values)` resolving
 * to the rows. Passed as is.
 *
 * @example The shape, by hand
 * ```ts
 * import type { PostgresJsSql } from "@kvid/core/postgres";
 * import assert from "node:assert/strict";
 *
 * const fake: PostgresJsSql = { unsafe: () => Promise.resolve([{ value: "10" }]) };
 * assert.ok((await fake.unsafe("SELECT 1", []))[0].value === "10");
 * ```
 */
export interface PostgresJsSql {
  /** Run one parameterized statement (`$1`, `$2`, ...); the store sends every value as text. */
  unsafe(
    text: string,
    values: (string | null)[],
  ): PromiseLike<ArrayLike<Record<string, unknown>>>;
}

/**
 * The PostgreSQL clients {@linkcode PostgresStore} takes: a `pg` pool or client
 * ({@linkcode PgQueryable}) or a postgres.js `sql` ({@linkcode PostgresJsSql}).
 *
 * @example Either driver
 * ```ts ignore
 * import pg from "npm:pg";
 * import postgres from "npm:postgres";
 * import { PostgresStore } from "@kvid/core/postgres";
 *
 * const a = new PostgresStore(new pg.Pool({ connectionString: Deno.env.get("DATABASE_URL") }));
 * const b = new PostgresStore(postgres(Deno.env.get("DATABASE_URL")!));
 * ```
 */
export type PostgresClient = PgQueryable | PostgresJsSql;

/**
 * Options of {@linkcode PostgresStore}.
 *
 * @example A table of its own name, created by a migration
 * ```ts
 * import type { PostgresStoreOptions } from "@kvid/core/postgres";
 * import assert from "node:assert/strict";
 *
 * const options: PostgresStoreOptions = { table: "ids.counters", createTable: false };
 * assert.ok(options.createTable === false);
 * ```
 */
export interface PostgresStoreOptions {
  /**
   * The counter table, optionally schema-qualified (`"ids.counters"`): a plain identifier.
   *
   * @default {"kvid_counters"}
   */
  table?: string;
  /**
   * Create the table (`CREATE TABLE IF NOT EXISTS`) on first use when it is missing. False for a
   * user without DDL rights: a missing table is then a `"config"` error naming the DDL
   * ({@linkcode PostgresStore.tableSql}).
   *
   * @default {true}
   */
  createTable?: boolean;
}

// A reservation that keeps finding the counter moved by others between its two statements
// (only on the rare path: a new counter, or one below the floor) gives up after this many.
const MAX_ATTEMPTS = 8;

/**
 * A {@linkcode Store} on a PostgreSQL table: pass it as the `store` option of `KvId` or
 * `DailyId`. One row per counter; a reservation is one `UPDATE ... RETURNING` (a row lock held
 * for that statement alone), exact to 2^63-1; see the module doc for the table, the
 * permissions and the guarantees.
 *
 * The client stays yours: the store never closes it.
 *
 * @example With `npm:pg`
 * ```ts ignore
 * import pg from "npm:pg";
 * import { KvId } from "@kvid/core";
 * import { PostgresStore } from "@kvid/core/postgres";
 *
 * const pool = new pg.Pool({ connectionString: Deno.env.get("DATABASE_URL") });
 * export const ORDER_ID = new KvId("order", { store: new PostgresStore(pool) });
 * console.log(await ORDER_ID.next()); // 1, 2, 3, ...
 * await ORDER_ID.close();
 * await pool.end();
 * ```
 */
export class PostgresStore implements Store {
  readonly #run: (text: string, values: (string | null)[]) => Promise<Record<string, unknown>[]>;
  readonly #table: string;
  readonly #create: boolean;
  #ready: Promise<void> | undefined;

  /**
   * Make a store on `client`; nothing is sent until the first reservation.
   *
   * @param client A `pg` pool or client, or a postgres.js `sql`.
   * @param options See {@linkcode PostgresStoreOptions}.
   */
  constructor(client: PostgresClient, options: PostgresStoreOptions = {}) {
    const table = options.table ?? DEFAULT_TABLE;
    checkTable("PostgresStore", table);
    const create = options.createTable ?? true;
    if (typeof create !== "boolean") {
      throw new TypeError(`PostgresStore option createTable must be a boolean, got ${create}`);
    }
    if (typeof (client as Partial<PostgresJsSql> | null)?.unsafe === "function") {
      const sql = client as PostgresJsSql;
      this.#run = async (text, values) => Array.from(await sql.unsafe(text, values));
    } else if (typeof (client as Partial<PgQueryable> | null)?.query === "function") {
      const pg = client as PgQueryable;
      this.#run = async (text, values) => (await pg.query(text, values)).rows;
    } else {
      throw new TypeError(
        "PostgresStore takes a client of npm:pg (Pool, Client: query(text, values)) or npm:postgres (sql: unsafe(text, values))",
      );
    }
    this.#table = table;
    this.#create = create;
  }

  /** The counter table's name. */
  get table(): string {
    return this.#table;
  }

  /**
   * The DDL of the counter table, for a migration or a DBA: what the store runs on first use
   * with `createTable` on.
   *
   * @example
   * ```ts
   * import { PostgresStore } from "@kvid/core/postgres";
   * import assert from "node:assert/strict";
   *
   * assert.ok(PostgresStore.tableSql().startsWith("CREATE TABLE IF NOT EXISTS kvid_counters ("));
   * ```
   *
   * @param table The table's name.
   * @returns One `CREATE TABLE IF NOT EXISTS` statement.
   */
  static tableSql(table: string = DEFAULT_TABLE): string {
    checkTable("PostgresStore.tableSql", table);
    return `CREATE TABLE IF NOT EXISTS ${table} (
  hash_key text NOT NULL,
  name text NOT NULL,
  value bigint NOT NULL DEFAULT 0,
  step bigint,
  layout text,
  modified timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (hash_key, name)
)`;
  }

  /**
   * Create the table if it is missing (what the first reservation does with `createTable` on).
   *
   * @example
   * ```ts ignore
   * await new PostgresStore(pool).ensureTable(); // e.g. in a migration step
   * ```
   */
  async ensureTable(): Promise<void> {
    await this.#createTable("", "");
  }

  async #createTable(key: string, field: string): Promise<void> {
    try {
      await this.#run(PostgresStore.tableSql(this.#table), []);
    } catch (err) {
      // Two processes creating it at once: one wins, the other sees the type or table exist.
      if (sqlState(err) === "23505" || sqlState(err) === "42P07") return;
      throw postgresError(err, key, field, this.#table);
    }
  }

  /**
   * Reserve `count` IDs of counter `field` in hash `key`; see {@linkcode Store.reserve}.
   *
   * One `UPDATE ... SET value = value + count WHERE ... AND value >= floor RETURNING value`;
   * a counter that is missing or below the floor (`guard`) takes a second statement that
   * inserts or raises it, `INSERT ... ON CONFLICT DO UPDATE ... WHERE value < floor`.
   */
  async reserve(
    key: string,
    field: string,
    count: number,
    options: ReserveOptions,
  ): Promise<Reservation> {
    if (!Number.isSafeInteger(count) || count < 1) {
      throw new RangeError(`PostgresStore.reserve: count must be a positive integer, got ${count}`);
    }
    checkSqlNames(key, field);
    const layout = layoutOf(options);
    const t = this.#table;
    const floor = options.guard && options.floor > 0n ? options.floor : 0n;
    const raiseTo = options.raiseTo > MAX_ID ? MAX_ID : options.raiseTo;
    const start = (floor > 0n ? raiseTo : 0n) + BigInt(count);
    for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
      const rows = await this.#query(
        key,
        field,
        `UPDATE ${t} SET value = value + $3::bigint, modified = now()
WHERE hash_key = $1 AND name = $2 AND value >= $4::bigint AND layout IS NOT DISTINCT FROM $5::text
RETURNING value::text AS value`,
        [key, field, String(count), String(floor), layout ?? null],
      );
      if (rows.length > 0) {
        return this.#reservation(rows[0].value, count, false, layout, key, field);
      }
      if (start > MAX_ID) {
        throw new KvIdError("overflow", `raising the counter to ${raiseTo} would pass 2^63-1`, {
          key,
          field,
        });
      }
      // Missing (a new counter: 0), below the floor (raised to raiseTo first), or an interleaved
      // member's first use of a row at 0 without a layout (one saveStep made): the layout is
      // recorded with the value, in the same statement.
      const raised = await this.#query(
        key,
        field,
        `INSERT INTO ${t} AS c (hash_key, name, value, layout, modified)
VALUES ($1, $2, $3::bigint, $5::text, now())
ON CONFLICT (hash_key, name) DO UPDATE
SET value = excluded.value, layout = excluded.layout, modified = now()
WHERE (c.layout IS NOT DISTINCT FROM $5::text AND c.value >= 0 AND c.value < $4::bigint)
  OR ($5::text IS NOT NULL AND c.layout IS NULL AND c.value = 0)
RETURNING value::text AS value`,
        [key, field, String(start), String(floor), layout ?? null],
      );
      if (raised.length > 0) {
        return this.#reservation(raised[0].value, count, floor > 0n, layout, key, field);
      }
      // Neither matched: moved by another process in between, another layout, or a negative
      // value (by hand).
      const found = await this.#query(
        key,
        field,
        `SELECT value::text AS value, layout FROM ${t} WHERE hash_key = $1 AND name = $2`,
        [key, field],
      );
      refuseFound(found[0], layout, key, field);
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
    const rows = await this.#query(
      key,
      field,
      `UPDATE ${this.#table} SET value = $3::bigint, modified = now()
WHERE hash_key = $1 AND name = $2 AND value = $4::bigint AND layout IS NULL RETURNING 1 AS released`,
      [key, field, String(range.first - 1n), String(range.last)],
    );
    return rows.length === 1;
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
    const rows = await this.#query(
      key,
      field,
      `SELECT step::text AS step FROM ${this.#table} WHERE hash_key = $1 AND name = $2`,
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
    await this.#query(
      key,
      field,
      `INSERT INTO ${this.#table} AS c (hash_key, name, value, step) VALUES ($1, $2, 0, $3::bigint)
ON CONFLICT (hash_key, name) DO UPDATE SET step = excluded.step`,
      [key, field, String(step)],
    );
  }

  /**
   * Delete the rows of hash `key` whose name is a `yyyymmdd` day before `before`, nothing else:
   * a {@linkcode DailyId}'s cleanup. It picks `before` by the earlier of its clock and the
   * database's ({@linkcode PostgresStore.now}).
   *
   * @param key The hash key (a `DailyId`'s `key`).
   * @param before The first day kept, `yyyymmdd`.
   * @returns How many were deleted.
   */
  async deleteDaysBefore(key: string, before: string): Promise<number> {
    if (!DAY_NAME.test(before)) {
      throw new RangeError(`PostgresStore.deleteDaysBefore: not a yyyymmdd day: ${before}`);
    }
    const rows = await this.#query(
      key,
      `<${before}`,
      `WITH gone AS (DELETE FROM ${this.#table}
WHERE hash_key = $1 AND name ~ '^[0-9]{8}$' AND name < $2 AND layout IS NULL RETURNING 1)
SELECT count(*)::text AS n FROM gone`,
      [key, before],
    );
    return Number(rows[0]?.n ?? 0);
  }

  /**
   * The database's clock (`clock_timestamp()`), in ms since the epoch; see
   * {@linkcode Store.now}.
   *
   * @returns The server's time.
   */
  async now(): Promise<number> {
    const rows = await this.#query(
      "",
      "",
      "SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint::text AS ms",
      [],
    );
    return epochMs(rows[0]?.ms, "clock_timestamp()");
  }

  /**
   * What the server can lose, read from its settings: `fsync`, `synchronous_commit`,
   * `full_page_writes`, and whether the table is `UNLOGGED`; see {@linkcode StoreDurability}.
   *
   * @param key The hash key (named in errors).
   * @param options What the generator tells; its `stated` settings (the `serverSettings` option)
   *   stand in for a setting the server would not tell (read as `"unknown"`); a setting the server
   *   tells wins. `replicas` does not apply.
   * @returns The settings and the problems found.
   */
  async durability(key: string, options?: DurabilityOptions): Promise<StoreDurability> {
    const rows = await this.#query(
      key,
      "",
      `SELECT current_setting('fsync') AS fsync,
current_setting('synchronous_commit') AS synchronous_commit,
current_setting('full_page_writes') AS full_page_writes,
pg_is_in_recovery()::text AS in_recovery,
(SELECT CASE relpersistence WHEN 'u' THEN 'unlogged' WHEN 't' THEN 'temporary' ELSE 'logged' END
 FROM pg_class WHERE oid = to_regclass($1)) AS table_persistence`,
      [this.#table],
    );
    const row = rows[0] ?? {};
    const settings: Record<string, string> = {};
    for (const name of ["fsync", "synchronous_commit", "full_page_writes", "table_persistence"]) {
      settings[name] = settingText(row[name]);
    }
    settings.in_recovery = settingText(row.in_recovery);
    for (const [name, value] of Object.entries(options?.stated ?? {})) {
      if (settings[name] === "unknown") settings[name] = value;
    }
    const problems: string[] = [];
    if (settings.fsync !== "on") {
      problems.push(
        `fsync is ${settings.fsync}: a crash of the machine can lose or corrupt committed reservations; set fsync = on`,
      );
    }
    if (settings.synchronous_commit === "off" || settings.synchronous_commit === "unknown") {
      problems.push(
        `synchronous_commit is ${settings.synchronous_commit}: a crash of the server loses the reservations of its last moments (up to 3 x wal_writer_delay); set synchronous_commit = on (or ALTER ROLE <user> SET synchronous_commit = on)`,
      );
    }
    if (settings.full_page_writes !== "on") {
      problems.push(
        `full_page_writes is ${settings.full_page_writes}: a crash of the machine can leave torn pages in the table; set full_page_writes = on`,
      );
    }
    if (settings.table_persistence === "unlogged" || settings.table_persistence === "temporary") {
      problems.push(
        `the table ${this.#table} is ${settings.table_persistence}: a crash empties it; ALTER TABLE ${this.#table} SET LOGGED`,
      );
    }
    // Nothing here loses a reservation without a crash (no eviction, no expiry).
    return { durable: problems.length === 0, settings, problems, lossWithoutCrash: false };
  }

  #reservation(
    value: unknown,
    count: number,
    raised: boolean,
    layout: string | undefined,
    key: string,
    field: string,
  ): Reservation {
    return reservationOf(value, count, raised, layout, key, field);
  }

  async #query(
    key: string,
    field: string,
    text: string,
    values: (string | null)[],
  ): Promise<Record<string, unknown>[]> {
    await this.#prepare(key, field);
    try {
      return await this.#run(text, values);
    } catch (err) {
      throw postgresError(err, key, field, this.#table);
    }
  }

  /**
   * Refuse a table whose `value` or `step` is not `bigint` (made by hand as `text` or
   * `numeric`): its values could be non-integers or past 2^63-1. Once, on first use.
   */
  async #checkColumns(key: string, field: string): Promise<void> {
    let rows: Record<string, unknown>[];
    try {
      rows = await this.#run(
        `SELECT attname::text AS name, format_type(atttypid, atttypmod) AS type FROM pg_attribute
WHERE attrelid = to_regclass($1) AND attnum > 0 AND NOT attisdropped`,
        [this.#table],
      );
    } catch (err) {
      throw postgresError(err, key, field, this.#table);
    }
    checkColumnTypes(rows, "bigint", this.#table, "PostgresStore", key, field);
  }

  /** On first use: find the table, creating it when missing and allowed (once per store). */
  #prepare(key: string, field: string): Promise<void> {
    this.#ready ??= (async () => {
      try {
        await this.#run(`SELECT 1 FROM ${this.#table} LIMIT 0`, []);
      } catch (err) {
        if (sqlState(err) !== "42P01" || !this.#create) {
          throw postgresError(err, key, field, this.#table);
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
