/**
 * Unit tests of `InterleavedStore`'s timing (src/stores/interleaved/interleaved_store.ts) on fake
 * timers, a fake clock and a fixed random draw (tests/support/fake_timers.ts): the round trip
 * each member is waited for (smoothed over replies in time, raised by a late one), the backoff
 * of a member that failed (its exact length, due to the millisecond), the order of members
 * backing off, a caller's time spent to the millisecond, and the durability probe's limit. No
 * real time passes: members answer when the test says, at the clock it sets. Starts no server.
 */

import "../../support/deadline.ts"; // a time limit on every test of this file
import assert from "node:assert/strict";
import type { AnyReserveOptions, Reservation, Store } from "../../../src/contract/store.ts";
import { InterleavedStore } from "../../../src/stores/interleaved/interleaved_store.ts";
import { type Fakes, flush, withFakes } from "../../support/fake_timers.ts";

const FLOOR_0: AnyReserveOptions = { floor: 0n, raiseTo: 0n, guard: true, exact: true };

/** One reservation a member was asked for: answered when the test says. */
interface Call {
  at: number;
  budgetMs: number;
  answer(): void;
  fail(err?: unknown): void;
}

/** A member whose reservations wait for the test, each recorded. */
function manual(name: string, log: string[] = []) {
  const calls: Call[] = [];
  const store: Store = {
    reserve(_key: string, _field: string, _count: number, options: AnyReserveOptions) {
      log.push(name);
      return new Promise<Reservation>((resolve, reject) =>
        calls.push({
          at: performance.now(),
          budgetMs: options.budgetMs!,
          answer: () =>
            resolve({ ranges: [{ first: 1n, last: 1n }], raised: false, layout: options.layout }),
          fail: (err = new Error("ECONNRESET")) => reject(err),
        })
      );
    },
  };
  return { store, calls };
}

/** Run `fn` on the fakes with `Math.random` drawing `draw` (restored after). */
async function withDraw(draw: number, fn: (f: Fakes) => Promise<void>): Promise<void> {
  const random = Math.random;
  Math.random = () => draw;
  try {
    await withFakes(fn);
  } finally {
    Math.random = random;
  }
}

/** Start a reservation and let it reach its member(s). */
async function start(store: InterleavedStore) {
  const outcome = { settled: false, error: undefined as unknown };
  const p = store.reserve("kvid", "t", 1, FLOOR_0).then(
    () => outcome.settled = true,
    (error) => Object.assign(outcome, { settled: true, error }),
  );
  await flush();
  return { outcome, done: () => p.then(() => outcome) };
}

Deno.test("interleaved timing: 8 smoothed round trips, at least 200 ms, at most the share", async () => {
  await withDraw(0, async (f) => {
    const m = manual("a");
    const store = new InterleavedStore([m.store], { block: 10, timeout: 20_000 });
    // Unknown round trip: all of the time left, 90% of it as the member's budget.
    let r = await start(store);
    assert.equal(m.calls[0].budgetMs, 18_000);
    f.clock += 300;
    m.calls[0].answer();
    assert.equal((await r.done()).error, undefined);
    // 300 ms known: 8 of them.
    r = await start(store);
    assert.equal(m.calls[1].budgetMs, Math.floor(0.9 * 8 * 300));
    f.clock += 100;
    m.calls[1].answer();
    await r.done();
    // 7/8 of 300 and 1/8 of 100: 275.
    r = await start(store);
    assert.equal(m.calls[2].budgetMs, Math.floor(0.9 * 8 * 275));
    m.calls[2].answer(); // at once
    await r.done();
    r = await start(store);
    assert.equal(m.calls[3].budgetMs, Math.floor(0.9 * 8 * 0.875 * 275));
    m.calls[3].answer();
    await r.done();
    // Quick replies: at least 200 ms.
    for (let k = 0; k < 40; k++) {
      r = await start(store);
      m.calls.at(-1)!.answer();
      await r.done();
    }
    r = await start(store);
    assert.equal(m.calls.at(-1)!.budgetMs, 180);
    m.calls.at(-1)!.answer();
    await r.done();
  });
});

Deno.test("interleaved timing: a known round trip is waited for at most timeout / members", async () => {
  await withDraw(0, async (f) => {
    const a = manual("a");
    const b = manual("b");
    const store = new InterleavedStore([a.store, b.store], { block: 10, timeout: 1_000 });
    let r = await start(store);
    assert.equal(a.calls[0].budgetMs, 450, "unknown: half of what is left, 90%");
    f.clock += 100;
    a.calls[0].answer();
    await r.done();
    // b is next; then a again, its 100 ms known: 8 of them pass 1,000 / 2.
    r = await start(store);
    b.calls[0].answer();
    await r.done();
    r = await start(store);
    assert.equal(a.calls[1].budgetMs, 450, "500 ms, the share, not 800");
    a.calls[1].answer();
    await r.done();
  });
});

Deno.test("interleaved timing: a late reply raises the wait; the late failure does not", async () => {
  await withDraw(0, async (f) => {
    const m = manual("a");
    const store = new InterleavedStore([m.store], { block: 10, timeout: 20_000 });
    let r = await start(store);
    f.clock += 100;
    m.calls[0].answer();
    await r.done(); // 100 ms known: limit 800
    r = await start(store);
    const timer = f.pending().find((t) => t.ms === 800);
    assert.ok(timer, `the attempt's limit is 800 ms: ${f.pending().map((t) => t.ms)}`);
    f.fire(timer);
    await flush();
    assert.match(String((await r.done()).error), /did not answer within 800 ms/);
    f.clock = m.calls[1].at + 3_000;
    m.calls[1].answer(); // late: 3,000 ms
    await flush();
    r = await start(store);
    assert.equal(m.calls[2].budgetMs, 18_000, "8 x 3,000 ms passes the 20 s left: all of it");
    f.clock += 100;
    m.calls[2].answer();
    await r.done();
    // A late failure teaches nothing: the estimate stays.
    const n = manual("b");
    const quick = new InterleavedStore([n.store], { block: 10, timeout: 20_000 });
    r = await start(quick);
    f.clock += 100;
    n.calls[0].answer();
    await r.done();
    r = await start(quick);
    f.fire(f.pending().find((t) => t.ms === 800)!);
    await flush();
    await r.done();
    f.clock = n.calls[1].at + 3_000;
    n.calls[1].fail();
    await flush();
    r = await start(quick);
    assert.equal(n.calls[2].budgetMs, 720, "still 8 x 100 ms");
    n.calls[2].answer();
    await r.done();
  });
});

Deno.test("interleaved timing: a failed member backs off 3/4 of 100 ms, then of 200 ms", async () => {
  // Math.random() = 0.5: half fixed, half random, so 75 ms after a first failure, 150 after two.
  await withDraw(0.5, async (f) => {
    const log: string[] = [];
    const a = manual("a", log);
    const b = manual("b", log);
    const store = new InterleavedStore([a.store, b.store], { block: 10, timeout: 5_000 });
    // The first member tried is drawn: 0.5 of 2 is member 1 (b); make a the first by serving b.
    const r = await start(store);
    b.calls[0].answer();
    await r.done();
    log.length = 0;
    const reserveAt = async (clock: number, answer: (name: string) => boolean) => {
      f.clock = clock;
      const r = await start(store);
      for (let k = 0; k < 2 && !r.outcome.settled; k++) {
        const name = log.at(-1)!;
        const call = (name === "a" ? a : b).calls.at(-1)!;
        if (answer(name)) call.answer();
        else call.fail();
        await flush();
      }
      await r.done();
      const tried = [...log];
      log.length = 0;
      return tried;
    };
    const aFails = (name: string) => name !== "a";
    assert.deepEqual(await reserveAt(1_000, aFails), ["a", "b"], "a first, fails at 1,000");
    assert.deepEqual(await reserveAt(1_074, aFails), ["b"], "backing off until 1,075");
    assert.deepEqual(await reserveAt(1_075, aFails), ["a", "b"], "due at 1,075 exactly");
    assert.deepEqual(await reserveAt(1_224, aFails), ["b"], "two failures: until 1,075 + 150");
    assert.deepEqual(await reserveAt(1_225, () => true), ["a"], "due again; served");
    assert.deepEqual(await reserveAt(1_226, aFails), ["b"], "b's turn");
    assert.deepEqual(await reserveAt(1_227, aFails), ["a", "b"], "a recovered: no backoff left");
  });
});

Deno.test("interleaved timing: members backing off are tried soonest due first", async () => {
  // Math.random() = 0: the first member tried is a, and each backoff is half its base (50 ms
  // after one failure, 100 after two, 200 after three).
  await withDraw(0, async (f) => {
    const log: string[] = [];
    const members = new Map(["a", "b", "c"].map((name) => [name, manual(name, log)]));
    const store = new InterleavedStore([...members.values()].map((m) => m.store), {
      block: 10,
      timeout: 5_000,
    });
    /** One reservation at `clock`; each member tried fails unless it is `serves`. */
    const round = async (clock: number, serves?: string) => {
      f.clock = clock;
      log.length = 0;
      const r = await start(store);
      for (let k = 0; k < 3 && !r.outcome.settled; k++) {
        const name = log.at(-1)!;
        const call = members.get(name)!.calls.at(-1)!;
        if (name === serves) call.answer();
        else call.fail();
        await flush();
      }
      await r.done();
      return [...log];
    };
    assert.deepEqual(await round(1_000), ["a", "b", "c"]); // each retried at 1,050
    assert.deepEqual(await round(1_060, "b"), ["a", "b"]); // a at 1,160; b well
    // From c (after b): c and b due, a backing off. c at 1,170, b at 1,120, a at 1,270.
    assert.deepEqual(await round(1_070), ["c", "b", "a"]);
    // None due: soonest first, not in turn (c, a, b).
    assert.deepEqual(await round(1_080), ["b", "c", "a"]);
  });
});

Deno.test("interleaved timing: no member is tried once the time is spent, to the millisecond", async () => {
  await withDraw(0, async (f) => {
    const log: string[] = [];
    const a = manual("a", log);
    const b = manual("b", log);
    const store = new InterleavedStore([a.store, b.store], { block: 10, timeout: 1_000 });
    f.clock = 1_000;
    const r = await start(store);
    f.clock = 2_000; // a fails exactly at the caller's deadline
    a.calls[0].fail();
    await flush();
    assert.equal((await r.done()).settled, true);
    assert.deepEqual(log, ["a"], "nothing left for b");
  });
});

Deno.test("interleaved timing: the durability probe waits max(200 ms, timeout / 2)", async () => {
  await withDraw(0, async (f) => {
    for (const [timeout, limit] of [[1_000, 500], [300, 200]]) {
      const hung: Store = {
        reserve: () => Promise.reject(new Error("unused")),
        durability: () => new Promise(() => {}),
      } as Store;
      const store = new InterleavedStore([hung], { block: 10, timeout });
      const read = store.durability("kvid", {
        field: "t",
        mode: "strict",
        stated: {},
        judge: () => undefined,
      });
      await flush();
      const timer = f.only();
      assert.equal(timer.ms, limit, `timeout ${timeout}`);
      f.fire(timer);
      assert.match((await read).settings["0.probe"], /not yet/);
    }
  });
});

Deno.test("interleaved timing: a late reply quicker than the known round trip lowers nothing", async () => {
  // Late only because the time left was short (the loop blocked while the first member was
  // tried): b's 700 ms reply after 600 ms is no news against its known 1,000 ms.
  await withDraw(0, async (f) => {
    const a = manual("a");
    const b = manual("b");
    const store = new InterleavedStore([a.store, b.store], { block: 10, timeout: 20_000 });
    let r = await start(store); // a first (Math.random() = 0), at once
    a.calls[0].answer();
    await r.done();
    r = await start(store); // b: 1,000 ms
    f.clock += 1_000;
    b.calls[0].answer();
    await r.done();
    f.clock = 10_000;
    // a (200 ms limit): its timer fired 19,000 ms late, then once more (200 ms, its bound).
    r = await start(store);
    f.fire(f.only(), 19_000);
    f.fire(f.only());
    await flush();
    assert.equal(f.clock, 10_000 + 200 + 19_000 + 200);
    assert.equal(b.calls[1].budgetMs, Math.floor(0.9 * 600), "b gets the 600 ms left");
    f.fire(f.only());
    await flush();
    await r.done();
    f.clock = b.calls[1].at + 700;
    b.calls[1].answer(); // late, after 700 ms
    await flush();
    f.clock = 40_000; // both due again
    r = await start(store);
    a.calls.at(-1)!.fail();
    await flush();
    assert.equal(b.calls[2].budgetMs, Math.floor(0.9 * 8 * 1_000), "8 x 1,000 ms, not 8 x 700");
    b.calls[2].answer();
    await r.done();
  });
});
