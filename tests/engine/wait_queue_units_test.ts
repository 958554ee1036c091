/**
 * Unit tests of the queue of calls waiting for IDs (src/engine/wait_queue.ts): what the waiting
 * calls still need (`demand`), first come first served (a batch at the head waits for all of its
 * IDs before a later call gets one), every call rejected at once, and a call rejected when its
 * deadline passes, the owner told, the timer re-armed for the next one and gone once the queue is
 * empty (Deno's sanitizer fails a test that leaves it). The owner is a plain buffer of numbers;
 * deadlines are set through `push`'s `now`, so the expiries do not depend on the machine's speed.
 * Starts no server.
 */

import "../support/deadline.ts"; // a time limit on every test of this file
import assert from "node:assert/strict";
import {
  EXPIRED,
  FILL,
  TAKE,
  TIMED_OUT,
  WaitQueue,
  type WaitQueueOwner,
} from "../../src/engine/wait_queue.ts";

/** A generator's buffer of IDs, and what the queue told it. */
class Owner implements WaitQueueOwner<number> {
  buffer: number[] = [];
  expired: number[] = [];
  timeouts = 0;
  [TAKE](): number | undefined {
    return this.buffer.shift();
  }
  [FILL](ids: number[], from: number, count: number): number {
    let n = from;
    while (n < count && this.buffer.length > 0) ids[n++] = this.buffer.shift()!;
    return n;
  }
  [TIMED_OUT](): unknown {
    return new Error(`timed out #${++this.timeouts}`);
  }
  [EXPIRED](now: number): void {
    this.expired.push(now);
  }
}

/** Settled or not, without waiting. */
function track<T>(p: Promise<T>) {
  const state: { settled: boolean; value?: T; error?: unknown } = { settled: false };
  p.then(
    (value) => Object.assign(state, { settled: true, value }),
    (error) => Object.assign(state, { settled: true, error }),
  );
  return state;
}

const tick = () => new Promise((resolve) => setTimeout(resolve, 0));

/**
 * How `p` settled within `ms` (a bound far above the 20 ms deadlines used here), as a value to
 * assert on: a call the queue never settles fails an assertion, not the file's time limit.
 */
async function within<T>(p: Promise<T>, ms = 5_000): Promise<string> {
  let guard: ReturnType<typeof setTimeout> | undefined;
  try {
    return await Promise.race([
      p.then((v) => `resolved ${JSON.stringify(v)}`, (e) => `rejected ${e?.message ?? e}`),
      new Promise<string>((resolve) => guard = setTimeout(() => resolve(`pending`), ms)),
    ]);
  } finally {
    clearTimeout(guard);
  }
}
const FAR = 1e9; // a deadline no test reaches

Deno.test("WaitQueue: demand counts the IDs still needed; empty once all are served", async () => {
  const owner = new Owner();
  const q = new WaitQueue<number>(FAR, owner);
  assert.equal(q.empty, true);
  assert.equal(q.demand, 0);
  const now = performance.now();
  const one = q.push(1, undefined, 0, now);
  assert.equal(q.empty, false);
  assert.equal(q.demand, 1);
  const batch = q.push(4, [], 0, now);
  assert.equal(q.demand, 5);
  const started = q.push(5, [7, 8], 2, now);
  assert.equal(q.demand, 8, "a batch that has 2 of its 5 needs 3");
  owner.buffer = [1, 2, 3];
  q.serve();
  const first = track(one);
  await tick();
  assert.equal(first.value, 1);
  assert.equal(q.demand, 5, "the batch at the head got 2 of its 4");
  assert.equal(q.empty, false);
  owner.buffer = [4, 5, 6, 9, 10, 11];
  q.serve();
  const [b, c] = [track(batch), track(started)];
  await tick();
  assert.deepEqual(b.value, [2, 3, 4, 5]);
  assert.deepEqual(c.value, [7, 8, 6, 9, 10]);
  assert.equal(q.demand, 0);
  assert.equal(q.empty, true);
  assert.deepEqual(owner.buffer, [11], "no more taken than needed");
});

Deno.test("WaitQueue: first come first served; nothing buffered, nothing resolved", async () => {
  const owner = new Owner();
  const q = new WaitQueue<number>(FAR, owner);
  const now = performance.now();
  const a = track(q.push(1, undefined, 0, now));
  const b = track(q.push(2, [], 0, now));
  const c = track(q.push(1, undefined, 0, now));
  q.serve();
  await tick();
  assert.equal(a.settled || b.settled || c.settled, false, "an empty buffer serves no one");
  owner.buffer = [10, 11];
  q.serve();
  await tick();
  assert.equal(a.value, 10);
  assert.equal(b.settled, false, "the batch has 1 of 2");
  assert.equal(c.settled, false, "a later call waits behind the batch");
  assert.equal(q.demand, 2);
  owner.buffer = [12, 13, 14];
  q.serve();
  await tick();
  assert.deepEqual(b.value, [11, 12]);
  assert.equal(c.value, 13);
  assert.equal(q.empty, true);
  assert.deepEqual(owner.buffer, [14]);
});

Deno.test("WaitQueue: rejectAll rejects each waiting call with its own error, then starts over", async () => {
  const owner = new Owner();
  const q = new WaitQueue<number>(FAR, owner);
  const now = performance.now();
  const calls = [q.push(1, undefined, 0, now), q.push(3, [], 0, now), q.push(1, undefined, 0, now)];
  let made = 0;
  q.rejectAll(() => new Error(`closed #${++made}`));
  const states = calls.map(track);
  await tick();
  assert.deepEqual(states.map((st) => (st.error as Error)?.message), [
    "closed #1",
    "closed #2",
    "closed #3",
  ]);
  assert.equal(q.demand, 0);
  assert.equal(q.empty, true);
  q.rejectAll(() => assert.fail("no call is waiting"));
  const again = track(q.push(1, undefined, 0, performance.now()));
  owner.buffer = [1];
  q.serve();
  await tick();
  assert.equal(again.value, 1, "served after a rejectAll");
});

Deno.test("WaitQueue: a call past its deadline is rejected, the owner told; later ones wait on", async () => {
  const owner = new Owner();
  const q = new WaitQueue<number>(20, owner);
  const now = performance.now();
  // Deadlines through `now`: the first already passed, the second far away.
  const late = q.push(3, [], 1, now - 1_000);
  const waiting = track(q.push(1, undefined, 0, now + FAR));
  assert.equal(q.demand, 3);
  assert.equal(await within(late), "rejected timed out #1");
  assert.equal(owner.expired.length, 1, "told once");
  assert.ok(owner.expired[0] >= now, "with the time of the expiry");
  assert.equal(q.demand, 1, "what the rejected batch still needed is no longer wanted");
  assert.equal(q.empty, false);
  await tick();
  assert.equal(waiting.settled, false, "a call before its deadline waits on");
  owner.buffer = [5];
  q.serve();
  await tick();
  assert.equal(waiting.value, 5);
  assert.equal(q.empty, true);
});

Deno.test("WaitQueue: the timer re-armed for the next deadline, and the owner told each time", async () => {
  const owner = new Owner();
  const q = new WaitQueue<number>(20, owner);
  const now = performance.now();
  const first = q.push(1, undefined, 0, now - 1_000);
  // Due 200 ms after the first timer (20 ms) at the latest: only a re-armed timer rejects it.
  const second = q.push(1, undefined, 0, now + 180);
  const firstOutcome = await within(first);
  const outcome = await within(second);
  q.rejectAll(() => new Error("cleanup"));
  assert.equal(firstOutcome, "rejected timed out #1");
  assert.match(outcome, /^rejected timed out #[12]$/, "rejected by a re-armed timer");
  assert.ok(owner.expired.length >= 1 && owner.expired.length <= 2, `${owner.expired}`);
  assert.equal(q.empty, true);
});

Deno.test("WaitQueue: a timer that finds no call past its deadline tells the owner nothing", async () => {
  const owner = new Owner();
  const q = new WaitQueue<number>(10, owner);
  // The first timer fires after 10 ms; the call's deadline is 500 ms after it was queued.
  const call = track(q.push(1, undefined, 0, performance.now() + 490));
  await new Promise((resolve) => setTimeout(resolve, 100));
  assert.equal(call.settled, false);
  assert.deepEqual(owner.expired, [], "nothing expired: nothing to tell");
  q.rejectAll(() => new Error("cleanup"));
  await tick();
  assert.equal(call.settled, true);
});

Deno.test("WaitQueue: never rejected before its deadline, even when the first timer comes sooner", async () => {
  const owner = new Owner();
  const q = new WaitQueue<number>(100, owner);
  const now = performance.now();
  // Queued as of 50 ms from now: its deadline is now + 150; the first timer fires at now + 100.
  const call = q.push(1, undefined, 0, now + 50);
  assert.match(await within(call), /^rejected timed out/);
  assert.ok(owner.expired[0] >= now + 150, `rejected ${owner.expired[0] - now} ms after queuing`);
});

Deno.test("WaitQueue: the re-armed timer waits what is left of the next deadline", async () => {
  // Late enough on the clock (>= 1 s since the process started) that a wait counted from the
  // clock's origin instead of from now would be seconds too long; not a synchronisation.
  const start = performance.now();
  if (start < 1_000) await new Promise((resolve) => setTimeout(resolve, 1_000 - start));
  const owner = new Owner();
  const q = new WaitQueue<number>(20, owner);
  const now = performance.now();
  const first = q.push(1, undefined, 0, now - 1_000);
  const second = q.push(1, undefined, 0, now + 180); // due at now + 200
  const outcomes = [await within(first), await within(second, 1_000)];
  q.rejectAll(() => new Error("cleanup"));
  assert.equal(outcomes[0], "rejected timed out #1");
  assert.match(outcomes[1], /^rejected timed out/, "within 1 s of queuing, not 2 s and more");
});

Deno.test("WaitQueue: more than 1,024 calls served in order across the queue's compaction", async () => {
  const owner = new Owner();
  const q = new WaitQueue<number>(FAR, owner);
  const now = performance.now();
  const calls = Array.from({ length: 3000 }, () => q.push(1, undefined, 0, now));
  for (let served = 0; served < 3000;) {
    const n = Math.min(700, 3000 - served);
    owner.buffer = Array.from({ length: n }, (_, i) => served + i);
    q.serve();
    served += n;
    assert.equal(q.demand, 3000 - served);
    assert.equal(q.empty, served === 3000);
  }
  const states = calls.map(track);
  await tick();
  assert.deepEqual(states.map((st) => st.value), Array.from({ length: 3000 }, (_, i) => i));
  assert.equal(q.empty, true);
});
