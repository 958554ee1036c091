/**
 * {@linkcode SqlTableStore}: what `PostgresStore` and `MySqlStore` share, written once: the
 * reservation's flow (one `UPDATE` that adds and reads back the new end; on a new counter, or one
 * below the floor, a second statement that inserts or raises it; a hostile row refused), the
 * give-back's compare-and-set, the remembered step, the day cleanup, the durability verdict, and
 * finding (or creating) the table on first use. What differs, the SQL text, the driver's calls
 * and the mapping of its errors, is a {@linkcode SqlDialect} each store's folder provides.
 *
 * @module
 */

import { KvIdError } from "../../contract/errors.ts";
import {
  type CounterListing,
  type CountersOptions,
  type CounterValue,
  DAY_FIELD,
  type DayCleanup,
  type DurabilityFacts,
  type DurabilityOptions,
  type IdRange,
  MAX_ID,
  type MemberReserveOptions,
  type Release,
  type Reservation,
  type ReserveOptions,
  type ServerClock,
  type StepMemory,
  type Store,
  type StoreDurability,
} from "../../contract/store.ts";
import {
  checkColumnTypes,
  checkSqlNames,
  checkTable,
  DEFAULT_TABLE,
  exactInteger,
  layoutOf,
  MAX_SQL_NAME_CHARS,
  refuseFound,
  reservationOf,
  settingText,
  type SqlCounter,
  sqlCounter,
  sqlWhere,
  stepValue,
} from "./table_values.ts";

/**
 * One database's way with the counter table of one store: each statement, run through the
 * driver, its reply read. A dialect throws what its driver throws; the store maps it with
 * {@linkcode SqlDialect.error}. Every number goes in as decimal text, and every integer comes
 * back as text or a bigint (read by `exactInteger`), so nothing passes through a double.
 */
export interface SqlDialect {
  /** The driver's failure as a {@linkcode KvIdError} naming the counter (and the table). */
  error(err: unknown, key: string, field: string): KvIdError;
  /** The failure said the table does not exist. */
  isMissingTable(err: unknown): boolean;
  /** `SELECT 1 FROM <table> LIMIT 0`: rejects when the table is missing or out of reach. */
  probe(): Promise<void>;
  /** Run the table's DDL; another process creating it at the same moment is no failure. */
  createTable(): Promise<void>;
  /** The table's columns as `{ name, type }` rows from the catalog (none: not visible). */
  columns(): Promise<readonly Record<string, unknown>[]>;
  /**
   * `value = value + count` where the row has `value >= floor` and the layout `layout`: the new
   * value, or undefined when no row matched.
   */
  increment(
    key: string,
    field: string,
    count: bigint,
    floor: bigint,
    layout: string | null,
  ): Promise<unknown>;
  /**
   * Insert the row at `start`, or set a row with the layout `layout` found below `floor` to
   * `start` (also a row at 0 without a layout, for a `layout`): the new value, or undefined when
   * the row was left alone.
   */
  insertOrRaise(
    key: string,
    field: string,
    start: bigint,
    floor: bigint,
    layout: string | null,
  ): Promise<unknown>;
  /** The row's `{ value, layout }` (value as text), or undefined when there is none. */
  find(key: string, field: string): Promise<Record<string, unknown> | undefined>;
  /**
   * The rows of `key` (only those named `names`, when given) that a reservation set (`value > 0`)
   * or that have a layout, as `{ name, value, layout }` rows, value as text.
   */
  counters(
    key: string,
    names: readonly string[] | undefined,
  ): Promise<readonly Record<string, unknown>[]>;
  /** `value = to` where `value = from` and no layout: true when one row changed. */
  release(key: string, field: string, to: bigint, from: bigint): Promise<boolean>;
  /** The row's `step` column as the driver returned it (undefined: no row). */
  loadStep(key: string, field: string): Promise<unknown>;
  /** Set the row's `step` (inserting the row at 0 when missing). */
  saveStep(key: string, field: string, step: number): Promise<void>;
  /** Delete the `yyyymmdd` rows of `key` before `before`, without a layout: how many. */
  deleteDaysBefore(key: string, before: string): Promise<number>;
  /** The database's clock, ms since the epoch, checked plausible (`epochMs`). */
  now(): Promise<number>;
  /** The server's settings that decide what it can lose, as the driver returned them. */
  settings(): Promise<Record<string, unknown>>;
  /** Each way the server with these `settings` can lose a reservation, naming the fix. */
  problems(settings: Readonly<Record<string, string>>): string[];
}

// A reservation that keeps finding the counter moved by others between its two statements
// (only on the rare path: a new counter, or one below the floor) gives up after this many.
const MAX_ATTEMPTS = 8;

/**
 * A {@linkcode Store} on a SQL table of counters, one row each: the part `PostgresStore` and
 * `MySqlStore` share (each passes its dialect). Not made directly: use one of them.
 *
 * @example Through `PostgresStore` (a fake `pg` pool that answers every statement)
 * ```ts
 * import { PostgresStore, type SqlTableStore } from "@kvid/core/postgres";
 * import assert from "node:assert/strict";
 *
 * const pool = { query: () => Promise.resolve({ rows: [] }) };
 * const store: SqlTableStore = new PostgresStore(pool, { table: "ids.counters" });
 * assert.ok(store.table === "ids.counters");
 * ```
 */
export class SqlTableStore
  implements Store, Release, StepMemory, DurabilityFacts, DayCleanup, CounterListing, ServerClock {
  readonly #who: string;
  readonly #table: string;
  readonly #create: boolean;
  readonly #dialect: SqlDialect;
  #ready: Promise<void> | undefined;

  /**
   * Check the options and make the dialect for the table; nothing is sent until first use.
   *
   * @param who The store's class, for messages: `"PostgresStore"`.
   * @param options The table (default `"kvid_counters"`) and whether to create it (default true).
   * @param dialect Makes the dialect for the checked table name.
   */
  protected constructor(
    who: string,
    options: { table?: string; createTable?: boolean },
    dialect: (table: string) => SqlDialect,
  ) {
    const table = options.table ?? DEFAULT_TABLE;
    checkTable(who, table);
    const create = options.createTable ?? true;
    if (typeof create !== "boolean") {
      throw new TypeError(`${who} option createTable must be a boolean, got ${create}`);
    }
    this.#who = who;
    this.#table = table;
    this.#create = create;
    this.#dialect = dialect(table);
  }

  /** The counter table's name. */
  get table(): string {
    return this.#table;
  }

  /**
   * Create the table if it is missing (what the first reservation does with `createTable` on).
   *
   * @example In a migration step (a fake `pg` pool that records the statements)
   * ```ts
   * import { PostgresStore } from "@kvid/core/postgres";
   * import assert from "node:assert/strict";
   *
   * const sent: string[] = [];
   * const pool = { query: (text: string) => (sent.push(text), Promise.resolve({ rows: [] })) };
   * await new PostgresStore(pool).ensureTable();
   * assert.ok(sent[0].startsWith("CREATE TABLE IF NOT EXISTS kvid_counters ("));
   * ```
   */
  async ensureTable(): Promise<void> {
    await this.#createTable("", "");
  }

  /**
   * Reserve `count` IDs of counter `field` in hash `key`; see {@linkcode Store.reserve}.
   *
   * One `UPDATE` adds `count` where the row is at or above the floor and reads the new end back
   * exactly; a counter that is missing or below the floor (`guard`) takes a second statement that
   * inserts or raises it (so `raised` is exact); a row matched by neither is read and refused
   * when that is for good (a negative value, another layout), else the two are tried again.
   *
   * @param key The hash key.
   * @param field The counter.
   * @param count How many IDs, a positive safe integer.
   * @param options The floor, the guard, the layout of an interleaved member.
   * @returns The range.
   * @throws {KvIdError} `"overflow"` past 2^63-1, `"reply"` for a hostile row, `"config"` for
   *   another layout, `"conflict"` after 8 rounds lost to other writers, and the database's own.
   */
  async reserve(
    key: string,
    field: string,
    count: number,
    options: ReserveOptions & MemberReserveOptions,
  ): Promise<Reservation> {
    if (!Number.isSafeInteger(count) || count < 1) {
      throw new RangeError(`${this.#who}.reserve: count must be a positive integer, got ${count}`);
    }
    checkSqlNames(this.#at(key, field));
    const layout = layoutOf(options);
    const floor = options.guard && options.floor > 0n ? options.floor : 0n;
    const raiseTo = options.raiseTo > MAX_ID ? MAX_ID : options.raiseTo;
    const start = (floor > 0n ? raiseTo : 0n) + BigInt(count);
    const d = this.#dialect;
    for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
      const end = await this.#call(
        key,
        field,
        () => d.increment(key, field, BigInt(count), floor, layout ?? null),
      );
      if (end !== undefined) return reservationOf(end, count, false, layout, this.#at(key, field));
      if (start > MAX_ID) {
        throw new KvIdError(
          "overflow",
          `raising the counter to ${raiseTo} would pass 2^63-1`,
          this.#at(key, field),
        );
      }
      // Missing (a new counter: 0), below the floor (raised to raiseTo first), or an interleaved
      // member's first use of a row at 0 without a layout (one saveStep made): the layout is
      // recorded with the value, in the same statement.
      const raised = await this.#call(
        key,
        field,
        () => d.insertOrRaise(key, field, start, floor, layout ?? null),
      );
      if (raised !== undefined) {
        return reservationOf(raised, count, floor > 0n, layout, this.#at(key, field));
      }
      // Neither matched: moved by another process in between, another layout, or a negative
      // value (by hand).
      refuseFound(
        await this.#call(key, field, () => d.find(key, field)),
        layout,
        this.#at(key, field),
      );
    }
    throw new KvIdError(
      "conflict",
      `the counter kept moving between the two statements of a reservation (${MAX_ATTEMPTS} attempts)`,
      this.#at(key, field),
    );
  }

  /**
   * Give back the unused tail `range` of the caller's last reservation; see
   * {@linkcode Release.release}: `UPDATE ... SET value = first - 1 WHERE value = last`.
   *
   * @param key The hash key.
   * @param field The counter.
   * @param range The unused IDs, ending at the end of the caller's last reservation.
   * @returns True when given back.
   */
  async release(key: string, field: string, range: IdRange): Promise<boolean> {
    if (range.first < 1n || range.last < range.first || range.last > MAX_ID) return false;
    checkSqlNames(this.#at(key, field));
    return await this.#call(
      key,
      field,
      () => this.#dialect.release(key, field, range.first - 1n, range.last),
    );
  }

  /**
   * The step the counter's processes last used (its row's `step` column); see
   * {@linkcode StepMemory.loadStep}.
   *
   * @param key The hash key.
   * @param field The counter.
   * @returns The remembered step, or undefined (none, or not a positive safe integer).
   */
  async loadStep(key: string, field: string): Promise<number | undefined> {
    checkSqlNames(this.#at(key, field));
    return stepValue(await this.#call(key, field, () => this.#dialect.loadStep(key, field)));
  }

  /**
   * Remember `step` in the counter's row; see {@linkcode StepMemory.saveStep}.
   *
   * @param key The hash key.
   * @param field The counter.
   * @param step The step to start from.
   */
  async saveStep(key: string, field: string, step: number): Promise<void> {
    checkSqlNames(this.#at(key, field));
    await this.#call(key, field, () => this.#dialect.saveStep(key, field, step));
  }

  /**
   * Delete the rows of hash `key` whose name is a `yyyymmdd` day before `before`, nothing else
   * (a row with a layout, an interleaved member's, is left alone): a {@linkcode DailyId}'s
   * cleanup. It picks `before` by the earlier of its clock and the database's
   * ({@linkcode SqlTableStore.now}).
   *
   * @param key The hash key (a `DailyId`'s `key`).
   * @param before The first day kept, `yyyymmdd`.
   * @returns How many were deleted.
   * @throws {RangeError} When `before` is not a `yyyymmdd` day.
   */
  async deleteDaysBefore(key: string, before: string): Promise<number> {
    if (!DAY_FIELD.test(before)) {
      throw new RangeError(`${this.#who}.deleteDaysBefore: not a yyyymmdd day: ${before}`);
    }
    return await this.#call(
      key,
      `<${before}`,
      () => this.#dialect.deleteDaysBefore(key, before),
    );
  }

  /**
   * The counters of hash `key`: its rows, value exact, with the layout of an interleaved
   * member's row; a row no reservation has set (a saved step's, at 0) is left out; the step and
   * layout are columns, never counters. One `SELECT`. See {@linkcode CounterListing.counters}.
   *
   * @param key The hash key.
   * @param options `names`: only these counters.
   * @returns The counters that exist, by name.
   * @throws {KvIdError} `"reply"` (reason `"not-a-counter"`) for a value past 2^63-1 or below 0,
   *   and the database's own failures.
   */
  async counters(key: string, options: CountersOptions = {}): Promise<Map<string, CounterValue>> {
    const found = new Map<string, CounterValue>();
    // A name a table cannot hold (NUL, too long) is no row of it: never found.
    const holds = (name: string) => !name.includes("\0") && [...name].length <= MAX_SQL_NAME_CHARS;
    const names = options.names?.filter(holds);
    if (!holds(key) || names?.length === 0) return found;
    const rows = await this.#call(key, "", () => this.#dialect.counters(key, names));
    for (const row of rows) {
      const name = String(row.name);
      const value = exactInteger(row.value);
      if (value === undefined || value < 0n || value > MAX_ID) {
        throw new KvIdError("reply", `the counter row holds ${String(row.value)}, not a counter`, {
          ...this.#at(key, name),
          reason: "not-a-counter",
        });
      }
      const layout = row.layout === null || row.layout === undefined
        ? undefined
        : String(row.layout);
      found.set(name, layout === undefined ? { value } : { value, layout });
    }
    return found;
  }

  /**
   * The database's clock, in ms since the epoch (PostgreSQL `clock_timestamp()`, MySQL
   * `UNIX_TIMESTAMP()` in whole seconds); see {@linkcode ServerClock.now}.
   *
   * @returns The server's time.
   */
  async now(): Promise<number> {
    return await this.#call("", "", () => this.#dialect.now());
  }

  /**
   * What the server can lose, read from its settings (PostgreSQL: `fsync`,
   * `synchronous_commit`, `full_page_writes`, an unlogged table; MySQL:
   * `innodb_flush_log_at_trx_commit`, `sync_binlog` with the binary log on,
   * `innodb_doublewrite`, the table's engine); see {@linkcode StoreDurability}.
   *
   * @param key The hash key (named in errors).
   * @param options What the generator tells; its `stated` settings (the `serverSettings` option)
   *   stand in for a setting the server would not tell (read as `"unknown"`); a setting the server
   *   tells wins.
   * @returns The settings and the problems found.
   */
  async durability(key: string, options?: DurabilityOptions): Promise<StoreDurability> {
    const read = await this.#call(key, "", () => this.#dialect.settings());
    const settings: Record<string, string> = {};
    for (const [name, value] of Object.entries(read)) settings[name] = settingText(value);
    for (const [name, value] of Object.entries(options?.stated ?? {})) {
      if (settings[name] === "unknown") settings[name] = value;
    }
    const problems = this.#dialect.problems(settings);
    // Nothing here loses a reservation without a crash (no eviction, no expiry).
    return { durable: problems.length === 0, settings, problems, lossWithoutCrash: false };
  }

  /**
   * Counter `field` of hash `key` in this store's words, for messages: its row, e.g.
   * `table kvid_counters, hash_key "kvid", name "order"`; see {@linkcode Store.describe}.
   *
   * @example
   * ```ts
   * import { PostgresStore } from "@kvid/core/postgres";
   * import assert from "node:assert/strict";
   *
   * const store = new PostgresStore({ query: () => Promise.resolve({ rows: [] }) });
   * assert.equal(store.describe("kvid", "order"), 'table kvid_counters, hash_key "kvid", name "order"');
   * ```
   *
   * @param key The hash key.
   * @param field The counter.
   * @returns The words a {@linkcode KvIdError} puts in parentheses.
   */
  describe(key: string, field: string): string {
    return sqlWhere(this.#table, key, field);
  }

  #at(key: string, field: string): SqlCounter {
    return sqlCounter(this.#table, key, field);
  }

  /** Run one of the dialect's statements once the table is there, its failure mapped. */
  async #call<T>(key: string, field: string, statement: () => Promise<T>): Promise<T> {
    await this.#prepare(key, field);
    try {
      return await statement();
    } catch (err) {
      throw this.#dialect.error(err, key, field);
    }
  }

  async #createTable(key: string, field: string): Promise<void> {
    try {
      await this.#dialect.createTable();
    } catch {
      // Processes creating the same table at once race in PostgreSQL's catalog (`type ...
      // already exists`, SQLSTATE 42710 or 23505) even with IF NOT EXISTS; once the winner has
      // committed, the same statement is a no-op. Any other failure fails again, and is thrown.
      try {
        await this.#dialect.createTable();
      } catch (err) {
        throw this.#dialect.error(err, key, field);
      }
    }
  }

  /**
   * On first use (once per store): find the table, creating it when missing and allowed, and
   * refuse one whose `value` or `step` is not `bigint` (made by hand as text or a decimal: its
   * values could be non-integers, or past 2^63-1, or added to as doubles).
   */
  #prepare(key: string, field: string): Promise<void> {
    const d = this.#dialect;
    this.#ready ??= (async () => {
      try {
        await d.probe();
      } catch (err) {
        if (!d.isMissingTable(err) || !this.#create) throw d.error(err, key, field);
        await this.#createTable(key, field);
      }
      let rows: readonly Record<string, unknown>[];
      try {
        rows = await d.columns();
      } catch (err) {
        throw d.error(err, key, field);
      }
      checkColumnTypes(rows, "bigint", this.#table, this.#who, this.#at(key, field));
    })();
    const ready = this.#ready;
    // A failed check is tried again on the next call.
    ready.catch(() => {
      if (this.#ready === ready) this.#ready = undefined;
    });
    return ready;
  }
}
