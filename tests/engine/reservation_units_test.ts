/**
 * Unit tests of one generator's reservations (src/engine/reservation.ts, `Reserver`) on a
 * scripted store: what a reservation asks the store for, what it refuses in a reply (a bad
 * step, a bad clock, hostile data, a rollback, the `floor` option, an unsafe counter), what it
 * reports (`"rollback"`, `"expiry"`, the counts), a reply that lands late or after close, and
 * close()'s give-back and step memory. The same paths against real servers are in
 * tests/engine/edge_cases_test.ts, tests/engine/edge_cases_audit_test.ts and
 * tests/engine/kvid_test.ts. Starts no server.
 */

import "../support/deadline.ts"; // a time limit on every test of this file
import assert from "node:assert/strict";
import { KvIdError } from "../../src/contract/errors.ts";
import {
  type AnyReserveOptions,
  type IdRange,
  MAX_ID,
  type Reservation,
  type Store,
  type StoreDurability,
} from "../../src/contract/store.ts";
import type { KvIdOptions } from "../../src/engine/kvid_options.ts";
import { Reserver } from "../../src/engine/reservation.ts";
import { SegmentBuffer } from "../../src/engine/segment_buffer.ts";
import { resolveOptions } from "../../src/engine/settings.ts";
import { DEMAND } from "../../src/engine/wait_queue.ts";
import { StepMemory } from "../../src/engine/step_memory.ts";
import { installStoreSource } from "../../src/runtime/store_source.ts";

type Reply = Reservation | Error | Promise<Reservation>;

/** Enough turns of the microtask queue for a late reply's handling to run. */
async function turns(): Promise<void> {
  for (let i = 0; i < 50; i++) await Promise.resolve();
}

/**
 * A store answering each reservation from `replies` in turn (default: the next `count` IDs,
 * the counter raised first when the guard finds it below the floor).
 */
function scripted(replies: Reply[] = [], extra: Record<string, unknown> = {}) {
  let counter = 0n;
  const calls: { count: number; options: AnyReserveOptions }[] = [];
  const store = {
    calls,
    reserve(key: string, field: string, count: number, options: AnyReserveOptions) {
      assert.equal(key, "kvid");
      assert.equal(field, "order");
      calls.push({ count, options });
      const r = replies.shift();
      if (r instanceof Error) return Promise.reject(r);
      if (r instanceof Promise) return r;
      if (r !== undefined) {
        const last = r.ranges.at(-1)?.last ?? 0n;
        if (last > counter) counter = last; // the next default reply goes on from there
        return Promise.resolve(r);
      }
      // As the guard script: a counter found below the floor is raised first.
      const raised = options.guard && counter < options.floor;
      if (raised) counter = options.raiseTo;
      const first = counter + 1n;
      counter += BigInt(count);
      return Promise.resolve({ ranges: [{ first, last: counter }], raised });
    },
    ...extra,
  };
  return store;
}

function reserver(store: Store, options: KvIdOptions = {}, waiting = { [DEMAND]: 0 }) {
  const settings = resolveOptions("order", { store, minStep: 10, ...options });
  const buf = new SegmentBuffer({ prefetchAt: 0.2, safeOnly: !settings.bigint });
  const events = new EventTarget();
  const seen: { type: string; detail: unknown }[] = [];
  for (const type of ["rollback", "expiry"]) {
    events.addEventListener(type, (e) => seen.push({ type, detail: (e as CustomEvent).detail }));
  }
  const r = new Reserver("order", settings, buf, events, waiting);
  return { r, buf, seen, settings };
}

const range = (first: bigint, last: bigint, more: Partial<Reservation> = {}): Reservation => ({
  ranges: [{ first, last }],
  raised: false,
  ...more,
});

async function failed(p: Promise<unknown>): Promise<string> {
  const out = await p as { kind: string; error?: KvIdError; startedAt?: number };
  assert.equal(out.kind, "failed", JSON.stringify(out));
  assert.ok(out.error instanceof KvIdError);
  assert.equal(typeof out.startedAt, "number");
  return `${out.error.code} ${out.error.message}`;
}

Deno.test("Reserver: what a reservation asks the store for", async () => {
  const store = scripted();
  const { r, buf, settings } = reserver(store, { rollbackMargin: 500 });
  const started = performance.now();
  assert.deepEqual(await r.reserve(), { kind: "served" });
  const took = performance.now() - started;
  assert.equal(buf.remaining, 10);
  assert.equal(r.segments, 1);
  // The round trip is measured inside the call: never below 0, never more than the call took.
  assert.ok(r.lastFetchMs !== undefined && r.lastFetchMs >= 0 && r.lastFetchMs <= took);
  await r.reserve();
  const [a, b] = store.calls;
  assert.equal(a.count, 10);
  assert.equal(a.options.floor, 0n);
  assert.equal(a.options.raiseTo, 500n);
  assert.equal(b.options.floor, 10n, "above what the generator holds");
  assert.equal(b.options.raiseTo, 510n);
  assert.equal(a.options.guard, true);
  assert.equal(a.options.exact, false);
  assert.equal(a.options.generator, settings);
  assert.equal(a.options.loadStep, false);
  assert.equal(a.options.maxCount, settings.maxStep);
  assert.equal(a.options.pool, false, "no giveBack() in the store");
  assert.ok(!("durability" in a.options), "not a store that reads durability in reserve");
  assert.equal(r.where().where, "");
  assert.deepEqual(r.where(), { key: "kvid", field: "order", where: "" });
});

Deno.test("Reserver: the pool only with guard, giveBack and a store that gives back", async () => {
  const giveBack = () => Promise.resolve(0);
  const cases: [KvIdOptions, boolean, boolean][] = [
    [{ guard: true, giveBack: true }, true, true],
    [{ guard: false, giveBack: true }, true, false],
    [{ guard: true, giveBack: false }, true, false],
    [{ guard: true, giveBack: true }, false, false],
  ];
  for (const [options, has, want] of cases) {
    const store = scripted([], has ? { giveBack } : {});
    await reserver(store, options).r.reserve();
    assert.equal(store.calls[0].options.pool, want, JSON.stringify([options, has]));
    assert.equal(store.calls[0].options.guard, options.guard);
  }
  const big = scripted();
  await reserver(big, { bigint: true }).r.reserve();
  assert.equal(big.calls[0].options.exact, true);
});

Deno.test("Reserver: raiseTo is capped at 2^63-1", async () => {
  for (
    const [high, margin, want] of [
      [MAX_ID - 10n, 1000, MAX_ID],
      [MAX_ID - 1000n, 1000, MAX_ID],
      [MAX_ID - 1001n, 1000, MAX_ID - 1n],
    ] as const
  ) {
    const store = scripted([range(high + 1n, high + 5n)]);
    const { r, buf } = reserver(store, { bigint: true, rollbackMargin: margin });
    buf.add([{ first: high, last: high }]);
    await r.reserve();
    assert.equal(store.calls[0].options.floor, high);
    assert.equal(store.calls[0].options.raiseTo, want, `${high}`);
  }
});

Deno.test("Reserver: the count follows the calls waiting", async () => {
  const store = scripted();
  const waiting = { [DEMAND]: 37 };
  const { r } = reserver(store, {}, waiting);
  await r.reserve();
  assert.equal(store.calls[0].count, 37);
});

Deno.test("Reserver: a step that is not a positive integer is refused before any I/O", async () => {
  for (const bad of [0, -1, 1.5, NaN]) {
    const store = scripted();
    const { r } = reserver(store);
    r.sizer.count = () => bad;
    assert.match(await failed(r.reserve()), /^config the step became/);
    assert.equal(store.calls.length, 0);
  }
  const store = scripted();
  const { r } = reserver(store);
  r.sizer.count = () => 1;
  assert.deepEqual(await r.reserve(), { kind: "served" });
  assert.equal(store.calls[0].count, 1);
});

Deno.test("Reserver: a clock that throws or is not a finite number is refused", async () => {
  const clocks: [() => number, RegExp][] = [
    [() => {
      throw new Error("no clock");
    }, /^config the clock option threw/],
    [() => NaN, /^config the clock option returned number NaN/],
    [() => Infinity, /^config the clock option returned/],
    [() => "7" as unknown as number, /^config the clock option returned/],
  ];
  for (const [clock, want] of clocks) {
    const store = scripted();
    const { r } = reserver(store, { clock });
    assert.match(await failed(r.reserve()), want);
    assert.equal(store.calls.length, 0, "before any I/O");
  }
  let n = 0;
  const store = scripted();
  const { r } = reserver(store, { clock: () => 1000 + n++ });
  assert.deepEqual(await r.reserve(), { kind: "served" });
});

Deno.test("Reserver: a clock that fails after the reply is not the reservation's failure", async () => {
  let n = 0;
  const store = scripted();
  const { r } = reserver(store, {
    clock: () => {
      if (n++ % 2 === 1) throw new Error("later");
      return 1000;
    },
  });
  assert.deepEqual(await r.reserve(), { kind: "served" });
  const { r: r2 } = reserver(scripted(), { clock: () => (n++ % 2 === 1 ? NaN : 1000) });
  assert.deepEqual(await r2.reserve(), { kind: "served" });
});

Deno.test("Reserver: hostile data (IDs below 1) is refused, the range spent", async () => {
  const { r, buf, seen } = reserver(scripted([range(0n, 9n)]));
  assert.match(await failed(r.reserve()), /^reply the counter held a negative value \(.*0\.\./);
  assert.equal(buf.remaining, 0);
  assert.equal(r.rollbacks, 0);
  assert.deepEqual(seen, []);
  const ok = reserver(scripted([range(1n, 9n)]));
  assert.deepEqual(await ok.r.reserve(), { kind: "served" });
  assert.equal(ok.buf.remaining, 9);
  // No range at all: refused as a counter that went back (nothing above the mark).
  const empty = reserver(scripted([{ ranges: [], raised: false }]));
  assert.match(await failed(empty.r.reserve()), /^rollback the counter \(0\)/);
  // ... and above a mark too.
  const later = reserver(scripted([range(1n, 10n), { ranges: [], raised: false }]));
  await later.r.reserve();
  assert.match(await failed(later.r.reserve()), /^rollback the counter \(0\) went below IDs/);
});

Deno.test("Reserver: a raised counter is a rollback: counted, reported, durability re-read", async () => {
  let reads = 0;
  const good: StoreDurability = { durable: true, settings: {}, problems: [] };
  const store = scripted([range(1n, 10n), range(1011n, 1020n, { raised: true })], {
    durability: () => (reads++, Promise.resolve(good)),
  });
  const { r, buf, seen } = reserver(store);
  await r.reserve();
  assert.equal(reads, 1);
  assert.deepEqual(await r.reserve(), { kind: "served" });
  assert.equal(r.rollbacks, 1);
  assert.deepEqual(seen, [{ type: "rollback", detail: { floor: 10n, last: 1020n } }]);
  assert.equal(buf.remaining, 20);
  await r.reserve();
  assert.equal(reads, 2, "the server may have restarted: read again");
  await r.reserve();
  assert.equal(reads, 2);
});

Deno.test("Reserver: a range at or below the mark is a rollback, refused without guard", async () => {
  const store = scripted([range(1n, 10n), range(3n, 9n)]);
  const { r, seen } = reserver(store, { guard: false });
  await r.reserve();
  assert.match(await failed(r.reserve()), /^rollback the counter \(9\) went below IDs/);
  assert.equal(r.rollbacks, 1);
  assert.deepEqual(seen, [{ type: "rollback", detail: { floor: 10n, last: 9n } }]);
  // Its first ID at the mark exactly: a rollback, its part above the mark served.
  const at = reserver(scripted([range(1n, 10n), range(10n, 19n)]), { guard: false });
  await at.r.reserve();
  assert.deepEqual(await at.r.reserve(), { kind: "served" });
  assert.equal(at.buf.remaining, 19);
  assert.equal(at.r.rollbacks, 1);
  assert.deepEqual(at.seen[0], { type: "rollback", detail: { floor: 10n, last: 19n } });
  // Just above it: not one.
  const above = reserver(scripted([range(1n, 10n), range(11n, 20n)]), { guard: false });
  await above.r.reserve();
  assert.deepEqual(await above.r.reserve(), { kind: "served" });
  assert.equal(above.r.rollbacks, 0);
  assert.deepEqual(above.seen, []);
});

Deno.test("Reserver: a range above MAX_SAFE_INTEGER is refused in number mode", async () => {
  const max = BigInt(Number.MAX_SAFE_INTEGER);
  const { r } = reserver(scripted([range(max + 1n, max + 10n)]));
  assert.match(await failed(r.reserve()), /^unsafe the counter reached .*use \{ bigint: true \}/);
  assert.equal(r.rollbacks, 0);
});

Deno.test("Reserver: a TTL removed is counted and reported as an expiry", async () => {
  const store = scripted([
    range(1n, 10n, { ttlRemovedMs: 5000 }),
    range(11n, 20n, { ttlRemovedMs: -1 }),
    range(21n, 30n, { ttlRemovedMs: 0 }),
    range(31n, 40n),
  ]);
  const { r, seen } = reserver(store);
  for (let i = 0; i < 4; i++) await r.reserve();
  assert.equal(r.ttlRemovals, 2);
  assert.deepEqual(seen, [
    { type: "expiry", detail: { key: "kvid", ttlMs: 5000 } },
    { type: "expiry", detail: { key: "kvid", ttlMs: -1 } },
  ]);
});

Deno.test("Reserver: a transient failure makes durability due, another failure does not", async () => {
  let reads = 0;
  const good: StoreDurability = { durable: true, settings: {}, problems: [] };
  const down = new KvIdError("connection", "down", { key: "kvid", field: "order" });
  const bad = new KvIdError("config", "bad", { key: "kvid", field: "order" });
  const store = scripted([range(1n, 10n), down, range(11n, 20n), bad, range(21n, 30n)], {
    durability: () => (reads++, Promise.resolve(good)),
  });
  const { r } = reserver(store);
  await r.reserve();
  assert.match(await failed(r.reserve()), /^connection down/);
  assert.equal(reads, 1);
  await r.reserve();
  assert.equal(reads, 2);
  assert.match(await failed(r.reserve()), /^config bad/);
  await r.reserve();
  assert.equal(reads, 2);
});

Deno.test("Reserver: past timeout the reservation fails; a late raised reply is reported", async () => {
  const late = Promise.withResolvers<Reservation>();
  const late2 = Promise.withResolvers<Reservation>();
  const late3 = Promise.withResolvers<Reservation>();
  const store = scripted([range(1n, 10n), late.promise, late2.promise, late3.promise]);
  const { r, buf, seen } = reserver(store, { timeout: 30 });
  await r.reserve();
  assert.match(await failed(r.reserve()), /^timeout the reservation took 30 ms/);
  late.resolve(range(1011n, 1020n, { raised: true }));
  await turns();
  assert.equal(r.rollbacks, 1);
  assert.deepEqual(seen, [{ type: "rollback", detail: { floor: 10n, last: 1020n } }]);
  assert.equal(buf.remaining, 10, "a late range is spent");
  // Late and below the mark (no guard raised it): reported too; late and fine: not.
  assert.match(await failed(r.reserve()), /^timeout/);
  late2.resolve(range(3n, 12n));
  await turns();
  assert.equal(r.rollbacks, 2);
  assert.deepEqual(seen[1], { type: "rollback", detail: { floor: 10n, last: 12n } });
  assert.match(await failed(r.reserve()), /^timeout/);
  late3.resolve(range(11n, 20n));
  await turns();
  assert.equal(r.rollbacks, 2);
});

Deno.test("Reserver: a late reply starting exactly at the mark is a rollback; at mark 0, none", async () => {
  const late = Promise.withResolvers<Reservation>();
  const { r, seen } = reserver(scripted([range(1n, 10n), late.promise]), { timeout: 30 });
  await r.reserve();
  assert.match(await failed(r.reserve()), /^timeout/);
  late.resolve(range(10n, 19n)); // ID 10 was issued already
  await turns();
  assert.equal(r.rollbacks, 1);
  assert.deepEqual(seen, [{ type: "rollback", detail: { floor: 10n, last: 19n } }]);
  // Before any ID, nothing can be below the mark: a late reply is reported only if raised.
  const late0 = Promise.withResolvers<Reservation>();
  const zero = reserver(scripted([late0.promise]), { timeout: 30 });
  assert.match(await failed(zero.r.reserve()), /^timeout/);
  late0.resolve(range(0n, 9n));
  await turns();
  assert.equal(zero.r.rollbacks, 0);
  assert.deepEqual(zero.seen, []);
});

Deno.test("Reserver: a late reply after close is not reported", async () => {
  const late = Promise.withResolvers<Reservation>();
  const { r, seen } = reserver(scripted([range(1n, 10n), late.promise]), { timeout: 30 });
  await r.reserve();
  assert.match(await failed(r.reserve()), /^timeout/);
  r.close();
  late.resolve(range(1011n, 1020n, { raised: true }));
  await turns();
  assert.equal(r.rollbacks, 0);
  assert.deepEqual(seen, []);
});

Deno.test("Reserver: a late raised reply at mark 0 and an empty one", async () => {
  const late = Promise.withResolvers<Reservation>();
  const late2 = Promise.withResolvers<Reservation>();
  const { r } = reserver(scripted([late.promise, late2.promise]), { timeout: 30 });
  assert.match(await failed(r.reserve()), /^timeout/);
  late.resolve({ ranges: [], raised: false });
  await turns();
  assert.equal(r.rollbacks, 0);
  assert.match(await failed(r.reserve()), /^timeout/);
  late2.resolve({ ranges: [], raised: true });
  await turns();
  assert.equal(r.rollbacks, 1);
});

Deno.test("Reserver: a reply landing after close is kept for the give-back", async () => {
  const reply = Promise.withResolvers<Reservation>();
  const given: IdRange[][] = [];
  const store = scripted([range(1n, 10n), reply.promise], {
    giveBack: (
      _k: string,
      _f: string,
      ranges: IdRange[],
    ) => (given.push(ranges), Promise.resolve(1)),
  });
  const { r, buf } = reserver(store, { giveBack: true });
  await r.reserve();
  const out = r.reserve();
  await Promise.resolve();
  r.close();
  reply.resolve(range(11n, 20n));
  assert.deepEqual(await out, { kind: "late" });
  assert.equal(buf.remaining, 10);
  await r.giveBack(undefined, [{ first: 4n, last: 10n }], 1000);
  assert.deepEqual(given, [[{ first: 4n, last: 20n }]]);
});

Deno.test("Reserver: close gives back through giveBack, or releases the top", async () => {
  const given: IdRange[][] = [];
  const released: IdRange[] = [];
  const both = {
    giveBack: (
      _k: string,
      _f: string,
      ranges: IdRange[],
    ) => (given.push(ranges), Promise.resolve(1)),
    release: (_k: string, _f: string, r: IdRange) => (released.push(r), Promise.resolve(true)),
  };
  const a = reserver(scripted([], both), { giveBack: true });
  await a.r.reserve();
  await a.r.giveBack({ first: 5n, last: 10n }, [{ first: 5n, last: 10n }], 1000);
  assert.deepEqual(given, [[{ first: 5n, last: 10n }]]);
  assert.deepEqual(released, []);
  // Nothing unused: nothing given back.
  await a.r.giveBack(undefined, [], 1000);
  assert.equal(given.length, 1);

  const b = reserver(scripted([], { release: both.release }), { giveBack: true });
  await b.r.reserve();
  await b.r.giveBack({ first: 5n, last: 10n }, [{ first: 5n, last: 10n }], 1000);
  assert.deepEqual(released, [{ first: 5n, last: 10n }]);
  await b.r.giveBack(undefined, [], 1000);
  assert.equal(released.length, 1);

  // giveBack: false: neither.
  const c = reserver(scripted([], both), { giveBack: false });
  await c.r.reserve();
  await c.r.giveBack({ first: 5n, last: 10n }, [{ first: 5n, last: 10n }], 1000);
  assert.equal(given.length, 1);
  assert.equal(released.length, 1);
});

Deno.test("Reserver: close's give-back is bounded by its time and its failure swallowed", async () => {
  const a = reserver(scripted([], { giveBack: () => new Promise(() => {}) }), { giveBack: true });
  await a.r.reserve();
  await a.r.giveBack(undefined, [{ first: 5n, last: 10n }], 20);
  const b = reserver(scripted([], { giveBack: () => Promise.reject(new Error("down")) }), {
    giveBack: true,
  });
  await b.r.reserve();
  await b.r.giveBack(undefined, [{ first: 5n, last: 10n }], 1000);
});

Deno.test("Reserver: the step is remembered at close only after more than one reservation", async () => {
  const saved: number[] = [];
  const memory = {
    loadStep: () => Promise.resolve(500),
    saveStep: (_k: string, _f: string, step: number) => (saved.push(step), Promise.resolve()),
  };
  const store = scripted([], memory);
  const { r } = reserver(store);
  await r.reserve();
  assert.equal(store.calls[0].count, 500, "the remembered step");
  r.sizer.resume(700);
  await r.giveBack(undefined, [], 1000);
  assert.deepEqual(saved, [], "one reservation: a guess");
  await r.reserve();
  await r.giveBack(undefined, [], 1000);
  assert.deepEqual(saved, [r.sizer.step]);
  assert.ok(r.sizer.step >= 700);
});

Deno.test("Reserver: the remembered step read in the reservation, with guard only", async () => {
  let looked = 0;
  const extra = {
    reservesStep: true,
    loadStep: () => (looked++, Promise.resolve(300)),
    saveStep: () => Promise.resolve(),
  };
  const store = scripted([range(1n, 10n, { step: 400 })], extra);
  const { r } = reserver(store);
  await r.reserve();
  assert.equal(store.calls[0].options.loadStep, true);
  assert.equal(looked, 0);
  await r.reserve();
  assert.equal(store.calls[1].options.loadStep, false);
  assert.equal(store.calls[1].count, 400, "the step the reservation read");

  const plain = scripted([], extra);
  const p = reserver(plain, { guard: false });
  await p.r.reserve();
  assert.equal(plain.calls[0].options.loadStep, false);
  assert.equal(looked, 1, "looked up beside, without guard");
  assert.equal(plain.calls[0].count, 300);

  // A step in a reply not asked for one is not taken.
  const stray = scripted([range(1n, 10n, { step: 400 })]);
  const s = reserver(stray);
  await s.r.reserve();
  await s.r.reserve();
  assert.notEqual(stray.calls[1].count, 400);
});

Deno.test("Reserver: the floor option raises the mark, and is read again after a raise", async () => {
  const answers = [100, 2000];
  const store = scripted([range(101n, 110n), range(1111n, 1120n, { raised: true })]);
  const { r, buf, seen } = reserver(store, {
    rollbackMargin: 1000,
    floor: () => Promise.resolve(answers.shift() ?? 2000),
  });
  assert.deepEqual(await r.reserve(), { kind: "served" });
  assert.equal(store.calls[0].options.floor, 100n, "the floor option above the mark");
  assert.equal(store.calls[0].options.raiseTo, 1100n);
  // Raised above the generator's own mark, found at or below the floor read again: reserved
  // once more, above it.
  assert.deepEqual(await r.reserve(), { kind: "served" });
  assert.equal(store.calls.length, 3);
  assert.equal(store.calls[1].options.floor, 110n);
  assert.equal(store.calls[2].options.floor, 2000n);
  assert.equal(store.calls[2].options.raiseTo, 3000n);
  assert.ok(!("durability" in store.calls[2].options));
  assert.equal(buf.remaining, 10 + store.calls[2].count);
  assert.equal(r.rollbacks, 1);
  assert.deepEqual(seen, [{
    type: "rollback",
    detail: { floor: 110n, last: 3000n + BigInt(store.calls[2].count) },
  }]);

  // Raised, the floor read again below the range: kept.
  const answers2 = [100, 50];
  const store2 = scripted([range(101n, 110n), range(1111n, 1120n, { raised: true })]);
  const two = reserver(store2, { floor: () => Promise.resolve(answers2.shift() ?? 50) });
  await two.r.reserve();
  await two.r.reserve();
  assert.equal(store2.calls.length, 2);
  assert.equal(two.buf.remaining, 20);
  // Its first ID at the floor exactly: reserved again.
  const answers3 = [100, 1111];
  const store3 = scripted([range(101n, 110n), range(1111n, 1120n, { raised: true })]);
  const three = reserver(store3, { floor: () => Promise.resolve(answers3.shift() ?? 1111) });
  await three.r.reserve();
  await three.r.reserve();
  assert.equal(store3.calls.length, 3);
  assert.equal(store3.calls[2].options.floor, 1111n);
  // Not raised: the floor is not read again.
  let reads = 0;
  const store4 = scripted([range(101n, 110n), range(111n, 120n)]);
  const four = reserver(store4, { floor: () => (reads++, Promise.resolve(100)) });
  await four.r.reserve();
  await four.r.reserve();
  assert.equal(reads, 1);
  assert.equal(store4.calls.length, 2);
});

Deno.test("Reserver: a reply at or below the floor option is refused (no scripting)", async () => {
  const store = scripted([range(50n, 59n), range(100n, 109n), range(101n, 110n)]);
  let reads = 0;
  const { r } = reserver(store, { floor: () => (reads++, Promise.resolve(100)) });
  assert.match(await failed(r.reserve()), /^rollback the counter \(59\) is at or below the floor/);
  assert.equal(r.rollbacks, 1);
  assert.match(await failed(r.reserve()), /^rollback the counter \(109\)/);
  assert.equal(reads, 2, "read again after a refusal");
  assert.deepEqual(await r.reserve(), { kind: "served" });
  assert.equal(r.rollbacks, 2);
  assert.equal(reads, 3);
});

Deno.test("Reserver: errors name the counter in the store's words", async () => {
  const store = scripted([range(0n, 1n)], { describe: (k: string, f: string) => `${k}/${f}!` });
  const { r } = reserver(store);
  const out = await r.reserve();
  assert.ok(out.kind === "failed");
  assert.equal(out.error.where, "kvid/order!");
  assert.deepEqual(r.where(), { key: "kvid", field: "order", where: "kvid/order!" });
});

Deno.test("Reserver: the step rule and the prefetch lead measure the clock and the IDs taken", async () => {
  // Readings: before and after each reply; the second reservation's after-reading is NaN.
  const times = [1000, 1250, 2000, NaN];
  const waiting = { [DEMAND]: 3 };
  const { r } = reserver(scripted(), { clock: () => times.shift() ?? 5000 }, waiting);
  const measured: [number, number, number][] = [];
  const reserved = r.sizer.reserved.bind(r.sizer);
  r.sizer.reserved = (now, taken, tripMs = 0) => {
    measured.push([now, taken, tripMs]);
    return reserved(now, taken, tripMs);
  };
  assert.deepEqual(await r.reserve(), { kind: "served" });
  // Nothing accepted, nothing left, 3 waiting: 3 taken; the trip on the generator's clock.
  assert.deepEqual(measured[0], [1250, 3, 250]);
  assert.deepEqual(await r.reserve(), { kind: "served" });
  // 10 accepted, 10 left (nobody took one), 3 waiting: 3 taken; a bad reading after the reply
  // is replaced by the one before it.
  assert.deepEqual(measured[1], [2000, 3, 0]);
  assert.ok(Number.isSafeInteger(r.sizer.step) && r.sizer.step >= 10);
});

Deno.test("Reserver: the step is written while serving, once it changed and 10 s passed", async () => {
  const saved: number[] = [];
  const store = scripted([], {
    loadStep: () => Promise.resolve(undefined),
    saveStep: (_k: string, _f: string, step: number) => (saved.push(step), Promise.resolve()),
  });
  let now = 0;
  const { r } = reserver(store, { clock: () => now });
  await r.reserve(); // the first reservation starts the 10 s
  r.sizer.resume(700);
  now = 9_999;
  await r.reserve();
  assert.deepEqual(saved, [], "not 10 s yet");
  now = 10_000;
  await r.reserve();
  assert.deepEqual(saved, [r.sizer.step]);
});

Deno.test("Reserver: a store that reads durability in the reservation is asked there", async () => {
  const good: StoreDurability = { durable: true, settings: { appendonly: "yes" }, problems: [] };
  let reads = 0;
  const store = scripted([range(1n, 10n, { durability: good })], {
    readsDurability: true,
    durability: () => (reads++, Promise.resolve(good)),
  });
  const { r } = reserver(store);
  assert.equal(r.durabilityReport().durable, undefined, "not read yet");
  assert.deepEqual(await r.reserve(), { kind: "served" });
  assert.ok(store.calls[0].options.durability !== undefined, "asked in the reservation");
  assert.equal(reads, 0, "no read of its own: one round trip");
  assert.deepEqual(r.durabilityReport(), {
    mode: "strict",
    durable: true,
    problems: [],
    settings: { appendonly: "yes" },
  });
});

Deno.test("Reserver: the remembered step is looked up within half the timeout", async () => {
  const asked: number[] = [];
  const lookUp = StepMemory.prototype.lookUp;
  StepMemory.prototype.lookUp = function (store, ms) {
    asked.push(ms);
    return lookUp.call(this, store, ms);
  };
  try {
    const store = scripted([], {
      loadStep: () => Promise.resolve(40),
      saveStep: () => Promise.resolve(),
    });
    const { r } = reserver(store, { timeout: 800 });
    await r.reserve();
    // The reservation after the lookup must fit in the caller's wait too.
    assert.deepEqual(asked, [400]);
    assert.equal(store.calls[0].count, 40);
  } finally {
    StepMemory.prototype.lookUp = lookUp;
  }
});

Deno.test("Reserver: without a store, a config error; the step looked up once there is one", async () => {
  let current: Store | undefined;
  installStoreSource({ check: () => {}, store: () => current });
  try {
    let looked = 0;
    const later = scripted([], {
      loadStep: () => (looked++, Promise.resolve(60)),
      saveStep: () => Promise.resolve(),
    });
    const { r } = reserver(undefined as unknown as Store);
    assert.match(await failed(r.reserve()), /^config no Redis client: pass \{ redis \}/);
    assert.match(await failed(r.reserve()), /^config no Redis client/);
    current = later; // configure() after the generator was declared
    assert.deepEqual(await r.reserve(), { kind: "served" });
    assert.equal(looked, 1);
    assert.equal(later.calls[0].count, 60, "the remembered step");
    await r.reserve();
    assert.equal(looked, 1, "once");
  } finally {
    installStoreSource({ check: () => {}, store: () => undefined });
  }
});
