/**
 * Unit tests of what both SQL stores share (src/stores/sql/sql_table_store.ts): the flow of a
 * reservation over its two statements, the give-back's bounds, the counters listing, the
 * durability verdict, and finding or creating the table on first use, each seen through the
 * exact calls it makes on a {@linkcode SqlDialect} this file scripts. The dialects themselves,
 * their SQL and their drivers, run against PostgreSQL and MariaDB in tests/stores/postgres/,
 * tests/stores/mysql/ and tests/stores/sql/sql_store_spec_test.ts; this file starts no server.
 */

import "../../support/deadline.ts"; // a time limit on every test of this file
import assert from "node:assert/strict";
import { KvIdError } from "../../../src/contract/errors.ts";
import type { MemberReserveOptions, ReserveOptions } from "../../../src/contract/store.ts";
import { type SqlDialect, SqlTableStore } from "../../../src/stores/sql/sql_table_store.ts";
import { rejectsWith } from "../../support/assert.ts";

const MAX = (1n << 63n) - 1n;
const PLAIN: ReserveOptions = { floor: 0n, raiseTo: 0n, guard: false, exact: true };
const WHERE = 'table t, hash_key "kvid", name "order"';

/** A dialect whose every statement is logged and answered by `answers` (or a default). */
class Script implements SqlDialect {
  readonly calls: string[] = [];
  constructor(readonly answers: Partial<Record<keyof SqlDialect, (...args: never[]) => unknown>>) {}
  #run(name: keyof SqlDialect, args: unknown[], otherwise: unknown): unknown {
    this.calls.push([name, ...args.map((a) => a === null ? "null" : String(a))].join(" "));
    const answer = this.answers[name] as ((...args: unknown[]) => unknown) | undefined;
    return answer ? answer(...args) : otherwise;
  }
  error(err: unknown, key: string, field: string): KvIdError {
    this.calls.push(`error ${key} ${field}`);
    return new KvIdError("unavailable", `mapped: ${(err as Error).message}`, { key, field });
  }
  isMissingTable(err: unknown): boolean {
    return /missing/.test((err as Error).message);
  }
  probe() {
    return Promise.resolve(this.#run("probe", [], undefined)) as Promise<void>;
  }
  createTable() {
    return Promise.resolve(this.#run("createTable", [], undefined)) as Promise<void>;
  }
  columns() {
    return Promise.resolve(this.#run("columns", [], [])) as Promise<Record<string, unknown>[]>;
  }
  increment(...args: [string, string, bigint, bigint, string | null]) {
    return Promise.resolve(this.#run("increment", args, undefined));
  }
  insertOrRaise(...args: [string, string, bigint, bigint, string | null]) {
    return Promise.resolve(this.#run("insertOrRaise", args, undefined));
  }
  find(...args: [string, string]) {
    return Promise.resolve(this.#run("find", args, undefined)) as Promise<
      Record<string, unknown> | undefined
    >;
  }
  counters(key: string, names: readonly string[] | undefined) {
    return Promise.resolve(
      this.#run("counters", [key, names?.join(",") ?? "all"], []),
    ) as Promise<Record<string, unknown>[]>;
  }
  release(...args: [string, string, bigint, bigint]) {
    return Promise.resolve(this.#run("release", args, true)) as Promise<boolean>;
  }
  loadStep(...args: [string, string]) {
    return Promise.resolve(this.#run("loadStep", args, undefined));
  }
  saveStep(...args: [string, string, number]) {
    return Promise.resolve(this.#run("saveStep", args, undefined)) as Promise<void>;
  }
  deleteDaysBefore(...args: [string, string]) {
    return Promise.resolve(this.#run("deleteDaysBefore", args, 0)) as Promise<number>;
  }
  now() {
    return Promise.resolve(this.#run("now", [], 0)) as Promise<number>;
  }
  settings() {
    return Promise.resolve(this.#run("settings", [], {})) as Promise<Record<string, unknown>>;
  }
  problems(settings: Readonly<Record<string, string>>): string[] {
    return (this.answers.problems as ((s: unknown) => string[]) | undefined)?.(settings) ?? [];
  }
}

/** `SqlTableStore` made through its protected constructor, as the two stores make it. */
class Store extends SqlTableStore {
  constructor(dialect: SqlDialect, options: { table?: string; createTable?: boolean } = {}) {
    super("TestStore", { table: "t", ...options }, () => dialect);
  }
}

/** The calls after the first use's `probe` and `columns`. */
function after(d: Script): string[] {
  assert.deepEqual(d.calls.slice(0, 2), ["probe", "columns"]);
  return d.calls.slice(2);
}

Deno.test("options: table defaults to kvid_counters, createTable to true and must be a boolean", async () => {
  let made = "";
  class Named extends SqlTableStore {
    constructor(options: { table?: string; createTable?: unknown }) {
      super("TestStore", options as { createTable?: boolean }, (table) => {
        made = table;
        return new Script({ probe: () => Promise.reject(new Error("missing")) });
      });
    }
  }
  const store = new Named({});
  assert.equal(store.table, "kvid_counters");
  assert.equal(made, "kvid_counters");
  assert.equal(new Named({ table: "ids.c" }).table, "ids.c");
  assert.throws(
    () => new Named({ createTable: "yes" }),
    (e) => e instanceof TypeError && /createTable must be a boolean, got yes/.test(e.message),
  );
  assert.throws(() => new Named({ table: "a b" }), TypeError);
  // Default true: a missing table is created.
  const d = new Script({ probe: () => Promise.reject(new Error("missing")) });
  await new Store(d).saveStep("kvid", "order", 5);
  assert.deepEqual(d.calls, ["probe", "createTable", "columns", "saveStep kvid order 5"]);
  assert.equal(new Store(d).describe("kvid", "order"), WHERE);
});

Deno.test("first use: a missing table is not created with createTable false, nor past other errors", async () => {
  const missing = new Script({ probe: () => Promise.reject(new Error("missing table")) });
  await rejectsWith(
    new Store(missing, { createTable: false }).loadStep("kvid", "order"),
    "unavailable",
    /mapped: missing table/,
  );
  assert.deepEqual(missing.calls, ["probe", "error kvid order"]);

  const denied = new Script({ probe: () => Promise.reject(new Error("permission denied")) });
  await rejectsWith(new Store(denied).loadStep("kvid", "order"), "unavailable", /denied/);
  assert.deepEqual(denied.calls, ["probe", "error kvid order"]);

  const columns = new Script({ columns: () => Promise.reject(new Error("no catalog")) });
  await rejectsWith(new Store(columns).loadStep("kvid", "order"), "unavailable", /no catalog/);
  assert.deepEqual(columns.calls, ["probe", "columns", "error kvid order"]);

  const text = new Script({
    columns: () => [
      { name: "hash_key", type: "text" },
      { name: "name", type: "text" },
      { name: "value", type: "text" },
      { name: "step", type: "bigint" },
      { name: "layout", type: "text" },
    ],
  });
  await rejectsWith(new Store(text).loadStep("kvid", "order"), "config", /value .* is text/);
  assert.deepEqual(text.calls, ["probe", "columns"]);
});

Deno.test("first use: a create that loses a race is tried once more; a second failure is thrown", async () => {
  let creates = 0;
  const raced = new Script({
    probe: () => Promise.reject(new Error("missing")),
    createTable: () => ++creates === 1 ? Promise.reject(new Error("type already exists")) : 0,
  });
  await new Store(raced).saveStep("kvid", "order", 1);
  assert.deepEqual(raced.calls, [
    "probe",
    "createTable",
    "createTable",
    "columns",
    "saveStep kvid order 1",
  ]);

  const broken = new Script({
    probe: () => Promise.reject(new Error("missing")),
    createTable: () => Promise.reject(new Error("disk full")),
  });
  await rejectsWith(new Store(broken).saveStep("kvid", "order", 1), "unavailable", /disk full/);
  assert.deepEqual(broken.calls, ["probe", "createTable", "createTable", "error kvid order"]);

  const ensure = new Script({ createTable: () => Promise.reject(new Error("denied")) });
  await rejectsWith(new Store(ensure).ensureTable(), "unavailable", /denied/);
  assert.deepEqual(ensure.calls, ["createTable", "createTable", "error  "]);
  const ok = new Script({});
  await new Store(ok).ensureTable();
  assert.deepEqual(ok.calls, ["createTable"]);
});

Deno.test("first use: found once per store; a failed check is tried again on the next call", async () => {
  let probes = 0;
  const d = new Script({ probe: () => ++probes === 1 ? Promise.reject(new Error("down")) : 0 });
  const store = new Store(d);
  await rejectsWith(store.loadStep("kvid", "order"), "unavailable", /down/);
  assert.equal(await store.loadStep("kvid", "order"), undefined);
  await store.saveStep("kvid", "order", 3);
  assert.deepEqual(d.calls, [
    "probe",
    "error kvid order",
    "probe",
    "columns",
    "loadStep kvid order",
    "saveStep kvid order 3",
  ]);
  // Two calls at once share one check.
  const both = new Script({});
  const shared = new Store(both);
  await Promise.all([shared.loadStep("kvid", "a"), shared.loadStep("kvid", "b")]);
  assert.deepEqual(both.calls.filter((c) => c === "probe"), ["probe"]);
});

Deno.test("a statement's failure is mapped by the dialect, naming the counter", async () => {
  const d = new Script({ loadStep: () => Promise.reject(new Error("reset")) });
  const err = await rejectsWith(new Store(d).loadStep("kvid", "order"), "unavailable", /reset/);
  assert.equal(err.field, "order");
  assert.deepEqual(after(d), ["loadStep kvid order", "error kvid order"]);
});

Deno.test("reserve: count must be a positive safe integer; names a table can hold", async () => {
  const d = new Script({ increment: () => "1" });
  const store = new Store(d);
  for (const count of [0, -1, 1.5, 2 ** 53, NaN]) {
    await assert.rejects(
      store.reserve("kvid", "order", count, PLAIN),
      (e) => e instanceof RangeError && e.message.includes(`got ${count}`),
    );
  }
  await assert.rejects(store.reserve("kvid", "a\0b", 1, PLAIN), KvIdError);
  assert.deepEqual(d.calls, []);
  assert.deepEqual((await store.reserve("kvid", "order", 1, PLAIN)).ranges, [
    { first: 1n, last: 1n },
  ]);
});

Deno.test("reserve: one UPDATE when it matches, the floor passed only with the guard", async () => {
  const d = new Script({ increment: () => "110" });
  const store = new Store(d);
  assert.deepEqual(await store.reserve("kvid", "order", 10, PLAIN), {
    ranges: [{ first: 101n, last: 110n }],
    raised: false,
  });
  await store.reserve("kvid", "order", 10, { ...PLAIN, floor: 7n, raiseTo: 9n });
  await store.reserve("kvid", "order", 10, { ...PLAIN, floor: 7n, raiseTo: 9n, guard: true });
  await store.reserve("kvid", "order", 10, { ...PLAIN, guard: true });
  const member = await store.reserve("kvid", "order", 10, { ...PLAIN, layout: "v1 x" } as never);
  assert.deepEqual(member, {
    ranges: [{ first: 101n, last: 110n }],
    raised: false,
    layout: "v1 x",
  });
  assert.deepEqual(after(d), [
    "increment kvid order 10 0 null",
    "increment kvid order 10 0 null",
    "increment kvid order 10 7 null",
    "increment kvid order 10 0 null",
    "increment kvid order 10 0 v1 x",
  ]);
  const bad = new Script({ increment: () => "5" });
  await rejectsWith(new Store(bad).reserve("kvid", "order", 10, PLAIN), "reply", /came back as 5/);
});

Deno.test("reserve: a new counter is inserted at count; one below the floor raised to raiseTo + count", async () => {
  const fresh = new Script({ insertOrRaise: () => "10" });
  assert.deepEqual(await new Store(fresh).reserve("kvid", "order", 10, PLAIN), {
    ranges: [{ first: 1n, last: 10n }],
    raised: false,
  });
  // Without the guard, raiseTo is not used.
  await new Store(fresh).reserve("kvid", "order", 10, { ...PLAIN, floor: 50n, raiseTo: 60n });
  assert.deepEqual(fresh.calls.filter((c) => c.startsWith("insert")), [
    "insertOrRaise kvid order 10 0 null",
    "insertOrRaise kvid order 10 0 null",
  ]);

  const low = new Script({ insertOrRaise: () => "70" });
  const guarded = { ...PLAIN, floor: 50n, raiseTo: 60n, guard: true };
  assert.deepEqual(await new Store(low).reserve("kvid", "order", 10, guarded), {
    ranges: [{ first: 61n, last: 70n }],
    raised: true,
  });
  const member = await new Store(low).reserve(
    "kvid",
    "order",
    10,
    {
      ...guarded,
      layout: "v1 y",
    } as ReserveOptions & MemberReserveOptions,
  );
  assert.equal(member.layout, "v1 y");
  assert.deepEqual(low.calls.filter((c) => !/^(probe|columns)$/.test(c)), [
    "increment kvid order 10 50 null",
    "insertOrRaise kvid order 70 50 null",
    "increment kvid order 10 50 v1 y",
    "insertOrRaise kvid order 70 50 v1 y",
  ]);
});

Deno.test("reserve: raising past 2^63-1 is an overflow, never sent; raiseTo past it capped", async () => {
  const d = new Script({ insertOrRaise: () => String(MAX) });
  const store = new Store(d);
  const past = { ...PLAIN, floor: 5n, raiseTo: MAX + 10n, guard: true };
  await rejectsWith(
    store.reserve("kvid", "order", 1, past),
    "overflow",
    new RegExp(`raising the counter to ${MAX} would pass`),
  );
  await rejectsWith(
    store.reserve("kvid", "order", 1, { ...past, raiseTo: MAX }),
    "overflow",
    new RegExp(`raising the counter to ${MAX} would pass`),
  );
  const fits = await store.reserve("kvid", "order", 1, { ...past, raiseTo: MAX - 1n });
  assert.deepEqual(fits.ranges, [{ first: MAX, last: MAX }]);
  assert.deepEqual(after(d).filter((c) => c.startsWith("insert")), [
    `insertOrRaise kvid order ${MAX} 5 null`,
  ]);
});

Deno.test("reserve: a row matched by neither statement is read; moved, it is tried again 8 times", async () => {
  let increments = 0;
  const moved = new Script({
    increment: () => {
      // A loop that does not stop at 8 attempts fails here, not on the time limit.
      assert.ok(++increments <= 8, "more than 8 attempts");
      return undefined;
    },
    find: () => ({ value: "3", layout: null }),
  });
  await rejectsWith(
    new Store(moved).reserve("kvid", "order", 1, PLAIN),
    "conflict",
    /kept moving .* \(8 attempts\)/,
  );
  const round = [
    "increment kvid order 1 0 null",
    "insertOrRaise kvid order 1 0 null",
    "find kvid order",
  ];
  assert.deepEqual(after(moved), Array.from({ length: 8 }, () => round).flat());

  let rounds = 0;
  const second = new Script({
    increment: () => ++rounds === 2 ? "4" : undefined,
    find: () => ({ value: "3", layout: null }),
  });
  assert.deepEqual((await new Store(second).reserve("kvid", "order", 1, PLAIN)).ranges, [
    { first: 4n, last: 4n },
  ]);

  const negative = new Script({ find: () => ({ value: "-2", layout: null }) });
  await rejectsWith(new Store(negative).reserve("kvid", "order", 1, PLAIN), "reply", /negative/);
  const other = new Script({ find: () => ({ value: "3", layout: "v1 z" }) });
  await rejectsWith(new Store(other).reserve("kvid", "order", 1, PLAIN), "config");
});

Deno.test("release: only a range inside 1..2^63-1, first <= last; compare-and-set from last", async () => {
  const d = new Script({ release: () => true });
  const store = new Store(d);
  for (
    const range of [
      { first: 0n, last: 5n },
      { first: 6n, last: 5n },
      { first: MAX, last: MAX + 1n },
      { first: -3n, last: -1n },
    ]
  ) {
    assert.equal(await store.release("kvid", "order", range), false);
  }
  assert.deepEqual(d.calls, []);
  assert.equal(await store.release("kvid", "order", { first: 1n, last: 1n }), true);
  assert.equal(await store.release("kvid", "order", { first: 4n, last: 9n }), true);
  assert.equal(await store.release("kvid", "order", { first: MAX, last: MAX }), true);
  await assert.rejects(store.release("kvid", "a\0", { first: 4n, last: 9n }), KvIdError);
  assert.deepEqual(after(d), [
    "release kvid order 0 1",
    "release kvid order 3 9",
    `release kvid order ${MAX - 1n} ${MAX}`,
  ]);
  const lost = new Script({ release: () => false });
  assert.equal(await new Store(lost).release("kvid", "order", { first: 4n, last: 9n }), false);
});

Deno.test("step memory: the dialect's step read as a positive safe integer, saved as given", async () => {
  const d = new Script({ loadStep: () => "250" });
  const store = new Store(d);
  assert.equal(await store.loadStep("kvid", "order"), 250);
  await store.saveStep("kvid", "order", 400);
  await assert.rejects(store.loadStep("kvid", "a\0"), KvIdError);
  await assert.rejects(store.saveStep("kvid", "a\0", 1), KvIdError);
  assert.deepEqual(after(d), ["loadStep kvid order", "saveStep kvid order 400"]);
  const hostile = new Script({ loadStep: () => "-4" });
  assert.equal(await new Store(hostile).loadStep("kvid", "order"), undefined);
});

Deno.test("day cleanup: a yyyymmdd day only, the count the dialect deleted", async () => {
  const d = new Script({ deleteDaysBefore: () => 3 });
  const store = new Store(d);
  for (const before of ["2026-12-01", "2026120", "x20261201", ""]) {
    await assert.rejects(
      store.deleteDaysBefore("kvid", before),
      (e) => e instanceof RangeError && e.message.includes(`not a yyyymmdd day: ${before}`),
    );
  }
  assert.deepEqual(d.calls, []);
  assert.equal(await store.deleteDaysBefore("kvid", "20261201"), 3);
  assert.deepEqual(after(d), ["deleteDaysBefore kvid 20261201"]);
  const failed = new Script({ deleteDaysBefore: () => Promise.reject(new Error("lock")) });
  const err = await rejectsWith(
    new Store(failed).deleteDaysBefore("kvid", "20261201"),
    "unavailable",
  );
  assert.equal(err.field, "<20261201");
});

Deno.test("counters: rows read exactly, layouts kept, hostile values refused, unholdable names none", async () => {
  const d = new Script({
    counters: () => [
      { name: "a", value: "9223372036854775807", layout: null },
      { name: "b", value: 0n, layout: undefined },
      { name: "m", value: "4", layout: "v1 servers=2" },
    ],
  });
  const store = new Store(d);
  assert.deepEqual(
    await store.counters("kvid"),
    new Map([
      ["a", { value: MAX }],
      ["b", { value: 0n }],
      ["m", { value: 4n, layout: "v1 servers=2" }],
    ]),
  );
  await store.counters("kvid", { names: ["a", "x\0", "z".repeat(256), "é".repeat(255)] });
  assert.deepEqual(await store.counters("kvid", { names: ["x\0", "z".repeat(256)] }), new Map());
  assert.deepEqual(await store.counters("kvid", { names: [] }), new Map());
  assert.deepEqual(await store.counters("k\0"), new Map());
  assert.deepEqual(await store.counters("k".repeat(256)), new Map());
  await store.counters("é".repeat(255));
  assert.deepEqual(after(d), [
    "counters kvid all",
    `counters kvid a,${"é".repeat(255)}`,
    `counters ${"é".repeat(255)} all`,
  ]);
  for (const value of ["-1", "9223372036854775808", "1.5", null]) {
    const bad = new Script({ counters: () => [{ name: "a", value, layout: null }] });
    const err = await rejectsWith(
      new Store(bad).counters("kvid"),
      "reply",
      new RegExp(`holds ${value}, not a counter`),
    );
    assert.equal(err.reason, "not-a-counter");
    assert.equal(err.field, "a");
  }
});

Deno.test("now: the dialect's clock, after the first-use check", async () => {
  const d = new Script({ now: () => 1767225600000 });
  assert.equal(await new Store(d).now(), 1767225600000);
  assert.deepEqual(after(d), ["now"]);
});

Deno.test("durability: settings as text, stated ones only for unknown, the dialect's problems", async () => {
  let seen: Readonly<Record<string, string>> = {};
  const d = new Script({
    settings: () => ({ fsync: "on", sync: 1n, hidden: null }),
    problems: (s: Record<string, string>) => {
      seen = s;
      return s.fsync === "off" ? ["fsync is off: turn it on"] : [];
    },
  });
  const store = new Store(d);
  const read = await store.durability("kvid", { stated: { hidden: "on", fsync: "off" } } as never);
  assert.deepEqual(seen, { fsync: "on", sync: "1", hidden: "on" });
  assert.deepEqual(read, {
    durable: true,
    settings: { fsync: "on", sync: "1", hidden: "on" },
    problems: [],
    lossWithoutCrash: false,
  });
  assert.deepEqual((await store.durability("kvid")).settings.hidden, "unknown");
  const off = new Script({
    settings: () => ({ fsync: "off" }),
    problems: () => ["fsync is off: turn it on"],
  });
  assert.deepEqual(await new Store(off).durability("kvid"), {
    durable: false,
    settings: { fsync: "off" },
    problems: ["fsync is off: turn it on"],
    lossWithoutCrash: false,
  });
  assert.deepEqual(after(off), ["settings"]);
});
