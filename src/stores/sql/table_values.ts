/**
 * The values of a SQL store's counter table: its name and limits, the checks on what goes into
 * it, and the reading of what comes out (integers that must stay exact, a hostile row).
 *
 * @module
 */

import { fieldLabel, KvIdError } from "../../contract/errors.ts";
import { MAX_ID, type MemberReserveOptions, type Reservation } from "../../contract/store.ts";
import { interleavedCounter, otherLayout, singleStoreCounter } from "../interleaved/layout.ts";
import { MAX_EPOCH_MS, MIN_EPOCH_MS } from "../../contract/calendar_bounds.ts";

/** The table a SQL store keeps its counters in unless told otherwise. */
export const DEFAULT_TABLE = "kvid_counters";

/**
 * The longest hash key or counter name a SQL store takes, in characters: the key columns are
 * `VARCHAR(255)` on MySQL (two of them fit InnoDB's 3,072-byte index limit in utf8mb4), and the
 * same limit is kept on PostgreSQL so a counter moves between the two.
 */
export const MAX_SQL_NAME_CHARS = 255;

// A table name, optionally schema-qualified: plain identifiers only, so it can be spliced into
// SQL (it is never a bound parameter) without quoting rules that differ between databases.
const TABLE_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,62}(\.[A-Za-z_][A-Za-z0-9_]{0,62})?$/;

/** Throw a TypeError unless `table` is a plain (optionally schema-qualified) SQL identifier. */
export function checkTable(who: string, table: unknown): asserts table is string {
  if (typeof table !== "string" || !TABLE_NAME.test(table)) {
    throw new TypeError(
      `${who} option table must be a plain SQL identifier, optionally schema-qualified (letters, digits, _; at most 63 each), got ${
        JSON.stringify(table)
      }`,
    );
  }
}

/** A counter of a SQL store, as its errors name it ({@linkcode sqlCounter}). */
export interface SqlCounter {
  /** The `hash_key` column. */
  key: string;
  /** The `name` column. */
  field: string;
  /** The row in the table's words: `table kvid_counters, hash_key "kvid", name "order"`. */
  where: string;
}

/** The row of counter `field` of hash `key` in `table`, as errors name it. */
export function sqlWhere(table: string, key: string, field: string): string {
  if (key === "" && field === "") return `table ${table}`;
  const row = `table ${table}, hash_key ${JSON.stringify(key)}`;
  return field === "" ? row : `${row}, name ${fieldLabel(field)}`;
}

/** Counter `field` of hash `key` in `table`, for errors ({@linkcode sqlWhere}). */
export function sqlCounter(table: string, key: string, field: string): SqlCounter {
  return { key, field, where: sqlWhere(table, key, field) };
}

/**
 * Refuse a hash key or counter name the table cannot hold exactly: longer than
 * {@linkcode MAX_SQL_NAME_CHARS} characters, or holding a NUL character (PostgreSQL `text`
 * cannot). Said as `"config"`: another name is the fix, waiting is not.
 */
export function checkSqlNames(at: SqlCounter): void {
  for (const [what, value] of [["hash key", at.key], ["counter name", at.field]]) {
    const chars = [...value].length;
    if (chars > MAX_SQL_NAME_CHARS) {
      throw new KvIdError(
        "config",
        `the ${what} is ${chars} characters, more than the ${MAX_SQL_NAME_CHARS} a SQL store's table holds: use a shorter one`,
        at,
      );
    }
    if (value.includes("\0")) {
      throw new KvIdError(
        "config",
        `the ${what} holds a NUL character, which a SQL store's table cannot hold: use another`,
        at,
      );
    }
  }
}

/**
 * A 64-bit integer the database sent, exactly: a decimal string (the stores cast to text) or
 * a bigint, or a number only while it is a safe integer. Undefined for anything else, so a
 * rounded value never becomes a range.
 */
export function exactInteger(value: unknown): bigint | undefined {
  if (typeof value === "bigint") return value;
  if (typeof value === "number") return Number.isSafeInteger(value) ? BigInt(value) : undefined;
  if (value instanceof Uint8Array) value = new TextDecoder().decode(value);
  if (typeof value === "string" && /^-?\d{1,20}$/.test(value)) return BigInt(value);
  return undefined;
}

/** A remembered step read from the table: a positive safe integer, else none. */
export function stepValue(value: unknown): number | undefined {
  const step = exactInteger(value);
  return step !== undefined && step > 0n && step <= BigInt(Number.MAX_SAFE_INTEGER)
    ? Number(step)
    : undefined;
}

/**
 * The server's clock reply (epoch time in units of `unitMs` ms, as decimal text, a number or a
 * bigint) in ms, checked to be a plausible time: anything else (an empty reply, which `Number`
 * would read as 0) is an error.
 */
export function epochMs(value: unknown, what: string, unitMs = 1): number {
  // Numbers and bigints in range print as decimal text too, so one test covers all three.
  const units = /^-?\d+(\.\d+)?$/.test(String(value)) ? Number(value) : NaN;
  const ms = units * unitMs;
  if (!(Number.isFinite(ms) && ms >= MIN_EPOCH_MS && ms <= MAX_EPOCH_MS)) {
    throw new Error(`unexpected ${what} reply ${String(value)}`);
  }
  return Math.floor(ms);
}

/** A setting's value as text, `"unknown"` when the server did not tell. */
export function settingText(value: unknown): string {
  if (value === null || value === undefined) return "unknown";
  if (value instanceof Uint8Array) return new TextDecoder().decode(value);
  return String(value);
}

/**
 * Refuse a counter table whose `value` or `step` column is not of type `integer` (`"bigint"`),
 * or whose text columns compare by a collation that is not binary (`collation`, where the
 * catalog tells it), given the rows `{ name, type, collation? }` the catalog listed (none: not
 * visible, not checked).
 */
export function checkColumnTypes(
  rows: readonly Record<string, unknown>[],
  integer: string,
  table: string,
  who: string,
  at: SqlCounter,
): void {
  if (rows.length === 0) return;
  const types = new Map(rows.map((r) => [String(r.name).toLowerCase(), String(r.type)]));
  const collations = new Map(rows.map((r) => [String(r.name).toLowerCase(), r.collation]));
  for (const column of ["hash_key", "name", "value", "step", "layout"]) {
    const type = types.get(column);
    const collation = collations.get(column);
    const wrong = type === undefined
      ? "is missing"
      : (column === "value" || column === "step") && type.toLowerCase() !== integer
      ? `is ${type}, not ${integer}`
      : typeof collation === "string" && !/_bin$/i.test(collation)
      // A collation that folds case (or accents) makes "Order" and "order" one counter.
      ? `compares names by the collation ${collation}, not a binary one (utf8mb4_bin)`
      : undefined;
    if (wrong !== undefined) {
      throw new KvIdError(
        "config",
        `the column ${column} of the table ${table} ${wrong}: kvid needs the table ${who}.tableSql() prints`,
        at,
      );
    }
  }
}

/**
 * The layout an interleaving store set on this reservation (`MemberReserveOptions.layout`),
 * checked: a string of at most {@linkcode MAX_SQL_NAME_CHARS} characters, or none.
 */
export function layoutOf(options: MemberReserveOptions): string | undefined {
  const layout = (options as { layout?: unknown }).layout;
  if (layout === undefined) return undefined;
  if (
    typeof layout !== "string" || layout.length === 0 || [...layout].length > MAX_SQL_NAME_CHARS
  ) {
    throw new TypeError(`a reservation's layout must be a string of 1 to 255 characters`);
  }
  return layout;
}

/** The reservation a statement's new end `value` stands for, the layout echoed when set. */
export function reservationOf(
  value: unknown,
  count: number,
  raised: boolean,
  layout: string | undefined,
  at: SqlCounter,
): Reservation {
  const last = exactInteger(value);
  if (last === undefined || last < BigInt(count) || last > MAX_ID) {
    throw new KvIdError(
      "reply",
      `the counter came back as ${String(value)}, not the end of a range of ${count}`,
      at,
    );
  }
  const reservation: Reservation = { ranges: [{ first: last - BigInt(count) + 1n, last }], raised };
  if (layout !== undefined) Object.assign(reservation, { layout });
  return reservation;
}

/**
 * Neither statement of a reservation matched the row `found` (`{ value, layout }`, or none):
 * throw when that is for good (a negative value, another layout, a single-store counter asked
 * for by an interleaved member); return when another process moved the counter in between.
 */
export function refuseFound(
  found: Record<string, unknown> | undefined,
  layout: string | undefined,
  where: SqlCounter,
): void {
  if (found === undefined) return;
  const value = exactInteger(found.value);
  const has = found.layout === null || found.layout === undefined
    ? undefined
    : settingText(found.layout);
  if (has !== layout) {
    if (layout === undefined) throw interleavedCounter(has!, where);
    if (has !== undefined) throw otherLayout(has, layout, where);
    if (value !== undefined && value !== 0n) throw singleStoreCounter(String(value), where);
  }
  if (value !== undefined && value < 0n) {
    throw new KvIdError(
      "reply",
      `the counter holds a negative value (${value}), which kvid never writes: set it to the highest ID issued`,
      where,
    );
  }
}
