/**
 * Fake timers and clock for unit tests of code that reads `setTimeout`, `clearTimeout` and
 * `performance.now()` when it runs (src/runtime/deadline_timer.ts and what waits on it): a fake
 * timer fires only when the test fires it, at a clock the test sets, and records its
 * ref()/unref() calls. No real time passes, so nothing depends on the machine's speed.
 */

import assert from "node:assert/strict";

/** A timer of {@linkcode Fakes}: fired or cleared by the test, its ref state recorded. */
export class FakeTimer {
  cleared = false;
  fired = false;
  refed = true;
  refs = 0;
  unrefs = 0;
  constructor(readonly cb: () => void, readonly ms: number, readonly at: number) {}
  ref(): void {
    this.refs++;
    this.refed = true;
  }
  unref(): void {
    this.unrefs++;
    this.refed = false;
  }
  hasRef(): boolean {
    return this.refed;
  }
}

/** The fake clock and timers one test runs on. */
export class Fakes {
  clock = 1_000;
  readonly timers: FakeTimer[] = [];

  /** The timers neither fired nor cleared. */
  pending(): FakeTimer[] {
    return this.timers.filter((t) => !t.fired && !t.cleared);
  }

  /** The one pending timer (failing when there is none or more). */
  only(): FakeTimer {
    const pending = this.pending();
    assert.equal(pending.length, 1, `${pending.length} timers pending, not one`);
    return pending[0];
  }

  /** Fire `timer` `late` ms after it was due (the clock set to then). */
  fire(timer: FakeTimer, late = 0): void {
    assert.ok(!timer.fired && !timer.cleared, "fired a timer no longer pending");
    this.clock = timer.at + late;
    timer.fired = true;
    timer.cb();
  }
}

const realSetTimeout = globalThis.setTimeout;

/** Let every queued microtask run (a real, zero-delay timer turn: all microtasks come first). */
export function flush(): Promise<void> {
  return new Promise((resolve) => realSetTimeout(resolve, 0));
}

/**
 * Run `fn` on fake timers and clock; afterwards no fake timer may be left pending (the module
 * holds none: every deadline of `fn` fired or was cancelled, every hold released).
 */
export async function withFakes(fn: (f: Fakes) => void | Promise<void>): Promise<void> {
  const f = new Fakes();
  const realClearTimeout = globalThis.clearTimeout;
  const realNow = performance.now;
  globalThis.setTimeout = ((cb: () => void, ms = 0) => {
    const timer = new FakeTimer(cb, ms, f.clock + ms);
    f.timers.push(timer);
    return timer;
  }) as unknown as typeof setTimeout;
  globalThis.clearTimeout = ((timer?: FakeTimer) => {
    assert.ok(timer instanceof FakeTimer, "cleared a timer the fakes did not make");
    timer.cleared = true;
  }) as typeof clearTimeout;
  performance.now = () => f.clock;
  try {
    await fn(f);
    assert.deepEqual(f.pending(), [], "a timer left armed");
  } finally {
    globalThis.setTimeout = realSetTimeout;
    globalThis.clearTimeout = realClearTimeout;
    performance.now = realNow;
  }
}
