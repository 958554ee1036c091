import "../support/deadline.ts"; // a time limit on every test of this file
// The shared deadline timer (src/runtime/deadline_timer.ts) kept between deadlines while a
// generator holds it: one setTimeout for many deadlines, deadlines still on time either side of
// the kept timer, nothing left after the release, and a process with an idle generator open
// still exits by itself.
import assert from "node:assert/strict";
import {
  deadlineTimer,
  holdIdleTimer,
  releaseIdleTimer,
  withDeadline,
} from "../../src/runtime/deadline_timer.ts";

/** Run `fn` counting the `setTimeout` calls made meanwhile. */
async function countingTimers(fn: () => Promise<void>): Promise<number> {
  const original = globalThis.setTimeout;
  let made = 0;
  globalThis.setTimeout = ((...args: Parameters<typeof setTimeout>) => {
    made++;
    return original(...args);
  }) as typeof setTimeout;
  try {
    await fn();
  } finally {
    globalThis.setTimeout = original;
  }
  return made;
}

const quick = () => withDeadline(Promise.resolve(1), 1_000, () => new Error("late"));

Deno.test("deadline timer: held, ten deadlines in a row make one setTimeout; not held, ten", async () => {
  holdIdleTimer();
  try {
    const held = await countingTimers(async () => {
      for (let i = 0; i < 10; i++) assert.equal(await quick(), 1);
    });
    assert.equal(held, 1);
  } finally {
    releaseIdleTimer(); // the kept timer is cleared: the sanitizer sees no timer left
  }
  const alone = await countingTimers(async () => {
    for (let i = 0; i < 10; i++) assert.equal(await quick(), 1);
  });
  assert.equal(alone, 10);
});

Deno.test("deadline timer: a deadline earlier than the kept timer fires on time", async () => {
  holdIdleTimer();
  try {
    // Kept armed 60 s ahead, then a deadline of 30 ms on work that never ends.
    await withDeadline(Promise.resolve(1), 60_000, () => new Error("late"));
    const never = new Promise<number>(() => {});
    await assert.rejects(withDeadline(never, 30, () => new Error("too slow")), /too slow/);
  } finally {
    releaseIdleTimer();
  }
});

Deno.test("deadline timer: a deadline later than the kept timer is not fired early", async () => {
  holdIdleTimer();
  try {
    // Kept armed 20 ms ahead; the next deadline is 300 ms: the kept timer firing first must
    // re-arm for it, not reject it.
    await withDeadline(Promise.resolve(1), 20, () => new Error("late"));
    const started = performance.now();
    const never = new Promise<number>(() => {});
    await assert.rejects(withDeadline(never, 300, () => new Error("too slow")), /too slow/);
    const waited = performance.now() - started;
    assert.ok(waited >= 250, `rejected after ${waited.toFixed(0)} ms, before its 300 ms`);
  } finally {
    releaseIdleTimer();
  }
});

Deno.test("deadline timer: a process with an open, idle generator exits by itself", async () => {
  // The kept timer is unreferenced: with a 10-minute timeout held open it must not keep the
  // process alive (a hang is the failure: killed after 60 s, far above a normal run).
  const script = `
    import { KvId } from ${JSON.stringify(new URL("../../mod.ts", import.meta.url).href)};
    import { DenoKvStore } from ${
    JSON.stringify(new URL("../../src/stores/deno_kv/deno_kv_store.ts", import.meta.url).href)
  };
    const store = new DenoKvStore(await Deno.openKv(":memory:"));
    const a = new KvId("a", { store, timeout: 600_000, prefetchAt: 0 });
    const b = new KvId("b", { store, timeout: 600_000, prefetchAt: 0 });
    console.log(await a.next(), await b.next());
  `;
  const child = new Deno.Command(Deno.execPath(), {
    args: ["eval", "--unstable-kv", script],
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const limit = setTimeout(() => child.kill("SIGKILL"), 60_000);
  const out = await child.output();
  clearTimeout(limit);
  assert.equal(out.signal, null, "killed: the process did not exit by itself");
  assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
  assert.equal(new TextDecoder().decode(out.stdout).trim(), "1 1");
});

Deno.test("deadline timer: a timer late by a blocked loop waits at most the timeout once more", async () => {
  // performance.now() and setTimeout held: the timer's first wait (100 ms) fires 1,000 ms late
  // (a blocked event loop); the second wait must be at most the timeout, not as long as it was
  // late, so a store that hung fails within twice the caller's timeout.
  const realNow = performance.now;
  const realSetTimeout = globalThis.setTimeout;
  let clock = realNow.call(performance);
  const waits: number[] = [];
  performance.now = () => clock;
  globalThis.setTimeout = ((fn: () => void, ms = 0) => {
    waits.push(ms);
    clock += waits.length === 1 ? 1_000 : ms; // the first: the loop blocked for 1 s
    return realSetTimeout(fn, 0);
  }) as typeof setTimeout;
  try {
    const never = new Promise<number>(() => {});
    await assert.rejects(withDeadline(never, 100, () => new Error("hung")), /hung/);
  } finally {
    performance.now = realNow;
    globalThis.setTimeout = realSetTimeout;
  }
  assert.deepEqual(waits.map(Math.round), [100, 100]);
});

/** Poll `check` every timer turn until it holds or `ms` passed; returns whether it held. */
async function eventually(check: () => boolean, ms = 5_000): Promise<boolean> {
  const deadline = performance.now() + ms;
  while (!check() && performance.now() < deadline) await new Promise((r) => setTimeout(r, 5));
  return check();
}

Deno.test("deadline timer: a cancelled deadline never fires; cancelling twice leaves the others", async () => {
  const fired: string[] = [];
  const cancelA = deadlineTimer(20, () => fired.push("a"));
  const cancelB = deadlineTimer(60, () => fired.push("b"));
  const cancelC = deadlineTimer(5_000, () => fired.push("c"));
  cancelA();
  cancelC();
  cancelC(); // again: still one deadline (b) live
  assert.ok(await eventually(() => fired.length > 0), "b fired");
  assert.deepEqual(fired, ["b"]);
  cancelB(); // after it fired: nothing
  const cancelD = deadlineTimer(10, () => fired.push("d"));
  assert.ok(await eventually(() => fired.length > 1), "d fired");
  assert.deepEqual(fired, ["b", "d"]);
  cancelD();
});

/** Run `fn` with performance.now() held and each setTimeout advancing it by its own delay. */
async function heldClock(fn: () => Promise<void>): Promise<number[]> {
  const realNow = performance.now;
  const realSetTimeout = globalThis.setTimeout;
  let clock = realNow.call(performance);
  const waits: number[] = [];
  performance.now = () => clock;
  globalThis.setTimeout = ((cb: () => void, ms = 0) => {
    waits.push(ms);
    return realSetTimeout(() => {
      clock += ms; // exactly on time: never a blocked loop
      cb();
    }, 0);
  }) as typeof setTimeout;
  try {
    await fn();
  } finally {
    performance.now = realNow;
    globalThis.setTimeout = realSetTimeout;
  }
  return waits;
}

Deno.test("deadline timer: deadlines fire in the order of their due times, however added", async () => {
  const fired: number[] = [];
  const order = [50, 10, 40, 20, 70, 30, 5, 45, 15, 60, 25, 35];
  await heldClock(async () => {
    const all = order.map((ms) =>
      withDeadline(new Promise(() => {}), ms, () => new Error(String(ms))).catch(() => {
        fired.push(ms);
      })
    );
    await Promise.all(all);
  });
  assert.deepEqual(fired, [...order].sort((a, b) => a - b));
});

Deno.test("deadline timer: held twice, released once, the kept timer stays for the next deadlines", async () => {
  holdIdleTimer();
  holdIdleTimer();
  try {
    await quick(); // arms the kept timer
    releaseIdleTimer(); // one holder left
    const made = await countingTimers(async () => {
      for (let i = 0; i < 10; i++) assert.equal(await quick(), 1);
    });
    assert.equal(made, 0, "the kept timer served them");
  } finally {
    releaseIdleTimer();
  }
});

Deno.test("deadline timer: a release without a hold does not cancel the next hold", async () => {
  // Released more often than held (by this file's earlier tests or not): none is held after.
  for (let i = 0; i < 100; i++) releaseIdleTimer();
  holdIdleTimer();
  try {
    const made = await countingTimers(async () => {
      for (let i = 0; i < 10; i++) assert.equal(await quick(), 1);
    });
    assert.equal(made, 1);
  } finally {
    releaseIdleTimer();
  }
});

Deno.test("deadline timer: a kept, unreferenced timer holds the process open for a new deadline", async () => {
  // Held: the first deadline leaves the timer kept and unreferenced; the next deadline reuses
  // it and must reference it again, or the process exits before that deadline fires.
  const script = `
    import { holdIdleTimer, releaseIdleTimer, withDeadline } from ${
    JSON.stringify(new URL("../../src/runtime/deadline_timer.ts", import.meta.url).href)
  };
    holdIdleTimer();
    await withDeadline(Promise.resolve(1), 200, () => new Error("late"));
    withDeadline(new Promise(() => {}), 300, () => new Error("too slow")).catch((err) => {
      console.log(err.message);
      releaseIdleTimer();
    });
  `;
  const child = new Deno.Command(Deno.execPath(), {
    args: ["eval", script],
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const limit = setTimeout(() => child.kill("SIGKILL"), 60_000);
  const out = await child.output();
  clearTimeout(limit);
  assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
  assert.equal(
    new TextDecoder().decode(out.stdout).trim(),
    "too slow",
    "exited before the deadline",
  );
});

Deno.test("deadline timer: the last release keeps a deadline that reused the kept timer", async () => {
  // The kept timer is reused (no longer idle) by a pending deadline; the last release must then
  // leave it armed: the deadline still fires, before a much later check.
  holdIdleTimer();
  await withDeadline(Promise.resolve(1), 1_000, () => new Error("late"));
  const pending = withDeadline(new Promise<number>(() => {}), 1_000, () => new Error("too slow"));
  releaseIdleTimer();
  let check: ReturnType<typeof setTimeout> | undefined;
  const outcome = await Promise.race([
    pending.then(() => "resolved", (err: Error) => err.message),
    new Promise<string>((resolve) => check = setTimeout(() => resolve("never fired"), 10_000)),
  ]);
  clearTimeout(check);
  assert.equal(outcome, "too slow");
});
