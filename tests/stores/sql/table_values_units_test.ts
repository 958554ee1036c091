/**
 * Unit tests of the values of a SQL store's table (src/stores/sql/table_values.ts): the table
 * name rule, the names a row can hold, the exact reading of integers (never through a double),
 * the remembered step, the server clock's reply, the settings' text, the catalog's column check,
 * the layout option, the range a statement's reply stands for, and the verdict on a row neither
 * statement matched. Pure functions: starts no server (the stores' use of them runs against
 * PostgreSQL and MariaDB in tests/stores/postgres/ and tests/stores/mysql/).
 */

import "../../support/deadline.ts"; // a time limit on every test of this file
import assert from "node:assert/strict";
import { KvIdError } from "../../../src/contract/errors.ts";
import type { MemberReserveOptions } from "../../../src/contract/store.ts";
import { MAX_EPOCH_MS, MIN_EPOCH_MS } from "../../../src/contract/calendar_bounds.ts";
import {
  checkColumnTypes,
  checkSqlNames,
  checkTable,
  DEFAULT_TABLE,
  epochMs,
  exactInteger,
  layoutOf,
  MAX_SQL_NAME_CHARS,
  refuseFound,
  reservationOf,
  settingText,
  sqlCounter,
  sqlWhere,
  stepValue,
} from "../../../src/stores/sql/table_values.ts";

const MAX = (1n << 63n) - 1n;
const AT = sqlCounter("kvid_counters", "kvid", "order");
const OPTIONS: MemberReserveOptions = {};

/** The KvIdError `fn` throws, its code checked. */
function kvIdError(fn: () => unknown, code: string): KvIdError {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof KvIdError, `not a KvIdError: ${err}`);
    assert.equal(err.code, code, err.message);
    return err;
  }
  assert.fail("did not throw");
}

Deno.test("checkTable: plain identifiers, optionally schema-qualified, at most 63 each", () => {
  assert.equal(DEFAULT_TABLE, "kvid_counters");
  for (const ok of ["t", "_t", "kvid_counters", "ids.counters", "A9_z", "a".repeat(63)]) {
    checkTable("S", ok);
  }
  checkTable("S", `${"a".repeat(63)}.${"b".repeat(63)}`);
  const bad: unknown[] = [
    "",
    "9t",
    "t-1",
    "t;drop",
    "a.b.c",
    ".t",
    "t.",
    '"t"',
    "a".repeat(64),
    `s.${"b".repeat(64)}`,
    " t",
    "t ",
    42,
    undefined,
    null,
  ];
  for (const table of bad) {
    assert.throws(
      () => checkTable("PostgresStore", table),
      (err) =>
        err instanceof TypeError &&
        err.message.startsWith("PostgresStore option table must be a plain SQL identifier") &&
        err.message.endsWith(`got ${JSON.stringify(table)}`),
      `accepted ${JSON.stringify(table)}`,
    );
  }
});

Deno.test("sqlWhere and sqlCounter: the row in the table's words", () => {
  assert.equal(sqlWhere("t", "", ""), "table t");
  assert.equal(sqlWhere("t", "kvid", ""), 'table t, hash_key "kvid"');
  assert.equal(sqlWhere("t", "kvid", "order"), 'table t, hash_key "kvid", name "order"');
  assert.equal(sqlWhere("t", "", "order"), 'table t, hash_key "", name "order"');
  // A long name is cut to its first 77 characters, as every store's label does.
  assert.equal(
    sqlWhere("t", "k", "x".repeat(100)),
    `table t, hash_key "k", name "${"x".repeat(76)}..."`,
  );
  assert.deepEqual(sqlCounter("t", "k", "f"), {
    key: "k",
    field: "f",
    where: 'table t, hash_key "k", name "f"',
  });
});

Deno.test("checkSqlNames: at most 255 characters (not UTF-16 units), no NUL, in key and name", () => {
  assert.equal(MAX_SQL_NAME_CHARS, 255);
  const longest = "x".repeat(255);
  checkSqlNames(sqlCounter("t", longest, longest));
  // 255 emoji are 510 UTF-16 units and 255 characters: held.
  const emoji = "😀".repeat(255);
  checkSqlNames(sqlCounter("t", emoji, emoji));
  checkSqlNames(sqlCounter("t", "", ""));
  for (
    const [key, field, what] of [
      ["x".repeat(256), "f", "hash key"],
      ["k", "x".repeat(256), "counter name"],
      ["k", "😀".repeat(256), "counter name"],
    ]
  ) {
    const err = kvIdError(() => checkSqlNames(sqlCounter("t", key, field)), "config");
    assert.match(err.message, new RegExp(`^the ${what} is 256 characters, more than the 255`));
    assert.equal(err.key, key);
    assert.equal(err.field, field);
  }
  for (const [key, field, what] of [["a\0b", "f", "hash key"], ["k", "\0", "counter name"]]) {
    const err = kvIdError(() => checkSqlNames(sqlCounter("t", key, field)), "config");
    assert.match(err.message, new RegExp(`^the ${what} holds a NUL character`));
  }
  // The key is checked before the name.
  const both = kvIdError(() => checkSqlNames(sqlCounter("t", "\0", "x".repeat(300))), "config");
  assert.match(both.message, /^the hash key holds a NUL/);
});

Deno.test("exactInteger: decimal text, bigint, safe numbers and UTF-8 bytes; nothing rounded", () => {
  const cases: [unknown, bigint | undefined][] = [
    [0n, 0n],
    [-5n, -5n],
    [MAX + 1n, MAX + 1n],
    [0, 0n],
    [7, 7n],
    [-7, -7n],
    [Number.MAX_SAFE_INTEGER, BigInt(Number.MAX_SAFE_INTEGER)],
    [-Number.MAX_SAFE_INTEGER, -BigInt(Number.MAX_SAFE_INTEGER)],
    [Number.MAX_SAFE_INTEGER + 1, undefined],
    [2 ** 63, undefined],
    [1.5, undefined],
    [NaN, undefined],
    [Infinity, undefined],
    ["0", 0n],
    ["42", 42n],
    ["-42", -42n],
    ["9223372036854775807", MAX],
    ["99999999999999999999", 99999999999999999999n],
    ["123456789012345678901", undefined],
    ["", undefined],
    ["-", undefined],
    ["+1", undefined],
    [" 1", undefined],
    ["1 ", undefined],
    ["1.0", undefined],
    ["1e3", undefined],
    ["0x10", undefined],
    ["1\n", undefined],
    [new TextEncoder().encode("9223372036854775807"), MAX],
    [new TextEncoder().encode("x"), undefined],
    [null, undefined],
    [undefined, undefined],
    [true, undefined],
    [{ toString: () => "5" }, undefined],
  ];
  for (const [value, want] of cases) {
    assert.equal(exactInteger(value), want, `exactInteger(${String(value)})`);
  }
});

Deno.test("stepValue: a positive safe integer, else none", () => {
  const cases: [unknown, number | undefined][] = [
    ["1", 1],
    [1, 1],
    [1n, 1],
    ["1000", 1000],
    [String(Number.MAX_SAFE_INTEGER), Number.MAX_SAFE_INTEGER],
    [String(Number.MAX_SAFE_INTEGER + 1), undefined],
    ["0", undefined],
    [0, undefined],
    ["-3", undefined],
    ["1.5", undefined],
    [null, undefined],
    [undefined, undefined],
  ];
  for (const [value, want] of cases) {
    assert.equal(stepValue(value), want, `stepValue(${String(value)})`);
  }
});

Deno.test("epochMs: text, a number or a bigint of a plausible time, floored; else an error", () => {
  assert.equal(epochMs("1767225600000", "now()"), 1767225600000);
  assert.equal(epochMs(1767225600000, "now()"), 1767225600000);
  assert.equal(epochMs(1767225600000n, "now()"), 1767225600000);
  assert.equal(epochMs("1767225600000.75", "now()"), 1767225600000);
  assert.equal(epochMs(MIN_EPOCH_MS, "x"), MIN_EPOCH_MS);
  assert.equal(epochMs(MAX_EPOCH_MS, "x"), MAX_EPOCH_MS);
  assert.equal(epochMs("1767225600", "UNIX_TIMESTAMP()", 1000), 1767225600000);
  assert.equal(epochMs(1767225600n, "x", 1000), 1767225600000);
  const bads = [MIN_EPOCH_MS - 1, MAX_EPOCH_MS + 1, "x", "", " ", "1e12", "0x10", null, NaN];
  for (const bad of [...bads, undefined, Infinity]) {
    assert.throws(
      () => epochMs(bad, "clock_timestamp()"),
      (err) =>
        err instanceof Error && err.message === `unexpected clock_timestamp() reply ${String(bad)}`,
      `accepted ${String(bad)}`,
    );
  }
});

Deno.test("settingText: text of what the server told, unknown for nothing", () => {
  assert.equal(settingText(null), "unknown");
  assert.equal(settingText(undefined), "unknown");
  assert.equal(settingText("on"), "on");
  assert.equal(settingText(""), "");
  assert.equal(settingText(1), "1");
  assert.equal(settingText(0), "0");
  assert.equal(settingText(1n), "1");
  assert.equal(settingText(false), "false");
  assert.equal(settingText(new TextEncoder().encode("ON")), "ON");
});

Deno.test("checkColumnTypes: every column there, integers bigint, names compared in binary", () => {
  const good = (type = "bigint", collation?: string) =>
    ["hash_key", "name", "value", "step", "layout", "modified"].map((name) => ({
      name,
      type: name === "value" || name === "step" ? type : "text",
      ...(collation === undefined || name === "value" || name === "step" ? {} : { collation }),
    }));
  checkColumnTypes([], "bigint", "t", "S", AT); // nothing visible: nothing checked
  checkColumnTypes(good(), "bigint", "t", "S", AT);
  checkColumnTypes(good("BIGINT"), "bigint", "t", "S", AT);
  checkColumnTypes(good("bigint", "utf8mb4_bin"), "bigint", "t", "S", AT);
  checkColumnTypes(good("bigint", "UTF8MB4_BIN"), "bigint", "t", "S", AT);
  checkColumnTypes(good("bigint", null as unknown as string), "bigint", "t", "S", AT);
  // Column names compared without case (MySQL's catalog may say VALUE).
  checkColumnTypes(
    good().map((r) => ({ ...r, name: r.name.toUpperCase() })),
    "bigint",
    "t",
    "S",
    AT,
  );

  const refused = (rows: Record<string, unknown>[], column: string, wrong: string) => {
    const err = kvIdError(
      () => checkColumnTypes(rows, "bigint", "ids.t", "MySqlStore", AT),
      "config",
    );
    assert.equal(
      err.message,
      `the column ${column} of the table ids.t ${wrong}: kvid needs the table MySqlStore.tableSql() prints (${AT.where})`,
    );
    assert.equal(err.key, "kvid");
    assert.equal(err.field, "order");
  };
  for (const column of ["hash_key", "name", "value", "step", "layout"]) {
    refused(good().filter((r) => r.name !== column), column, "is missing");
  }
  refused(good("text"), "value", "is text, not bigint");
  refused(good("numeric(20,0)"), "value", "is numeric(20,0), not bigint");
  refused(
    good().map((r) => (r.name === "step" ? { ...r, type: "integer" } : r)),
    "step",
    "is integer, not bigint",
  );
  refused(
    good("bigint", "utf8mb4_general_ci"),
    "hash_key",
    "compares names by the collation utf8mb4_general_ci, not a binary one (utf8mb4_bin)",
  );
  refused(
    good().map((r) => (r.name === "layout" ? { ...r, collation: "utf8mb4_bin_ci" } : r)),
    "layout",
    "compares names by the collation utf8mb4_bin_ci, not a binary one (utf8mb4_bin)",
  );
  refused(
    good().map((r) => (r.name === "name" ? { ...r, collation: "latin1_swedish_ci" } : r)),
    "name",
    "compares names by the collation latin1_swedish_ci, not a binary one (utf8mb4_bin)",
  );
  // A text column's type is not checked against the integer type.
  checkColumnTypes(
    good().map((r) => (r.name === "layout" ? { ...r, type: "varchar(255)" } : r)),
    "bigint",
    "t",
    "S",
    AT,
  );
});

Deno.test("layoutOf: none, or a string of 1 to 255 characters", () => {
  assert.equal(layoutOf(OPTIONS), undefined);
  assert.equal(layoutOf({ ...OPTIONS, layout: "2x1000:0" }), "2x1000:0");
  assert.equal(layoutOf({ ...OPTIONS, layout: "l".repeat(255) }), "l".repeat(255));
  assert.equal(layoutOf({ ...OPTIONS, layout: "😀".repeat(255) }), "😀".repeat(255));
  for (const layout of ["", "l".repeat(256), "😀".repeat(256), 5, null]) {
    assert.throws(
      () => layoutOf({ ...OPTIONS, layout } as never),
      (err) =>
        err instanceof TypeError &&
        err.message === "a reservation's layout must be a string of 1 to 255 characters",
      `accepted ${String(layout)}`,
    );
  }
});

Deno.test("reservationOf: the range ending at the reply, exact; a reply that cannot be refused", () => {
  assert.deepEqual(reservationOf("10", 10, false, undefined, AT), {
    ranges: [{ first: 1n, last: 10n }],
    raised: false,
  });
  assert.deepEqual(reservationOf(25n, 5, true, undefined, AT), {
    ranges: [{ first: 21n, last: 25n }],
    raised: true,
  });
  assert.deepEqual(reservationOf(String(MAX), 3, false, "2x10:1", AT), {
    ranges: [{ first: MAX - 2n, last: MAX }],
    raised: false,
    layout: "2x10:1",
  });
  assert.equal("layout" in reservationOf("1", 1, false, undefined, AT), false);
  for (const value of ["9", "0", "-1", String(MAX + 1n), "1.5", null, undefined, 2 ** 60, "x"]) {
    const err = kvIdError(() => reservationOf(value, 10, false, undefined, AT), "reply");
    assert.equal(
      err.message,
      `the counter came back as ${String(value)}, not the end of a range of 10 (${AT.where})`,
    );
  }
});

Deno.test("refuseFound: moved by another process passes; a negative value or another layout is refused", () => {
  // No row, or a row at or above 0 with the same layout: moved in between, tried again.
  refuseFound(undefined, undefined, AT);
  refuseFound(undefined, "L", AT);
  refuseFound({ value: "5", layout: null }, undefined, AT);
  refuseFound({ value: "0", layout: undefined }, undefined, AT);
  refuseFound({ value: "5", layout: "L" }, "L", AT);
  refuseFound({ value: "5", layout: new TextEncoder().encode("L") }, "L", AT);
  // A row at 0 without a layout (a saved step) asked for by a member: the member may take it.
  refuseFound({ value: "0", layout: null }, "L", AT);
  refuseFound({ value: null, layout: null }, "L", AT);

  const negative = kvIdError(
    () => refuseFound({ value: "-1", layout: null }, undefined, AT),
    "reply",
  );
  assert.equal(
    negative.message,
    `the counter holds a negative value (-1), which kvid never writes: set it to the highest ID issued (${AT.where})`,
  );
  kvIdError(() => refuseFound({ value: "-1", layout: "L" }, "L", AT), "reply");

  const interleaved = kvIdError(
    () => refuseFound({ value: "7", layout: "L" }, undefined, AT),
    "config",
  );
  assert.match(interleaved.message, /belongs to interleaved servers \(layout "L"\)/);
  const other = kvIdError(() => refuseFound({ value: "7", layout: "A" }, "B", AT), "config");
  assert.match(other.message, /holds the layout "A" for this counter, not "B"/);
  const alone = kvIdError(() => refuseFound({ value: "7", layout: null }, "B", AT), "config");
  assert.match(alone.message, /as a single-store one \(value 7, no layout\)/);
  // A member finding a negative single-store row: the layout mismatch is said first.
  const negativeAlone = kvIdError(
    () => refuseFound({ value: "-2", layout: null }, "B", AT),
    "config",
  );
  assert.match(negativeAlone.message, /single-store one \(value -2, no layout\)/);
});
