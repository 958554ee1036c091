/**
 * Unit tests of the shared deadline timer (src/runtime/deadline_timer.ts) on fake timers: every
 * branch the systematic mutation run (`deno task mutate:all deadline_timer`) found no real-timer
 * test depending on. `setTimeout`, `clearTimeout` and `performance.now()` are replaced for the
 * test (the module reads them when it runs); a fake timer fires only when the test says so, at a
 * clock the test sets, and records its ref()/unref() calls. Real-timer behaviour (a process kept
 * open or not, a blocked loop) is in tests/runtime/deadline_timer_test.ts and
 * tests/faults/blocked_loop_test.ts. Starts no server.
 */

import "../support/deadline.ts"; // a time limit on every test of this file
import assert from "node:assert/strict";
import {
  deadlineTimer,
  holdIdleTimer,
  LOOP_LAG_MS,
  releaseIdleTimer,
  withDeadline,
} from "../../src/runtime/deadline_timer.ts";
import { flush, withFakes } from "../support/fake_timers.ts";

Deno.test("deadline timer: armed for the deadline's delay, fired exactly when due it fires", async () => {
  await withFakes((f) => {
    let fired = 0;
    deadlineTimer(100, () => fired++);
    const timer = f.only();
    assert.equal(timer.ms, 100, "armed for the deadline's own delay");
    f.fire(timer); // on time to the ms: not blocked, not extended
    assert.equal(fired, 1);
    assert.equal(f.timers.length, 1, "one setTimeout for one deadline on time");
  });
});

Deno.test("deadline timer: fired LOOP_LAG_MS late is on time; later, it waits once more", async () => {
  await withFakes((f) => {
    let fired = 0;
    deadlineTimer(200, () => fired++);
    f.fire(f.only(), LOOP_LAG_MS); // late by the bound exactly: still on time
    assert.equal(fired, 1);

    deadlineTimer(200, () => fired++);
    f.fire(f.only(), LOOP_LAG_MS + 1); // blocked loop: one more wait, as long as it was late
    assert.equal(fired, 1, "not fired at the first, late wait");
    const second = f.only();
    assert.equal(second.ms, LOOP_LAG_MS + 1);
    f.fire(second, 1_000); // late again: the second wait is the last
    assert.equal(fired, 2, "fired at the second wait, however late");
    assert.equal(f.timers.length, 3);
  });
});

Deno.test("deadline timer: deadlines of one due time share one setTimeout", async () => {
  await withFakes((f) => {
    const fired: string[] = [];
    deadlineTimer(100, () => fired.push("a"));
    deadlineTimer(100, () => fired.push("b")); // same clock: the same due time
    const timer = f.only();
    assert.equal(f.timers.length, 1, "the second reused the timer armed for its due time");
    f.fire(timer);
    assert.deepEqual(fired.sort(), ["a", "b"]);
  });
});

Deno.test("deadline timer: a deadline set from a fire re-arms past a cancelled one", async () => {
  await withFakes((f) => {
    const fired: string[] = [];
    let cancelD = () => {};
    deadlineTimer(10, () => {
      fired.push("a");
      // Set while the timer runs (none armed), with the cancelled b (20) on top of the rest.
      cancelD = deadlineTimer(100, () => fired.push("d"));
    });
    const cancelB = deadlineTimer(20, () => fired.push("b"));
    deadlineTimer(30, () => fired.push("c"));
    cancelB();
    f.fire(f.only());
    assert.deepEqual(fired, ["a"]);
    const next = f.only();
    assert.equal(next.ms, 20, "armed for c (due at 30, now 10), not for the cancelled b");
    f.fire(next);
    assert.deepEqual(fired, ["a", "c"], "c fired when its timer did");
    cancelD();
  });
});

Deno.test("deadline timer: held, the idle timer is unreferenced, re-referenced once when reused", async () => {
  await withFakes((f) => {
    holdIdleTimer();
    try {
      deadlineTimer(100, () => {})(); // set and cancelled: the timer kept, idle
      const timer = f.only();
      assert.equal(timer.unrefs, 1);
      assert.equal(timer.hasRef(), false, "an idle timer holds no process open");
      const cancelB = deadlineTimer(200, () => {}); // reuses the kept timer
      assert.equal(f.timers.length, 1, "no new setTimeout");
      assert.equal(timer.refs, 1, "re-referenced for the new deadline");
      assert.equal(timer.hasRef(), true);
      const cancelC = deadlineTimer(300, () => {}); // reuses it again, already referenced
      assert.equal(timer.refs, 1, "a referenced timer is not referenced again");
      cancelB();
      assert.equal(timer.unrefs, 1, "a deadline still live: still referenced");
      cancelC();
      assert.equal(timer.unrefs, 2);
      assert.equal(timer.hasRef(), false);
      assert.ok(!timer.cleared, "kept while held");
    } finally {
      releaseIdleTimer(); // the kept timer cleared: withFakes sees none pending
    }
  });
});

Deno.test("deadline timer: a hold released while an unheld deadline waits leaves its timer", async () => {
  await withFakes((f) => {
    let fired = 0;
    deadlineTimer(100, () => fired++); // not held: a fresh, referenced timer
    const timer = f.only();
    holdIdleTimer(); // a generator opened and closed meanwhile
    releaseIdleTimer();
    assert.ok(!timer.cleared, "the release cleared a timer a live deadline needs");
    f.fire(timer);
    assert.equal(fired, 1);
  });
});

Deno.test("deadline timer: a fire that throws is reported; the other deadlines still fire", async () => {
  const reported: unknown[] = [];
  const onError = (e: ErrorEvent) => {
    e.preventDefault();
    reported.push(e.error);
  };
  globalThis.addEventListener("error", onError);
  try {
    await withFakes(async (f) => {
      const fired: string[] = [];
      deadlineTimer(100, () => {
        fired.push("a");
        throw new Error("fire failed");
      });
      deadlineTimer(100, () => fired.push("b"));
      f.fire(f.only());
      assert.deepEqual(fired, ["a", "b"]);
      await flush();
    });
  } finally {
    globalThis.removeEventListener("error", onError);
  }
  assert.equal(reported.length, 1, "the error was not reported");
  assert.match(String(reported[0]), /fire failed/);
});

/** A promise and its settling functions. */
function deferred<T>() {
  let resolve!: (value: T) => void;
  let reject!: (reason: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** What `p` came to once the microtasks ran: "pending", or its outcome. */
async function stateOf<T>(p: Promise<T>): Promise<string> {
  let state = "pending";
  p.then((v) => state = `fulfilled ${v}`, (e) => state = `rejected ${(e as Error).message}`);
  await flush();
  return state;
}

Deno.test("withDeadline: in time, the result or the failure of the work, the timer cleared", async () => {
  await withFakes(async (f) => {
    const ok = deferred<number>();
    const served = withDeadline(ok.promise, 100, () => new Error("late"));
    const timer = f.only();
    ok.resolve(7);
    assert.equal(await stateOf(served), "fulfilled 7");
    assert.ok(timer.cleared, "cancelled once served");

    const failing = deferred<number>();
    const failed = withDeadline(failing.promise, 100, () => new Error("late"));
    failing.reject(new Error("refused"));
    assert.equal(await stateOf(failed), "rejected refused");
  });
});

Deno.test("withDeadline: past the deadline, onTimeout's error; the late outcome to onLate", async () => {
  await withFakes(async (f) => {
    const outcomes: PromiseSettledResult<number>[] = [];
    const slow = deferred<number>();
    const timedOut = withDeadline(slow.promise, 100, () => new Error("too slow"), (o) => {
      outcomes.push(o);
    });
    f.fire(f.only());
    assert.equal(await stateOf(timedOut), "rejected too slow");
    slow.resolve(8);
    await flush();
    assert.deepEqual(outcomes, [{ status: "fulfilled", value: 8 }]);

    const failing = deferred<number>();
    const failedLate = withDeadline(failing.promise, 100, () => new Error("too slow"), (o) => {
      outcomes.push(o);
    });
    f.fire(f.only());
    assert.equal(await stateOf(failedLate), "rejected too slow");
    const reason = new Error("refused");
    failing.reject(reason);
    await flush();
    assert.deepEqual(outcomes.slice(1), [{ status: "rejected", reason }]);
  });
});
