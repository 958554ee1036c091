/**
 * The case suite every SQL store passes, with each driver: ranges and their exact ends, the
 * floor guard, the give-back, the remembered step, the day cleanup and the server's clock, the
 * generators on top, durability read from the server, and errors typed by what caused them.
 * Run by `postgres_store_test.ts` (pg, postgres.js) and `mysql_store_test.ts` (mysql2) against a
 * server they start.
 *
 * @module
 */

import assert from "node:assert/strict";
import { DailyId, KvId, KvIdError } from "../../mod.ts";
import type { ReserveOptions, Store, StoreDurability } from "../../src/contract/store.ts";
import type { IdRange } from "../../src/contract/store.ts";
import { rejectsWith } from "./assert.ts";
import type { SqlServer } from "./sql_servers.ts";
import { runStoreSpec } from "./store_spec.ts";

/** A SQL store as the cases use it. */
export interface SqlStore extends Store {
  reserve: Store["reserve"];
  release(key: string, field: string, range: IdRange): Promise<boolean>;
  loadStep(key: string, field: string): Promise<number | undefined>;
  saveStep(key: string, field: string, step: number): Promise<void>;
  deleteDaysBefore(key: string, before: string): Promise<number>;
  durability(key: string): Promise<StoreDurability>;
  now(): Promise<number>;
  ensureTable(): Promise<void>;
}

/** Store options the cases pass. */
export interface CaseStoreOptions {
  table?: string;
  createTable?: boolean;
}

/** One driver on one server, for the cases: stores, and the superuser's SQL. */
export interface SqlHarness extends AsyncDisposable {
  /** E.g. `"PostgreSQL via pg"`. */
  readonly label: string;
  /** A store over a new client of the superuser. */
  store(options?: CaseStoreOptions): SqlStore;
  /** A store over a new client logged in as `user` with `password`. */
  storeAs(user: string, password: string, options?: CaseStoreOptions): SqlStore;
  /** A store of the superuser's over a new client of port `port` on 127.0.0.1 instead. */
  storeAt(port: number): SqlStore;
  /** Run SQL as the superuser (`?` or `$1` placeholders as the database has them). */
  exec(sql: string, values?: unknown[]): Promise<Record<string, unknown>[]>;
  /** Set a counter's `value` column by hand (a text value is sent as is, uncast). */
  setValue(table: string, key: string, name: string, value: string): Promise<void>;
  /** A counter's `value` as text, undefined when there is no row. */
  value(table: string, key: string, name: string): Promise<string | undefined>;
  /** Make a user `user`/`password` with SELECT, INSERT, UPDATE, DELETE on `table` only. */
  createAppUser(user: string, password: string, table: string): Promise<void>;
  /** Make the server (for `user`) read-only, as a standby is; the returned function undoes it. */
  readOnly(user: string): Promise<() => Promise<void>>;
  /** Make the server lose commits on a crash; the returned function undoes it. */
  unsafeDurability(user: string): Promise<{ setting: RegExp; undo: () => Promise<void> }>;
  /** Create a table the store refuses as not crash-safe (unlogged, MyISAM); its name. */
  notCrashSafeTable(): Promise<string>;
  /** Create a counter table whose `value` column is text (made by hand); its name. */
  textValueTable(): Promise<string>;
}

const GUARD = { floor: 0n, raiseTo: 0n, guard: true, exact: true };
const MAX = (1n << 63n) - 1n;
let unique = 0;
/** A table name no other case uses. */
export function freshTable(): string {
  return `kvid_case_${Date.now().toString(36)}_${unique++}`;
}

/** A loopback port nothing listens on (just closed): a connection to it is refused. */
export function closedPort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = listener.addr;
  listener.close();
  return port;
}

/**
 * Everything a SQL store's test file runs on its `server` with each of its `drivers`: the cases
 * below, the shared Store spec, and a server killed and started again under a store.
 */
export async function runSqlStoreSuite<D extends string>(
  t: Deno.TestContext,
  server: SqlServer,
  drivers: readonly D[],
  harness: (server: SqlServer, driver: D) => SqlHarness,
): Promise<void> {
  for (const driver of drivers) {
    await t.step(driver, async (t) => {
      await runSqlStoreCases(t, () => Promise.resolve(harness(server, driver)));
    });
    await t.step(`the shared Store spec, ${driver}`, async (t) => {
      await using h = harness(server, driver);
      // No corrupt(): the bigint column holds no non-integer (the cases check it refuses one).
      await runStoreSpec(t, {
        store: h.store({ table: freshTable() }),
        contiguous: true,
        layout: true,
        durable: true,
        // Its pool is ended with the harness's.
        unreachable: () =>
          Promise.resolve({
            store: h.storeAt(closedPort()),
            [Symbol.asyncDispose]: () => Promise.resolve(),
          }),
      });
    });
  }

  await t.step("a server that is down: connection, then serves again after a restart", async () => {
    await using h = harness(server, drivers[0]);
    const store = h.store();
    const before = await store.reserve("kvid", "restart", 10, GUARD);
    await server.kill();
    let down;
    try {
      down = await store.reserve("kvid", "restart", 10, GUARD).then(() => undefined, (e) => e);
    } finally {
      // Up again whatever was seen: the steps after this one need the server.
      await server.start();
    }
    assert.ok(down instanceof KvIdError, String(down));
    assert.ok(["connection", "unavailable"].includes(down.code), down.message);
    let after;
    for (let i = 0; i < 50 && after === undefined; i++) {
      after = await store.reserve("kvid", "restart", 10, GUARD).catch(() => undefined);
    }
    assert.ok(after && after.ranges[0].first > before.ranges[0].last, "serves again, above");
  });
}

/**
 * Two connections (`a`, `b`: run one statement each) lock the rows 1 and 2 of `kvid_locks`
 * (made by the caller) in opposite orders, each in a transaction opened with `begin`: the error
 * of the one the server picks as the deadlock victim. Both are rolled back after.
 */
export async function deadlockVictim(
  a: (sql: string) => Promise<unknown>,
  b: (sql: string) => Promise<unknown>,
  begin: string,
): Promise<unknown> {
  await a(begin);
  await b(begin);
  await a("UPDATE kvid_locks SET v = v + 1 WHERE id = 1");
  await b("UPDATE kvid_locks SET v = v + 1 WHERE id = 2");
  // Each now waits for the other: the server picks one to fail.
  const results = await Promise.allSettled([
    a("UPDATE kvid_locks SET v = v + 1 WHERE id = 2"),
    b("UPDATE kvid_locks SET v = v + 1 WHERE id = 1"),
  ]);
  const failed = results.find((r) => r.status === "rejected") as PromiseRejectedResult | undefined;
  assert.ok(failed, "one of the two was chosen as the deadlock victim");
  await a("ROLLBACK");
  await b("ROLLBACK");
  return failed.reason;
}

/** Run every case as a step of `t` over a harness `open()` makes for each. */
export async function runSqlStoreCases(
  t: Deno.TestContext,
  open: () => Promise<SqlHarness>,
): Promise<void> {
  for (const [name, body] of Object.entries(CASES)) {
    await t.step(name, async () => {
      await using h = await open();
      await body(h);
    });
  }
}

const CASES: Record<string, (h: SqlHarness) => Promise<void>> = {
  async "ranges: a new name starts at 1, each reservation the exact next range, to 2^63-1"(h) {
    const table = freshTable();
    const store = h.store({ table });
    const a = await store.reserve("kvid", "order", 10, GUARD);
    const b = await store.reserve("kvid", "order", 5, GUARD);
    assert.deepEqual(a.ranges, [{ first: 1n, last: 10n }]);
    assert.deepEqual(b.ranges, [{ first: 11n, last: 15n }]);
    assert.ok(!a.raised && !b.raised);
    // Another name, and the same name under another key, are counters of their own.
    assert.deepEqual((await store.reserve("kvid", "user", 3, GUARD)).ranges[0].last, 3n);
    assert.deepEqual((await store.reserve("other", "order", 2, GUARD)).ranges[0].last, 2n);
    // Past 2^53 every digit survives (no double on the way), up to 2^63-1 exactly.
    await h.setValue(table, "kvid", "order", String(2n ** 60n + 7n));
    const big = await store.reserve("kvid", "order", 2, GUARD);
    assert.deepEqual(big.ranges, [{ first: 2n ** 60n + 8n, last: 2n ** 60n + 9n }]);
    await h.setValue(table, "kvid", "order", String(MAX - 10n));
    assert.deepEqual((await store.reserve("kvid", "order", 10, GUARD)).ranges[0].last, MAX);
    await rejectsWith(store.reserve("kvid", "order", 1, GUARD), "overflow", /2\^63-1/);
    assert.equal(await h.value(table, "kvid", "order"), String(MAX), "left as it was");
  },

  async "floor guard: a counter below the caller's floor is raised first, once"(h) {
    const table = freshTable();
    const store = h.store({ table });
    // A counter that vanished (0) under a generator that issued up to 50.
    const missing = await store.reserve("kvid", "gone", 10, {
      floor: 50n,
      raiseTo: 150n,
      guard: true,
      exact: true,
    });
    assert.deepEqual(missing, { ranges: [{ first: 151n, last: 160n }], raised: true });
    await h.setValue(table, "kvid", "gone", "5"); // rolled back by hand
    const raised = await store.reserve("kvid", "gone", 10, {
      floor: 160n,
      raiseTo: 260n,
      guard: true,
      exact: true,
    });
    assert.deepEqual(raised, { ranges: [{ first: 261n, last: 270n }], raised: true });
    const again = await store.reserve("kvid", "gone", 10, {
      floor: 270n,
      raiseTo: 370n,
      guard: true,
      exact: true,
    });
    assert.deepEqual(again, { ranges: [{ first: 271n, last: 280n }], raised: false });
    // Without the guard the floor is not looked at.
    await h.setValue(table, "kvid", "gone", "5");
    const plain = await store.reserve("kvid", "gone", 10, {
      floor: 280n,
      raiseTo: 380n,
      guard: false,
      exact: true,
    });
    assert.deepEqual(plain, { ranges: [{ first: 6n, last: 15n }], raised: false });
    // A raise past 2^63-1 is refused and leaves the counter alone.
    await rejectsWith(
      store.reserve("kvid", "gone", 10, { floor: 100n, raiseTo: MAX, guard: true, exact: true }),
      "overflow",
    );
    assert.equal(await h.value(table, "kvid", "gone"), "15");
  },

  async "release: gives the tail back only while nobody reserved since (compare-and-set)"(h) {
    const table = freshTable();
    const store = h.store({ table });
    await store.reserve("kvid", "order", 100, GUARD); // 1..100, of which 10 used
    assert.equal(await store.release("kvid", "order", { first: 11n, last: 100n }), true);
    assert.deepEqual((await store.reserve("kvid", "order", 5, GUARD)).ranges[0].first, 11n);
    // Stale: the counter is 15 now, not 100.
    assert.equal(await store.release("kvid", "order", { first: 16n, last: 100n }), false);
    assert.equal(await h.value(table, "kvid", "order"), "15");
    assert.equal(await store.release("kvid", "nobody", { first: 1n, last: 5n }), false);
    assert.equal(await h.value(table, "kvid", "nobody"), undefined);
  },

  async "layout: an interleaved member's counter is labelled, checked and kept apart"(h) {
    const table = freshTable();
    const store = h.store({ table });
    const layout = "v1 servers=2 block=10 index=0";
    // ReserveOptions.layout comes with the interleaving over any store (issue 23b).
    const member = (o: ReserveOptions = GUARD) => ({ ...o, layout }) as ReserveOptions;
    const a = await store.reserve("kvid", "set", 3, member());
    assert.deepEqual(a.ranges, [{ first: 1n, last: 3n }]);
    assert.equal((a as { layout?: string }).layout, layout, "the layout is echoed");
    assert.deepEqual((await store.reserve("kvid", "set", 2, member())).ranges[0].last, 5n);
    await rejectsWith(store.reserve("kvid", "set", 1, GUARD), "config", /interleaved/);
    await rejectsWith(
      store.reserve(
        "kvid",
        "set",
        1,
        { ...GUARD, layout: "v1 servers=3 block=10 index=0" } as ReserveOptions,
      ),
      "config",
      /holds the layout/,
    );
    assert.equal(await h.value(table, "kvid", "set"), "5", "refusals change nothing");
    // A single store's counter (its value is an ID) is not taken over; a row at 0 is.
    await store.reserve("kvid", "single", 4, GUARD);
    await rejectsWith(store.reserve("kvid", "single", 1, member()), "config", /single-store/);
    await store.saveStep("kvid", "stepped", 64);
    assert.deepEqual((await store.reserve("kvid", "stepped", 2, member())).ranges, [
      { first: 1n, last: 2n },
    ]);
    const raised = await store.reserve(
      "kvid",
      "set",
      2,
      member({ floor: 100n, raiseTo: 100n, guard: true, exact: true }),
    );
    assert.deepEqual(raised.ranges, [{ first: 101n, last: 102n }]);
    assert.equal(raised.raised, true);
    // Give-back and day cleanup leave a member's counter alone.
    assert.equal(await store.release("kvid", "set", { first: 101n, last: 102n }), false);
    await store.reserve("kvid:daily:x", "20200101", 1, member());
    assert.equal(await store.deleteDaysBefore("kvid:daily:x", "20300101"), 0);
  },

  async "step memory: saved next to the counter, a hostile step column ignored"(h) {
    const table = freshTable();
    const store = h.store({ table });
    assert.equal(await store.loadStep("kvid", "order"), undefined);
    await store.saveStep("kvid", "order", 4096);
    assert.equal(await store.loadStep("kvid", "order"), 4096);
    // Saving a step made a row at 0: the counter still starts at 1.
    assert.deepEqual((await store.reserve("kvid", "order", 1, GUARD)).ranges[0].first, 1n);
    await h.exec(`UPDATE ${table} SET step = -5`);
    assert.equal(await store.loadStep("kvid", "order"), undefined);
    // A generator on a negative remembered step starts from its minStep (the ramp-up rule may
    // raise it to what its callers take in a few round trips) and serves; never from 4,096.
    await using gen = new KvId("order", { store, minStep: 7 });
    assert.equal(await gen.next(), 2);
    const { step } = gen.stats();
    assert.ok(step >= 7 && step < 4096, `step ${step}`);
  },

  async "day cleanup: only yyyymmdd rows of the key before the day; the server's clock"(h) {
    const table = freshTable();
    const store = h.store({ table });
    const key = "kvid:daily:order";
    for (const name of ["20261030", "20261031", "20261101", "notaday", "2026103"]) {
      await store.reserve(key, name, 1, GUARD);
    }
    await store.reserve("other", "20261030", 1, GUARD);
    assert.equal(await store.deleteDaysBefore(key, "20261101"), 2);
    assert.equal(await h.value(table, key, "20261030"), undefined);
    assert.equal(await h.value(table, key, "20261031"), undefined);
    for (const name of ["20261101", "notaday", "2026103"]) {
      assert.equal(await h.value(table, key, name), "1", name);
    }
    assert.equal(await h.value(table, "other", "20261030"), "1");
    await assert.rejects(store.deleteDaysBefore(key, "2026-11-01"), RangeError);
    const skew = Math.abs((await store.now()) - Date.now());
    assert.ok(skew < 60_000, `the server's clock is ${skew} ms off this one's`);
  },

  async "DailyId cleanup by the database's clock: a process days ahead keeps today's counter"(h) {
    const table = freshTable();
    const store = h.store({ table });
    const day = (ms: number) => new Date(ms).toISOString().slice(0, 10).replaceAll("-", "");
    const today = day(Date.now());
    const old = day(Date.now() - 5 * 86_400_000);
    const key = "kvid:daily:order";
    await store.reserve(key, today, 1, GUARD);
    await store.reserve(key, old, 1, GUARD);
    // Three days ahead, keeping 1 day: by its own clock alone, today would be deleted.
    await using ahead = new DailyId("order", {
      store,
      timeZone: "UTC",
      clock: () => Date.now() + 3 * 86_400_000,
    });
    assert.equal(await ahead.cleanup({ keepDays: 1 }), 1);
    assert.equal(await h.value(table, key, old), undefined, "the old day went");
    assert.equal(await h.value(table, key, today), "1", "today's counter stayed");
  },

  async "generators: KvId in number and bigint mode, two of them never overlap, close gives back"(
    h,
  ) {
    const table = freshTable();
    const store = h.store({ table });
    const a = new KvId("order", { store, minStep: 10, maxStep: 10 });
    const b = new KvId("order", { store, minStep: 10, maxStep: 10 });
    const seen = new Set<number>();
    for (let i = 0; i < 35; i++) {
      for (const id of [await a.next(), await b.next()]) {
        assert.ok(!seen.has(id), `duplicate ${id}`);
        seen.add(id);
      }
    }
    await a.close();
    await b.close();
    const end = BigInt(await h.value(table, "kvid", "order") ?? "0");
    let high = 0;
    for (const id of seen) high = Math.max(high, id);
    assert.ok(end >= BigInt(high), `the counter (${end}) is below an ID issued (${high})`);
    await store.reserve("kvid", "big", 1, GUARD);
    await h.setValue(table, "kvid", "big", String(2n ** 60n + 7n));
    await using big = new KvId("big", { store, bigint: true });
    assert.equal(await big.next(), 2n ** 60n + 8n);
  },

  async "durability: read from the server; a setting that loses commits is a named problem"(h) {
    const table = freshTable();
    const store = h.store({ table });
    await store.reserve("kvid", "order", 1, GUARD); // the table exists
    const good = await store.durability("kvid");
    assert.equal(good.durable, true, good.problems.join("; "));
    assert.deepEqual(good.problems, []);
    await h.createAppUser("kvid_weak", "weak-pw", table);
    const { setting, undo } = await h.unsafeDurability("kvid_weak");
    try {
      const weak = await h.storeAs("kvid_weak", "weak-pw", { table }).durability("kvid");
      assert.equal(weak.durable, false);
      assert.equal(weak.problems.length, 1, weak.problems.join("; "));
      assert.match(weak.problems[0], setting);
      assert.match(weak.problems[0], /set /, "the problem names the fix");
      // A generator refuses such a server by default, and serves with durability: "best-effort".
      await using strict = new KvId("order", {
        store: h.storeAs("kvid_weak", "weak-pw", { table }),
      });
      await rejectsWith(strict.next(), "config", setting);
      await using lenient = new KvId("order", {
        store: h.storeAs("kvid_weak", "weak-pw", { table }),
        durability: "best-effort",
      });
      assert.equal(await lenient.next(), 2);
    } finally {
      await undo();
    }
    const fragile = await h.notCrashSafeTable();
    const lost = await h.store({ table: fragile }).durability("kvid");
    assert.equal(lost.durable, false);
    assert.match(lost.problems.join("; "), new RegExp(fragile));
  },

  async "errors: setup mistakes are config, a read-only server unavailable, bad rows typed"(h) {
    const table = freshTable();
    const store = h.store({ table });
    // No table and not allowed to create it.
    await rejectsWith(
      h.store({ table: freshTable(), createTable: false }).reserve("kvid", "x", 1, GUARD),
      "config",
      /does not exist/,
    );
    await store.reserve("kvid", "order", 5, GUARD);
    // A user with rights on the table but no DDL: serves; cannot create another table.
    await h.createAppUser("kvid_app", "app-pw", table);
    const app = h.storeAs("kvid_app", "app-pw", { table });
    assert.deepEqual((await app.reserve("kvid", "order", 1, GUARD)).ranges[0].last, 6n);
    await rejectsWith(
      h.storeAs("kvid_app", "app-pw", { table: freshTable() }).reserve("kvid", "x", 1, GUARD),
      "config",
      /may not/,
    );
    await rejectsWith(
      h.storeAs("kvid_app", "wrong-pw", { table }).reserve("kvid", "x", 1, GUARD),
      "config",
      /login/,
    );
    const undo = await h.readOnly("kvid_app");
    try {
      await rejectsWith(
        h.storeAs("kvid_app", "app-pw", { table }).reserve("kvid", "order", 1, GUARD),
        "unavailable",
        /read-only/,
      );
    } finally {
      await undo();
    }
    assert.equal(await h.value(table, "kvid", "order"), "6", "nothing reserved while read-only");
    // Hostile rows: a negative value is refused and left; the column holds no non-integer and
    // nothing past 2^63-1.
    await h.setValue(table, "kvid", "order", "-3");
    await rejectsWith(store.reserve("kvid", "order", 1, GUARD), "reply", /negative/);
    assert.equal(await h.value(table, "kvid", "order"), "-3");
    await assert.rejects(h.setValue(table, "kvid", "order", "'12abc'"));
    await assert.rejects(h.setValue(table, "kvid", "order", "9223372036854775808"));
    // A table made by hand with a text value column: refused before any arithmetic on it.
    const textual = await h.textValueTable();
    await rejectsWith(
      h.store({ table: textual }).reserve("kvid", "x", 1, GUARD),
      "config",
      /column value .* not bigint/,
    );
    // Names the table cannot hold exactly.
    await rejectsWith(store.reserve("kvid", "x".repeat(256), 1, GUARD), "config", /255/);
    await rejectsWith(store.reserve("kvid", "a\0b", 1, GUARD), "config", /NUL/);
  },

  async "a table dropped under live generators: typed errors, never a duplicate"(h) {
    const table = freshTable();
    const store = h.store({ table });
    await using gen = new KvId("order", { store, minStep: 5, maxStep: 5, timeout: 2_000 });
    const ids: number[] = [];
    for (let i = 0; i < 12; i++) ids.push(await gen.next());
    await h.exec(`DROP TABLE ${table}`);
    // The generator's buffered IDs flow, then every call fails with a code, not a hang.
    let failure: unknown;
    for (let i = 0; i < 50 && failure === undefined; i++) {
      try {
        ids.push(await gen.next());
      } catch (err) {
        failure = err;
      }
    }
    assert.ok(failure instanceof Error && "code" in failure, `failed typed: ${failure}`);
    assert.equal((failure as { code: string }).code, "config");
    // Recreated empty (a restore from nothing): the generator's floor raises the counter.
    await h.store({ table }).ensureTable();
    let rollback = 0;
    gen.addEventListener("rollback", () => rollback++);
    // The generator refuses at once for its backoff after a refusal (the last error, config),
    // then reserves again: polled, bounded.
    const deadline = performance.now() + 10_000;
    for (let served = 0; served < 10;) {
      try {
        ids.push(await gen.next());
        served++;
      } catch (err) {
        assert.ok(err instanceof KvIdError && err.code === "config", String(err));
        assert.ok(performance.now() < deadline, `still refused after 10 s: ${err}`);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    }
    assert.equal(new Set(ids).size, ids.length, `duplicates in ${ids.join(",")}`);
    assert.ok(rollback >= 1, "the raise was reported");
  },
};
