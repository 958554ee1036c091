/**
 * The shared Store spec: the cases every store runs, as one suite (Hono's `runTest({ newRouter })`,
 * CosId's `IdSegmentDistributorSpec`). A store file calls {@linkcode runStoreSpec} inside a
 * `Deno.test` with a subject; a case whose method the store leaves out (the contract's optional
 * methods) is reported as ignored with the reason in its name, never passed.
 *
 * @module
 */

import assert from "node:assert/strict";
import { KvId, KvIdError } from "../../mod.ts";
import { isTransient } from "../../src/contract/errors.ts";
import { DAY_FIELD, MAX_ID } from "../../src/contract/store.ts";
// The capability guards, one per optional capability: `can.hasGiveBack(store)`.
import * as can from "../../src/contract/store.ts";
import type {
  AnyReserveOptions,
  AnyStore,
  IdRange,
  Reservation,
  ReserveOptions,
  Store,
} from "../../src/stores/mod.ts";

/** A store to check, and what it is. */
export interface StoreSubject {
  /** The store, open for the whole spec. */
  store: Store;
  /**
   * A reservation of `count` is one range of `count` consecutive IDs that continues where the
   * counter's last reservation ended (false for interleaved stores: whole blocks, several ranges).
   */
  contiguous: boolean;
  /** Write something that is not an integer where the counter `field` of `key` lives. */
  corrupt?(key: string, field: string): Promise<void>;
  /**
   * The store records an interleaved set's layout (`MemberReserveOptions.layout`), so it
   * can be a member of an `InterleavedStore`. Default false.
   */
  layout?: boolean;
  /** What `durability()` must say of the server under test (a durable one: true). */
  durable?: boolean;
  /**
   * The one hash key the store serves, when it serves only one (`HttpStore`: the service's
   * `"kvid"`); every case then uses fresh fields in it. Default: a fresh key.
   */
  key?: string;
  /**
   * A store of the same kind whose server cannot be reached (stopped, or nothing listening on
   * its port), failing fast rather than queueing, for the error classification case; disposed
   * after it.
   */
  unreachable?(): Promise<{ store: Store } & AsyncDisposable>;
  /**
   * Cases this store is known to fail, each with what is wrong: the case is shown as ignored
   * with that text in its name (a visible gap, never a pass) until the store is fixed.
   */
  knownBugs?: { memberDays?: string };
}

const PLAIN: ReserveOptions = { floor: 0n, raiseTo: 0n, guard: true, exact: true };
/** A durability read's verdict that accepts: the spec reads the facts, it serves nothing. */
const ACCEPT = () => undefined;

/**
 * The subject's store as the spec calls it: every capability optional (each case checks its own
 * by shape, and is ignored without it), and any capability's reserve options.
 */
type SpecStore = AnyStore & {
  reserve(key: string, field: string, count: number, o: AnyReserveOptions): Promise<Reservation>;
};

let unique = 0;
/** A counter name no other case (and no earlier run on a shared server) has used. */
function fresh(what: string): string {
  return `spec-${what}-${Date.now().toString(36)}-${unique++}`;
}

function size(ranges: readonly IdRange[]): bigint {
  return ranges.reduce((n, r) => n + r.last - r.first + 1n, 0n);
}

/**
 * Ranges well formed, increasing, disjoint, inside 1..2^63-1, `count` IDs in all (at least
 * `count` where `whole` blocks are handed out).
 */
function assertRanges(ranges: readonly IdRange[], count: number, whole = false): void {
  assert.ok(ranges.length > 0, "a reservation holds at least one range");
  let previous = 0n;
  for (const r of ranges) {
    assert.equal(typeof r.first, "bigint");
    assert.ok(r.first > previous && r.first <= r.last && r.last <= MAX_ID, JSON.stringify(r, big));
    previous = r.last;
  }
  if (whole) assert.ok(size(ranges) >= BigInt(count), "fewer IDs than asked for");
  else assert.equal(size(ranges), BigInt(count));
}

function big(_: string, v: unknown): unknown {
  return typeof v === "bigint" ? `${v}n` : v;
}

/** Run every case of the contract against `subject` as steps of `t`. */
export async function runStoreSpec(t: Deno.TestContext, subject: StoreSubject): Promise<void> {
  const { contiguous } = subject;
  const store: SpecStore = subject.store;
  const key = subject.key ?? fresh("key");
  const check = (ranges: readonly IdRange[], count: number) =>
    assertRanges(ranges, count, !contiguous);

  await t.step("a new counter starts at 1; each reservation continues after the last", async () => {
    const field = fresh("start");
    const a = await store.reserve(key, field, 10, PLAIN);
    // As the engine does: its high-water mark as the floor (an interleaved store needs it to
    // stay above; a single counter is at the mark, so nothing is raised).
    const mark = a.ranges.at(-1)!.last;
    const b = await store.reserve(key, field, 5, { ...PLAIN, floor: mark, raiseTo: mark });
    check(a.ranges, 10);
    check(b.ranges, 5);
    assert.equal(a.raised, false);
    assert.equal(b.raised, false);
    assert.ok(
      b.ranges[0].first > a.ranges.at(-1)!.last,
      "the second reservation is above the first",
    );
    if (contiguous) {
      assert.deepEqual(a.ranges, [{ first: 1n, last: 10n }]);
      assert.deepEqual(b.ranges, [{ first: 11n, last: 15n }]);
    }
  });

  await t.step({
    name: subject.key === undefined
      ? "another key is another counter"
      : "another key (ignored: this store serves one key)",
    ignore: subject.key !== undefined,
    fn: async () => {
      const field = fresh("keys");
      const a = await store.reserve(key, field, 3, PLAIN);
      const b = await store.reserve(fresh("other-key"), field, 3, PLAIN);
      check(b.ranges, 3);
      // Interleaved: the next reservation goes to the next server in turn, so only one store says.
      if (contiguous) {
        assert.deepEqual(b.ranges, a.ranges, "the same name under another key starts over");
      }
    },
  });

  await t.step("the guard raises a counter below the floor, and only then", async () => {
    const field = fresh("guard");
    await store.reserve(key, field, 10, PLAIN);
    const above = await store.reserve(key, field, 10, { ...PLAIN, floor: 5n, raiseTo: 1_000n });
    assert.equal(above.raised, false, "a counter above the floor is left as it is");
    const below = await store.reserve(key, field, 10, { ...PLAIN, floor: 5_000n, raiseTo: 9_000n });
    // An interleaved server jumps to its first block above the floor, which is no rollback of it.
    if (contiguous) {
      assert.equal(below.raised, true, "a counter below the floor is raised and says so");
    }
    check(below.ranges, 10);
    assert.ok(below.ranges[0].first > 5_000n, "no ID at or below the floor after a raise");
    if (contiguous) {
      assert.deepEqual(above.ranges, [{ first: 11n, last: 20n }]);
      assert.deepEqual(below.ranges, [{ first: 9_001n, last: 9_010n }]);
    }
    const unguarded = await store.reserve(key, field, 1, {
      ...PLAIN,
      floor: 1n << 40n,
      guard: false,
    });
    assert.equal(unguarded.raised, false, "guard: false never raises");
  });

  await t.step("ends above 2^53 are exact", async () => {
    const field = fresh("exact");
    const floor = (1n << 60n) + 3n;
    const r = await store.reserve(key, field, 7, { ...PLAIN, floor, raiseTo: floor + 2n });
    check(r.ranges, 7);
    assert.ok(r.ranges[0].first > floor);
    if (contiguous) assert.deepEqual(r.ranges, [{ first: floor + 3n, last: floor + 9n }]);
    const mark = r.ranges.at(-1)!.last;
    const next = await store.reserve(key, field, 1, { ...PLAIN, floor: mark, raiseTo: mark });
    assert.ok(next.ranges[0].first > r.ranges.at(-1)!.last);
    if (contiguous) assert.deepEqual(next.ranges, [{ first: floor + 10n, last: floor + 10n }]);
  });

  await t.step("a counter never passes 2^63-1: overflow, nothing handed out", async () => {
    const field = fresh("overflow");
    const floor = MAX_ID - 100n;
    const err = await store.reserve(key, field, 1_000, { ...PLAIN, floor, raiseTo: floor })
      .then((r) => r, (e: unknown) => e);
    assert.ok(err instanceof KvIdError, `an overflow is a KvIdError, got ${Deno.inspect(err)}`);
    assert.equal(err.code, "overflow");
  });

  await t.step("concurrent reservations never overlap", async () => {
    const field = fresh("concurrent");
    const counts = Array.from({ length: 40 }, (_, i) => 1 + (i * 7) % 23);
    const all = await Promise.all(counts.map((n) => store.reserve(key, field, n, PLAIN)));
    const ranges = all.flatMap((r, i) => {
      check(r.ranges, counts[i]);
      return r.ranges;
    }).sort((a, b) => (a.first < b.first ? -1 : 1));
    for (let i = 1; i < ranges.length; i++) {
      assert.ok(ranges[i].first > ranges[i - 1].last, "two reservations share an ID");
    }
    if (contiguous) {
      const total = counts.reduce((a, b) => a + b, 0);
      assert.deepEqual({ first: ranges[0].first, last: ranges.at(-1)!.last }, {
        first: 1n,
        last: BigInt(total),
      });
    }
  });

  const release = can.hasRelease(store) ? store.release.bind(store) : undefined;
  await t.step({
    name: release && contiguous
      ? "release gives the tail back only if nobody reserved since (compare-and-set)"
      : "release (ignored: this store does not give ranges back)",
    ignore: !(release && contiguous),
    fn: async () => {
      const field = fresh("release");
      const r = await store.reserve(key, field, 100, PLAIN);
      assert.equal(await release!(key, field, { first: 51n, last: 100n }), true);
      const again = await store.reserve(key, field, 10, PLAIN);
      assert.deepEqual(again.ranges, [{ first: 51n, last: 60n }], "the tail is reserved again");
      await store.reserve(key, field, 10, PLAIN); // another process reserved since
      assert.equal(await release!(key, field, { first: 55n, last: 60n }), false);
      const after = await store.reserve(key, field, 1, PLAIN);
      assert.deepEqual(
        after.ranges,
        [{ first: 71n, last: 71n }],
        "a refused release changes nothing",
      );
      assert.ok(r.ranges[0].first === 1n);
    },
  });

  await t.step({
    name: can.hasGiveBack(store) && contiguous
      ? "giveBack: the top lowers the counter (compare-and-set), the rest is pooled, reserved first above the floor"
      : "giveBack (ignored: this store keeps no pool of given-back ranges)",
    ignore: !(can.hasGiveBack(store) && contiguous),
    fn: async () => {
      const field = fresh("give-back");
      const pool = { ...PLAIN, pool: true };
      await store.reserve(key, field, 20, PLAIN); // 1..20, of which 1..4 and 9..14 used
      const two = [{ first: 5n, last: 8n }, { first: 15n, last: 20n }];
      assert.equal(await store.giveBack!(key, field, two), 2);
      const from = async (count: number, options: ReserveOptions) =>
        (await store.reserve(key, field, count, options)).ranges;
      assert.deepEqual(await from(3, pool), [{ first: 5n, last: 7n }], "the pool first");
      assert.deepEqual(
        await from(3, { ...pool, floor: 8n, raiseTo: 8n }),
        [{ first: 15n, last: 17n }],
        "a pooled ID at or below the floor is never taken: the counter, lowered to 14",
      );
      assert.deepEqual(await from(1, pool), [{ first: 8n, last: 8n }]);
      assert.deepEqual(await from(3, PLAIN), [{ first: 18n, last: 20n }], "the pool is empty");
      // Another process reserved 18..20 since 15..17: its tail goes to the pool, not the counter.
      assert.equal(await store.giveBack!(key, field, [{ first: 16n, last: 17n }]), 1);
      assert.deepEqual(await from(1, PLAIN), [{ first: 21n, last: 21n }], "the counter stayed");
      assert.deepEqual(await from(2, pool), [{ first: 16n, last: 17n }]);
    },
  });

  const steps = can.hasStepMemory(store);
  await t.step({
    name: steps
      ? "the remembered step: none for a new counter, then what was saved, per counter"
      : "step memory (ignored: this store does not remember steps)",
    ignore: !steps,
    fn: async () => {
      const field = fresh("step");
      const other = fresh("step-other");
      assert.equal(await store.loadStep!(key, field), undefined);
      await store.saveStep!(key, field, 4_096);
      assert.equal(await store.loadStep!(key, field), 4_096);
      assert.equal(await store.loadStep!(key, other), undefined, "another counter has its own");
      await store.saveStep!(key, field, 512);
      assert.equal(await store.loadStep!(key, field), 512, "the last save wins");
      const r = await store.reserve(key, field, 3, PLAIN);
      check(r.ranges, 3);
      if (contiguous) assert.deepEqual(r.ranges, [{ first: 1n, last: 3n }], "not a counter value");
    },
  });

  await t.step({
    name: store.deleteDaysBefore
      ? "day cleanup deletes the days before the cut and leaves every other field alone"
      : "day cleanup (ignored: this store has no deleteDaysBefore)",
    ignore: !can.hasDayCleanup(store),
    fn: async () => {
      // A DailyId's hash (a key of its own, unless the store serves one key: then the fields
      // of other cases share it, and the counts below are of this case's fields alone).
      const days = subject.key ?? fresh("days");
      const old = ["20260101", "20260102"];
      // Kept: the cut day and after, and names a day's pattern does not match exactly.
      const kept = [
        "20260103",
        "20260104",
        "order",
        "2026010",
        "202601011",
        "x2026010",
        "2026-01-01",
      ];
      for (const field of [...old, ...kept]) await store.reserve(days, field, 5, PLAIN);
      // The same days under another key are another DailyId's: not this cleanup's.
      const otherKey = subject.key === undefined ? fresh("other-days") : undefined;
      if (otherKey !== undefined) await store.reserve(otherKey, "20260101", 5, PLAIN);
      const saves = can.hasStepMemory(store);
      if (saves) await store.saveStep!(days, "order", 300);
      if (subject.key === undefined) {
        assert.equal(await store.deleteDaysBefore!(days, "20260103"), old.length);
        assert.equal(await store.deleteDaysBefore!(days, "20260103"), 0, "nothing left to delete");
      } else {
        assert.ok(await store.deleteDaysBefore!(days, "20260103") >= old.length);
      }
      if (contiguous) {
        for (const field of kept) {
          const r = await store.reserve(days, field, 1, PLAIN);
          assert.deepEqual(r.ranges, [{ first: 6n, last: 6n }], `${field} was kept`);
        }
        for (const field of old) {
          const r = await store.reserve(days, field, 1, PLAIN);
          assert.deepEqual(r.ranges, [{ first: 1n, last: 1n }], `${field} was deleted`);
        }
        if (otherKey !== undefined) {
          const r = await store.reserve(otherKey, "20260101", 1, PLAIN);
          assert.deepEqual(r.ranges, [{ first: 6n, last: 6n }], "another key's day was kept");
        }
      }
      if (saves) assert.equal(await store.loadStep!(days, "order"), 300, "a kept step is kept");
      await assert.rejects(store.deleteDaysBefore!(days, "2026-01-03"), "not a yyyymmdd day");
      assert.ok(!DAY_FIELD.test("2026-01-03"));
    },
  });

  await t.step({
    name: store.counters
      ? "counters(): each counter of the key, exact; no internal field, no other key's; an absent key is empty"
      : "counters (ignored: this store has no counters)",
    ignore: !can.hasCounters(store),
    fn: async () => {
      const read = (k: string, names?: string[]) =>
        store.counters!(k, names === undefined ? undefined : { names });
      // A key of its own, unless the store serves one key: then only this case's names count.
      const own = subject.key ?? fresh("counters");
      const [a, b, pooled, member] = ["a", "b", "pooled", "member"].map((n) => fresh(n));
      await store.reserve(own, a, 10, PLAIN);
      const huge = (1n << 60n) + 3n; // above 2^53: a double would round it
      await store.reserve(own, b, 1, { ...PLAIN, floor: huge, raiseTo: huge });
      const expected = new Map([[a, { value: 10n }], [b, { value: huge + 1n }]]);
      if (store.saveStep !== undefined) await store.saveStep(own, a, 300); // a step field
      if (store.giveBack !== undefined) {
        await store.reserve(own, pooled, 10, PLAIN);
        await store.giveBack(own, pooled, [{ first: 2n, last: 3n }]); // a pool field
        expected.set(pooled, { value: 10n });
      }
      const layout = "v1 servers=2 block=10 index=1";
      if (subject.layout === true) {
        await store.reserve(own, member, 1, { ...PLAIN, layout }); // a layout field
        expected.set(member, { value: 1n, layout } as { value: bigint; layout?: string });
      }
      const otherKey = subject.key === undefined ? fresh("other-counters") : undefined;
      if (otherKey !== undefined) await store.reserve(otherKey, fresh("elsewhere"), 5, PLAIN);

      const listed = await read(own);
      for (const name of listed.keys()) {
        assert.ok(!name.startsWith("\0"), `an internal field is listed: ${JSON.stringify(name)}`);
      }
      const ours = subject.key === undefined
        ? listed
        : new Map([...listed].filter(([n]) => expected.has(n)));
      if (contiguous) assert.deepEqual(ours, expected);
      else assert.deepEqual([...ours.keys()].sort(), [...expected.keys()].sort());
      for (const { value } of listed.values()) assert.equal(typeof value, "bigint");
      // Only the names asked for, those that exist.
      const one = await read(own, [b, fresh("missing"), "\0step:" + a]);
      assert.deepEqual([...one.keys()], [b]);
      if (contiguous) assert.equal(one.get(b)?.value, huge + 1n, "exact above 2^53");
      if (otherKey !== undefined) {
        assert.equal((await read(otherKey)).size, 1, "the other key holds its own counter");
        assert.equal((await read(fresh("absent"))).size, 0, "an absent key is empty");
        assert.equal((await read(own, [])).size, 0, "no names asked: none");
      }
      if (subject.corrupt !== undefined && subject.key === undefined) {
        const bad = fresh("bad-counters");
        await store.reserve(bad, "x", 1, PLAIN);
        await subject.corrupt(bad, "x");
        const err = await read(bad).then((r) => r, (e: unknown) => e);
        assert.ok(
          err instanceof KvIdError,
          `a non-counter is a KvIdError, got ${Deno.inspect(err)}`,
        );
        assert.equal(err.code, "reply");
        assert.equal(err.reason, "not-a-counter");
      }
    },
  });

  const memberDays = can.hasDayCleanup(store) && subject.layout === true &&
    subject.key === undefined;
  await t.step({
    name: !memberDays
      ? "day cleanup of a member's day-named counter (ignored: no deleteDaysBefore, or no layouts)"
      : subject.knownBugs?.memberDays
      ? `day cleanup of a member's day-named counter (ignored: known bug: ${subject.knownBugs.memberDays})`
      : "day cleanup leaves an interleaved member's counter named like a day alone",
    ignore: !memberDays || subject.knownBugs?.memberDays !== undefined,
    fn: async () => {
      // A KvId named like a day, as a member of an interleaved set: its counter counts block
      // cycles; deleting it would restart the member at cycle 0 and repeat its blocks.
      const days = fresh("member-days");
      const layout = "v1 servers=2 block=10 index=0";
      await store.reserve(days, "20251231", 1, { ...PLAIN, layout });
      await store.reserve(days, "20251230", 1, PLAIN);
      assert.equal(await store.deleteDaysBefore!(days, "20260101"), 1, "only the day's counter");
      const r = await store.reserve(days, "20251231", 1, { ...PLAIN, layout });
      assert.deepEqual(r.ranges, [{ first: 2n, last: 2n }], "the member's counter was kept");
    },
  });

  await t.step({
    name: store.now
      ? "now(): the server's clock, in ms since the epoch, near this process's"
      : "the server's clock (ignored: this store has no now())",
    ignore: !can.hasServerClock(store),
    fn: async () => {
      const before = Date.now();
      const ms = await store.now!();
      const after = Date.now();
      assert.ok(Number.isSafeInteger(ms), `an integer of ms, got ${ms}`);
      // A server on this machine: the same clock, within a second's rounding (MySQL's
      // UNIX_TIMESTAMP() is whole seconds) and the time the call took.
      assert.ok(ms >= before - 1_000 && ms <= after + 1_000, `${ms} is not in ${before}..${after}`);
      const later = await store.now!();
      assert.ok(later >= ms - 1_000, "the clock does not run back");
    },
  });

  await t.step({
    name: subject.corrupt
      ? "a counter that is not an integer is a reply error, never IDs"
      : "a corrupted counter (ignored: no way to corrupt this store given)",
    ignore: !subject.corrupt,
    fn: async () => {
      const field = fresh("corrupt");
      await store.reserve(key, field, 1, PLAIN);
      await subject.corrupt!(key, field);
      for (const guard of [true, false]) {
        const err = await store.reserve(key, field, 5, { ...PLAIN, guard }).then(
          (r) => r,
          (e: unknown) => e,
        );
        assert.ok(err instanceof KvIdError, `guard ${guard}: got ${Deno.inspect(err)}`);
        assert.equal(err.code, "reply");
      }
    },
  });

  await t.step({
    name: subject.layout
      ? "a member's layout: recorded with the first increment, checked by every reservation"
      : "a member's layout (ignored: this store cannot be a member of an interleaved set)",
    ignore: !subject.layout,
    fn: async () => {
      const field = fresh("layout");
      const layout = "v1 servers=2 block=10 index=1";
      const config = async (options: AnyReserveOptions, f = field, message?: RegExp) => {
        const err = await store.reserve(key, f, 1, options).then((r) => r, (e: unknown) => e);
        assert.ok(err instanceof KvIdError, `got ${Deno.inspect(err)}`);
        assert.equal(err.code, "config", err.message);
        if (message) assert.match(err.message, message);
      };
      const a = await store.reserve(key, field, 2, { ...PLAIN, layout });
      assert.equal(a.layout, layout, "the layout is echoed");
      assert.deepEqual(a.ranges, [{ first: 1n, last: 2n }], "the counter counts block cycles");
      const b = await store.reserve(key, field, 1, { ...PLAIN, floor: 5n, raiseTo: 7n, layout });
      assert.deepEqual([b.ranges, b.raised, b.layout], [[{ first: 8n, last: 8n }], true, layout]);
      await config(
        { ...PLAIN, layout: "v1 servers=3 block=10 index=1" },
        field,
        /holds the layout/,
      );
      await config(PLAIN, field, /interleaved/);
      await config({ ...PLAIN, guard: false }, field, /interleaved/);
      // A single-store counter holding a value: its value is an ID, refused as a member.
      const plain = fresh("layout-plain");
      await store.reserve(key, plain, 3, PLAIN);
      await config({ ...PLAIN, layout }, plain, /single-store/);
      assert.deepEqual((await store.reserve(key, plain, 1, PLAIN)).ranges, [{
        first: 4n,
        last: 4n,
      }]);
    },
  });

  await t.step({
    name: can.readsStepInReserve(store)
      ? "reserve with loadStep: at least the remembered step, at most maxCount, in one call"
      : "reserve with loadStep (ignored: reservesStep is not true on this store)",
    ignore: !can.readsStepInReserve(store),
    fn: async () => {
      const field = fresh("reserve-step");
      const load = { ...PLAIN, loadStep: true, maxCount: 1_000 };
      const none = await store.reserve(key, field, 3, load);
      assert.equal(none.step, undefined, "no step remembered yet");
      check(none.ranges, 3);
      await store.saveStep!(key, field, 50);
      const read = await store.reserve(key, field, 3, load);
      assert.equal(read.step, 50, "the remembered step is reported");
      check(read.ranges, 50);
      const capped = await store.reserve(key, field, 3, { ...load, maxCount: 20 });
      check(capped.ranges, 20);
      const larger = await store.reserve(key, field, 70, load);
      check(larger.ranges, 70);
      if (contiguous) {
        assert.deepEqual(
          [none, read, capped, larger].map((r) => r.ranges[0].first),
          [1n, 4n, 54n, 74n],
          "each continues after the last",
        );
      }
    },
  });

  await t.step({
    name: subject.unreachable
      ? "a server that cannot be reached: a transient KvIdError, and a generator fails in its timeout"
      : "an unreachable server (ignored: none given for this store)",
    ignore: !subject.unreachable,
    fn: async () => {
      await using dead = await subject.unreachable!();
      const transient = (err: unknown, what: string) => {
        assert.ok(err instanceof KvIdError, `${what}: a KvIdError, got ${Deno.inspect(err)}`);
        assert.ok(isTransient(err.code), `${what}: a transient code, got ${err.code}: ${err}`);
      };
      const err = await dead.store.reserve(key, fresh("down"), 5, PLAIN).then(
        (r) => r,
        (e: unknown) => e,
      );
      transient(err, "reserve");
      if (can.hasDurability(dead.store)) {
        const options = {
          field: fresh("down"),
          mode: "strict",
          stated: {},
          judge: ACCEPT,
        } as const;
        // A store of several servers may answer without them (their settings "not yet" read);
        // a store of one cannot, and says why as any of its failures.
        await dead.store.durability(key, options).then(
          (d) => assert.ok(d.problems !== undefined),
          (e: unknown) => transient(e, "durability"),
        );
      }
      await using gen = new KvId(fresh("down-engine"), { store: dead.store, key, timeout: 500 });
      transient(await gen.next().then((id) => id, (e: unknown) => e), "next()");
    },
  });

  await t.step({
    name: can.hasDurability(store)
      ? "durability(): what the server can lose, each problem naming its fix"
      : "durability (ignored: this store does not say; a generator trusts it)",
    ignore: !can.hasDurability(store),
    fn: async () => {
      const d = await store.durability!(key, {
        field: fresh("durability"),
        mode: "strict",
        stated: {},
        judge: ACCEPT,
      });
      assert.equal(typeof d.durable, "boolean");
      assert.ok(Array.isArray(d.problems) && d.problems.every((p) => typeof p === "string"));
      assert.ok(Object.values(d.settings).every((v) => typeof v === "string"));
      assert.equal(d.durable, d.problems.length === 0, "durable exactly when nothing can be lost");
      if (subject.durable !== undefined) {
        assert.equal(d.durable, subject.durable, d.problems.join("; "));
      }
      // Stated settings (a generator's serverSettings) stand in only for what the server would
      // not tell: what it tells wins.
      const stated = Object.fromEntries(Object.keys(d.settings).map((k) => [k, "stated-by-spec"]));
      const again = await store.durability!(key, {
        field: fresh("durability"),
        mode: "strict",
        stated,
        judge: ACCEPT,
      });
      for (const [name, value] of Object.entries(d.settings)) {
        if (value !== "unknown") assert.equal(again.settings[name], value, `${name}: the server's`);
      }
      assert.equal(again.durable, d.durable);
    },
  });

  await t.step(
    "KvId on it: unique increasing IDs, and a clean close loses none it can give back",
    async () => {
      const name = fresh("engine");
      const seen: number[] = [];
      {
        await using ids = new KvId(name, { store, key });
        for (let i = 0; i < 2_000; i++) seen.push(await ids.next());
      }
      await using again = new KvId(name, { store, key });
      const next = await again.next();
      for (let i = 1; i < seen.length; i++) assert.ok(seen[i] > seen[i - 1]);
      assert.ok(!seen.includes(next), "a restarted generator hands out an ID already issued");
      // Interleaved: a fresh generator may first reach a server below the front (unique, not above).
      if (contiguous) assert.ok(next > seen.at(-1)!, "a restarted generator continues above");
      if (release && contiguous) assert.equal(next, seen.at(-1)! + 1, "the unused tail came back");
    },
  );
}
