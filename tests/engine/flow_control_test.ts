/**
 * Fast unit tests of the pure engine parts and of KvId's flow control, on a scripted in-memory
 * store. Every behaviour here is also exercised against a real server elsewhere; this file
 * stages what a real server cannot do on cue (a reply that arrives after its deadline).
 */

import "../support/deadline.ts"; // a time limit on every test of this file
import assert from "node:assert/strict";
import { KvId, KvIdError, type KvIdOptions } from "../../mod.ts";
import type { Reservation, ReserveOptions, StepMemory, Store } from "../../src/stores/mod.ts";
import { SegmentBuffer } from "../../src/engine/segment_buffer.ts";
import { StepSizer } from "../../src/engine/step.ts";

/** A store whose every reservation is answered by the test. */
class ScriptedStore implements Store {
  calls: { count: number; options: ReserveOptions; reply: PromiseWithResolvers<Reservation> }[] =
    [];
  /** When set, reservations fail at once with this error. */
  failWith: (() => Error) | undefined;
  #waiting: PromiseWithResolvers<void> | undefined;

  reserve(_key: string, _field: string, count: number, options: ReserveOptions) {
    const reply = Promise.withResolvers<Reservation>();
    this.calls.push({ count, options, reply });
    if (this.failWith) reply.reject(this.failWith());
    this.#waiting?.resolve();
    return reply.promise;
  }

  /** Resolves once `n` reservations have been asked for. */
  async called(n: number): Promise<void> {
    while (this.calls.length < n) {
      this.#waiting = Promise.withResolvers();
      await this.#waiting.promise;
    }
  }

  answer(i: number, first: bigint, last: bigint, raised = false): void {
    this.calls[i].reply.resolve({ ranges: [{ first, last }], raised });
  }
}

const connectionError = () =>
  new KvIdError("connection", "down", { key: "kvid", field: "x", cause: new Error("ECONNRESET") });

Deno.test("SegmentBuffer: ranges at or below the high-water mark are cut", () => {
  const buf = new SegmentBuffer({ prefetchAt: 0.2, safeOnly: true });
  assert.equal(buf.add([{ first: 1n, last: 10n }]), 10);
  assert.equal(buf.high, 10n);
  assert.equal(buf.add([{ first: 6n, last: 15n }]), 5, "6..10 were already held");
  assert.equal(buf.skipped, 5n);
  assert.equal(buf.add([{ first: 3n, last: 9n }]), "rollback");
  assert.equal(buf.remaining, 15);
});

Deno.test("SegmentBuffer: number mode stops at MAX_SAFE_INTEGER", () => {
  const max = BigInt(Number.MAX_SAFE_INTEGER);
  const buf = new SegmentBuffer({ prefetchAt: 0.2, safeOnly: true });
  assert.equal(buf.add([{ first: max - 1n, last: max + 5n }]), 2);
  assert.equal(buf.add([{ first: max + 6n, last: max + 10n }]), "unsafe");
  const big = new SegmentBuffer({ prefetchAt: 0.2, safeOnly: false });
  assert.equal(big.add([{ first: max - 1n, last: max + 5n }]), 7);
});

Deno.test("SegmentBuffer: several ranges form one reservation, prefetch at 20% of the whole", () => {
  const buf = new SegmentBuffer({ prefetchAt: 0.2, safeOnly: true });
  assert.equal(buf.add([{ first: 1n, last: 5n }, { first: 11n, last: 15n }]), 10);
  assert.equal(buf.size, 5);
  assert.equal(buf.prefetchFrom, 5, "no mark in the first range");
  assert.equal(buf.ahead[0].prefetchFrom, 2, "taking index 2 of the last leaves 2 of 10");
});

Deno.test("SegmentBuffer: the current segment's mark is spent once the next is buffered", () => {
  const buf = new SegmentBuffer({ prefetchAt: 0.2, safeOnly: true });
  buf.add([{ first: 1n, last: 10n }]);
  assert.equal(buf.prefetchFrom, 7, "taking index 7 leaves 2 of 10");
  buf.used = 8;
  assert.equal(buf.wantsNext, true);
  buf.add([{ first: 11n, last: 20n }]);
  assert.equal(buf.prefetchFrom, 10, "the rest of 1..10 needs no mark");
  assert.equal(buf.wantsNext, false);
  assert.equal(buf.advance(), false, "1..10 is not used up");
  buf.used = 10;
  assert.equal(buf.advance(), true);
  assert.equal(buf.first, 11n);
  assert.equal(buf.used, 0);
  assert.equal(buf.prefetchFrom, 7, "11..20 keeps its own mark");
});

Deno.test("StepSizer doubling: doubles when faster than segmentDuration, halves when slower", () => {
  const s = new StepSizer(1, 16, 1000, "doubling");
  const steps = [0, 10, 20, 30, 40, 50, 60, 2000, 4000, 4500].map((t) => s.reserved(t, 0));
  assert.deepEqual(steps, [1, 2, 4, 8, 16, 16, 16, 8, 4, 8]);
});

Deno.test("StepSizer rate: sized by the measured rate, at most x16 up and /2 down a time", () => {
  // 50 IDs per ms, a 1 s target: 50,000 per segment.
  const s = new StepSizer(1, 1_000_000, 1000, "rate");
  assert.equal(s.reserved(0, 0), 1, "no rate yet");
  assert.equal(s.reserved(10, 500), 16, "x16 at most");
  assert.equal(s.reserved(20, 1000), 256);
  assert.equal(s.reserved(30, 1500), 4096);
  assert.equal(s.reserved(40, 2000), 50_000, "settled on rate x segmentDuration");
  assert.equal(s.reserved(1040, 52_000), 50_000, "stays");
  assert.equal(s.reserved(11_040, 52_100), 25_000, "idle: /2 at most");
  const capped = new StepSizer(10, 100, 1000, "rate");
  capped.reserved(0, 0);
  assert.equal(capped.reserved(10, 1e6), 100, "never above maxStep");
  assert.equal(capped.reserved(1e9, 1e6), 50);
  for (let t = 2e9; t < 3e9; t += 1e8) capped.reserved(t, 1e6);
  assert.equal(capped.step, 10, "never below minStep");
});

Deno.test("StepSizer ramp-up: a step outlasts 8 round trips at the rate seen, under both rules", () => {
  for (const rule of ["doubling", "rate"] as const) {
    const s = new StepSizer(1, 1_000_000, 600_000, rule);
    // First reservation: 40 calls queued during its 10 ms round trip (4 IDs per ms).
    assert.equal(s.reserved(10, 40, 10), 320, `${rule}: 4/ms x 10 ms x 8 round trips`);
    // An idle name: one call during a 10 ms round trip asks for 8 IDs, not a large segment.
    const idle = new StepSizer(1, 1_000_000, 600_000, rule);
    assert.equal(idle.reserved(10, 1, 10), 8, `${rule}: one call, 8 IDs`);
    // Without a round-trip time (the caller did not measure one): the rule alone.
    const plain = new StepSizer(1, 1_000_000, 600_000, rule);
    assert.equal(plain.reserved(10, 40), 1, `${rule}: no measure, no floor`);
    const capped = new StepSizer(1, 100, 600_000, rule);
    assert.equal(capped.reserved(10, 1e6, 10), 100, `${rule}: never above maxStep`);
  }
});

Deno.test("a new name under load reserves enough at its second reservation that its callers stop waiting", async () => {
  // The clock is the test's: the reservation's round trip is 10 ms by it, whatever the machine.
  let clock = 0;
  const store = new ScriptedStore();
  await using id = new KvId("x", { store, clock: () => clock, rememberStep: false });
  const first = Array.from({ length: 40 }, () => id.next());
  await store.called(1);
  assert.equal(store.calls[0].count, 1, "the first call starts the first reservation");
  clock = 10;
  store.answer(0, 1n, 1n);
  await store.called(2);
  assert.equal(store.calls[1].count, 320, "40 calls in 10 ms: a step for 8 round trips at 4/ms");
  store.answer(1, 2n, 321n);
  assert.deepEqual(await Promise.all(first), Array.from({ length: 40 }, (_, i) => i + 1));
  for (let i = 0; i < 200; i++) await id.next();
  assert.equal(id.stats().stalls, 40, "only the calls before the first reservation waited");
});

Deno.test("a reply that comes after the timeout is dropped: its range is never issued", async () => {
  const store = new ScriptedStore();
  await using id = new KvId("x", { store, timeout: 50, minStep: 10, maxStep: 10, failFast: false });
  const first = id.next();
  await assert.rejects(first, (e) => e instanceof KvIdError && e.code === "timeout");
  const second = id.next();
  await store.called(2);
  store.answer(1, 11n, 20n);
  assert.equal(await second, 11);
  store.answer(0, 1n, 10n); // the late reply of the abandoned reservation
  await new Promise((r) => setTimeout(r, 0));
  const rest = [];
  for (let i = 0; i < 9; i++) rest.push(await id.next());
  assert.deepEqual(rest, [12, 13, 14, 15, 16, 17, 18, 19, 20]);
  assert.equal(id.stats().failures, 1);
  // The prefetch asked for 21..30 by now; answer it so close() has nothing in flight.
  await store.called(3);
  store.answer(2, 21n, 30n);
});

Deno.test("buffered IDs flow while reservations fail; the error comes when none are left", async () => {
  const store = new ScriptedStore();
  await using id = new KvId("x", {
    store,
    // Room for a few retries however late a loaded machine's timers fire (backoff ≤ 1 s).
    timeout: 2_000,
    minStep: 10,
    maxStep: 10,
    failFast: false,
  });
  const p = id.next();
  await store.called(1);
  store.answer(0, 1n, 10n);
  assert.equal(await p, 1);
  for (let i = 2; i <= 8; i++) assert.equal(await id.next(), i); // the 8th starts the prefetch
  await store.called(2);
  store.failWith = connectionError;
  store.calls[1].reply.reject(connectionError());
  assert.equal(await id.next(), 9, "buffered IDs keep flowing");
  assert.equal(await id.next(), 10);
  const started = performance.now();
  const err = await id.next().then(() => undefined, (e) => e);
  assert.ok(err instanceof KvIdError && err.code === "timeout", String(err));
  assert.ok(performance.now() - started >= 1_999, "not before the timeout");
  assert.ok(err.cause instanceof KvIdError && err.cause.code === "connection");
  const retries = store.calls.length - 2;
  assert.ok(retries >= 2 && retries <= 12, `retried ${retries} times in 2 s, with backoff`);
  // At most what the backoff allows in 2 s (a slower machine makes fewer); at least one retry.
  // Recovery: the same generator reserves again.
  store.failWith = undefined;
  const again = id.next();
  await store.called(store.calls.length + 1);
  store.answer(store.calls.length - 1, 101n, 110n);
  assert.equal(await again, 101);
});

Deno.test("a store may answer with several ranges", async () => {
  const store = new ScriptedStore();
  await using id = new KvId("x", { store, minStep: 10, maxStep: 10 });
  const p = id.nextBatch(10);
  await store.called(1);
  store.calls[0].reply.resolve({
    ranges: [{ first: 1n, last: 5n }, { first: 11n, last: 15n }],
    raised: false,
  });
  assert.deepEqual(await p, [1, 2, 3, 4, 5, 11, 12, 13, 14, 15]);
  await store.called(2);
  store.answer(1, 21n, 30n);
});

Deno.test("the floor sent is the high-water mark; a raised counter is reported", async () => {
  const store = new ScriptedStore();
  await using id = new KvId("x", { store, minStep: 5, maxStep: 5, rollbackMargin: 100 });
  const events: unknown[] = [];
  id.addEventListener("rollback", (e) => events.push((e as CustomEvent).detail));
  const p = id.next();
  await store.called(1);
  assert.equal(store.calls[0].options.floor, 0n);
  store.answer(0, 1n, 5n);
  await p;
  for (let i = 0; i < 4; i++) await id.next();
  await store.called(2);
  assert.equal(store.calls[1].options.floor, 5n);
  assert.equal(store.calls[1].options.raiseTo, 105n);
  store.answer(1, 106n, 110n, true);
  assert.equal(await id.next(), 106);
  assert.equal(id.stats().rollbacks, 1);
  assert.deepEqual(events, [{ floor: 5n, last: 110n }]);
  for (let i = 0; i < 3; i++) await id.next();
  await store.called(3);
  store.answer(2, 111n, 115n);
});

Deno.test("prefetch starts earlier when what is left would not outlast four round trips", async () => {
  const store = new ScriptedStore();
  let now = 0;
  await using id = new KvId("x", { store, minStep: 100, maxStep: 100, clock: () => now });
  const first = id.next();
  await store.called(1);
  await new Promise((r) => setTimeout(r, 20)); // a slow round trip: 20 ms or more
  store.answer(0, 1n, 100n);
  assert.equal(await first, 1);
  for (let i = 2; i <= 79; i++) await id.next();
  assert.equal(id.stats().reserving, false, "21 of 100 left: prefetchAt 0.2 not reached");
  await id.next(); // 20 left
  assert.equal(id.stats().reserving, true);
  await store.called(2);
  now += 1; // 80 IDs taken in 1 ms, and round trips of 16 ms or more: 5,000+ IDs needed ahead
  store.answer(1, 101n, 200n);
  for (let i = 81; i <= 100; i++) await id.next();
  assert.equal(id.stats().reserving, false);
  assert.equal(await id.next(), 101);
  assert.equal(id.stats().reserving, true, "the next reservation starts at the first ID");
  await store.called(3);
  store.answer(2, 201n, 300n);
});

Deno.test("next() settles like the async method it was: a wrong receiver rejects, never throws", async () => {
  const store = new ScriptedStore();
  const number = new KvId("x", { store });
  const bigint = new KvId("y", { store, bigint: true });
  // KvId.prototype.next serves subclasses; each mode has a next() of its own.
  for (const next of [KvId.prototype.next, number.next, bigint.next]) {
    let result: Promise<unknown> | undefined;
    assert.doesNotThrow(() => {
      result = next.call({} as never);
    });
    await assert.rejects(result!, TypeError);
  }
  await number.close();
  await bigint.close();
});

Deno.test("new KvId() is a KvId in either mode; a subclass keeps its methods; no call without new", async () => {
  class Tagged extends AnyKvId {
    tag(): string {
      return `tagged ${this.name}`;
    }
  }
  const store = new ScriptedStore();
  const gens = [
    new KvId("a", { store }),
    new KvId("b", { store, bigint: true }),
    new Tagged("c", { store }),
    new Tagged("d", { store, bigint: true }),
  ];
  for (const gen of gens) assert.ok(gen instanceof KvId, gen.name);
  assert.equal(gens[2] instanceof Tagged && gens[2].tag(), "tagged c");
  assert.equal(KvId.name, "KvId");
  assert.throws(() => (KvId as unknown as (name: string) => unknown)("e"), TypeError);
  for (const gen of gens) await gen.close();
});

// KvId as one constructor (its overloads, by ID type, cannot be extended in TypeScript as is).
const AnyKvId = KvId as new (name: string, options?: KvIdOptions) => KvId<number | bigint>;

// One segment of 5 at a time, the prefetch when 2 are left: every path of next() in 6 IDs.
const SMALL = { minStep: 5, maxStep: 5, prefetchAt: 0.4 } as const;
for (
  const [mode, make] of [
    ["number", (store: Store) => new KvId("x", { store, ...SMALL })],
    ["bigint", (store: Store) => new KvId("x", { store, ...SMALL, bigint: true })],
    [
      "a subclass, number",
      (store: Store) => new (class extends AnyKvId {})("x", { store, ...SMALL }),
    ],
    [
      "a subclass, bigint",
      (store: Store) => new (class extends AnyKvId {})("x", { store, ...SMALL, bigint: true }),
    ],
  ] as const
) {
  Deno.test(`next() hands out the same IDs on its fast, switching and waiting paths (${mode})`, async () => {
    const store = new ScriptedStore();
    await using id: KvId<number | bigint> = make(store);
    const first = id.next(); // waiting: nothing buffered
    await store.called(1);
    store.answer(0, 1n, 5n);
    const got = [await first];
    // From memory; the prefetch starts at its mark (40% of the segment left) and is answered.
    for (let i = 0; i < 3; i++) got.push(await id.next());
    await store.called(2);
    store.answer(1, 11n, 15n);
    await new Promise((r) => setTimeout(r, 0)); // the reply is read
    got.push(await id.next(), await id.next()); // the last of the first segment, then the switch
    const want = [1, 2, 3, 4, 5, 11];
    assert.deepEqual(got, mode.endsWith("bigint") ? want.map(BigInt) : want);
    assert.equal(id.stats().stalls, 1);
  });
}

Deno.test("close() takes one timeout in all: the reservation in flight, then the give-back", async () => {
  /** A store whose give-back never answers (a server that hangs after the reservation). */
  class HangingRelease extends ScriptedStore {
    released = 0;
    release(): Promise<boolean> {
      this.released++;
      return new Promise(() => {});
    }
  }
  const store = new HangingRelease();
  const timeout = 3_000;
  const id = new KvId("x", { store, timeout, minStep: 10, maxStep: 10, rememberStep: false });
  const first = id.next();
  await store.called(1);
  store.answer(0, 1n, 10n);
  assert.equal(await first, 1);
  for (let i = 2; i <= 8; i++) await id.next(); // 2 left: the prefetch goes out
  await store.called(2);
  // The generator's clock is held by the test: 2 of the 3 s pass at once, whatever the machine.
  const realNow = performance.now;
  let now = realNow.call(performance);
  performance.now = () => now;
  try {
    let closed = false;
    const closing = id.close().then(() => void (closed = true));
    // The prefetch answers after 2 of the 3 s: 1 s of close()'s timeout is left for the
    // give-back (before: a whole timeout of its own, 5 s in all).
    now += 2_000;
    store.answer(1, 11n, 20n);
    // Timers fire in the order of their deadlines: the give-back's (1 s from now) between these.
    const at = (ms: number) => new Promise<boolean>((r) => setTimeout(() => r(closed), ms));
    const [early, late] = await Promise.all([at(500), at(1_500)]);
    await closing;
    assert.equal(store.released, 1, "9..20 was offered back");
    assert.equal(early, false, "the give-back had the rest of close()'s timeout");
    assert.equal(late, true, "close() ended at its deadline, not a timeout after the give-back");
  } finally {
    performance.now = realNow;
  }
});

Deno.test("calls waiting size the reservation, those that came during first use too", async () => {
  /** A store whose remembered-step lookup is answered by the test (step memory: both halves). */
  class SlowLookup extends ScriptedStore implements StepMemory {
    lookup = Promise.withResolvers<number | undefined>();
    loadStep(): Promise<number | undefined> {
      return this.lookup.promise;
    }
    saveStep(): Promise<void> {
      return Promise.resolve();
    }
  }
  const store = new SlowLookup();
  await using id = new KvId("x", { store, minStep: 1, maxStep: 1_000 });
  const first = id.next(); // first use: the step is looked up before the reservation
  const batch = id.nextBatch(300); // queued meanwhile
  await new Promise((r) => setTimeout(r, 0));
  assert.equal(store.calls.length, 0, "nothing reserved before the lookup answered");
  store.lookup.resolve(undefined);
  await store.called(1);
  assert.equal(store.calls[0].count, 301, "one reservation for every call waiting");
  store.answer(0, 1n, 301n);
  assert.equal(await first, 1);
  assert.equal((await batch).length, 300);
  // Later: a batch bigger than the step is one reservation of its size, up to maxStep.
  const big = id.nextBatch(5_000);
  await store.called(2);
  assert.equal(store.calls[1].count, 1_000, "capped at maxStep");
  const rejected = assert.rejects(big, (e: KvIdError) => e.code === "closed");
  store.answer(1, 302n, 1_301n);
  await store.called(3); // the rest of the batch
  const closing = id.close();
  store.answer(2, 1_302n, 2_301n);
  await closing;
  await rejected;
});
