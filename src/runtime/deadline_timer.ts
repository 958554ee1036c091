/**
 * A deadline timer that does not blame the store for a blocked event loop.
 *
 * @module
 */

/**
 * How late a timer may fire and still count as on time, in ms. Later than this, the event loop
 * was busy with something else (the application's synchronous work, a long GC pause) when the
 * timer was due; under load on shared cores timers fire late, though well within this bound.
 */
export const LOOP_LAG_MS = 50;

/**
 * Call `fire` after `ms`, like `setTimeout`, except when the timer fires more than
 * {@linkcode LOOP_LAG_MS} after it was due: the event loop was blocked, so a reply the store
 * sent meanwhile may be waiting, unread, in the socket (or the command itself may not have been
 * written yet). Then the deadline is given once more as much time as the timer was late (at
 * most `ms` again), from now, before `fire` runs. A healthy server's reply is read in that time
 * and serves the call; a server that really does not answer still fails, later by at most `ms`.
 *
 * @example
 * ```ts
 * import { deadlineTimer } from "./deadline_timer.ts";
 * import assert from "node:assert/strict";
 *
 * let fired = false;
 * const cancel = deadlineTimer(10, () => fired = true);
 * cancel(); // a reply came first
 * assert.ok(!fired);
 * ```
 *
 * @param ms The deadline, in ms from now.
 * @param fire What a deadline that passed does (reject the call, mark the store down).
 * @returns A function cancelling the timer (both its first and its second wait).
 */
export function deadlineTimer(ms: number, fire: () => void): () => void {
  const entry: Deadline = { due: performance.now() + ms, ms, fire, live: true, extended: false };
  push(entry);
  live++;
  arm();
  return () => {
    if (!entry.live) return;
    entry.live = false;
    if (--live === 0) {
      queue.length = 0;
      // Nothing left to wait for. While a generator is open the timer is kept, unreferenced
      // (it holds no process open), for the next deadline (see holdIdleTimer); otherwise no
      // timer outlives its deadlines (test sanitizers, exit).
      if (holders > 0 && canUnref(timer)) {
        timer.unref();
        idle = true;
      } else disarm();
    }
  };
}

/**
 * All deadlines share one `setTimeout`, armed for the earliest. A `setTimeout` and its
 * `clearTimeout` are costly beside the engine's own work, and a generator's first ID set two of
 * them (the call's deadline, the reservation's): most of its cost over the round trip.
 * Deadlines of one `timeout` come in increasing order, so adding one seldom re-arms the timer.
 */
interface Deadline {
  due: number;
  readonly ms: number;
  readonly fire: () => void;
  live: boolean;
  /** Given its second wait already (the loop was blocked at the first). */
  extended: boolean;
}

// A binary min-heap on `due`; cancelled entries stay until they reach the top.
const queue: Deadline[] = [];
let live = 0;
let timer: ReturnType<typeof setTimeout> | undefined;
let armedFor = Infinity;
// The timer is armed for deadlines all cancelled since, unreferenced (see holdIdleTimer).
let idle = false;
// Open generators (holdIdleTimer): while any, an idle timer is kept instead of cleared.
let holders = 0;

/** A timer the runtime can stop counting as pending work (Deno 2.9, Node, Bun; not browsers). */
function canUnref(
  t: ReturnType<typeof setTimeout> | undefined,
): t is ReturnType<typeof setTimeout> & { unref(): void; ref(): void } {
  return typeof t === "object" && t !== null &&
    typeof (t as { unref?: unknown }).unref === "function" &&
    typeof (t as { ref?: unknown }).ref === "function";
}

/**
 * Keep the shared timer between deadlines while the caller (an open generator) may set more:
 * a new name's first ID otherwise made a `setTimeout` and a `clearTimeout`, a large share of the
 * client's time for it with a client answering at once; re-referencing the kept timer costs a
 * fraction of that. Each call is paired with one {@linkcode releaseIdleTimer}.
 *
 * @example
 * ```ts
 * import { holdIdleTimer, releaseIdleTimer, withDeadline } from "./deadline_timer.ts";
 * import assert from "node:assert/strict";
 *
 * holdIdleTimer(); // a generator opened
 * assert.ok(await withDeadline(Promise.resolve(1), 1_000, () => new Error("late")) === 1);
 * assert.ok(await withDeadline(Promise.resolve(2), 1_000, () => new Error("late")) === 2);
 * releaseIdleTimer(); // closed: no timer is left
 * ```
 */
export function holdIdleTimer(): void {
  holders++;
}

/** The pair of {@linkcode holdIdleTimer}: the last release clears a kept timer. */
export function releaseIdleTimer(): void {
  if (holders > 0) holders--;
  if (holders === 0 && idle) disarm();
}

function push(entry: Deadline): void {
  let i = queue.push(entry) - 1;
  while (i > 0) {
    const parent = (i - 1) >> 1;
    if (queue[parent].due <= entry.due) break;
    queue[i] = queue[parent];
    i = parent;
  }
  queue[i] = entry;
}

function pop(): Deadline | undefined {
  const top = queue[0];
  const last = queue.pop();
  if (queue.length > 0 && last !== undefined) {
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= queue.length) break;
      const r = l + 1;
      const c = r < queue.length && queue[r].due < queue[l].due ? r : l;
      if (queue[c].due >= last.due) break;
      queue[i] = queue[c];
      i = c;
    }
    queue[i] = last;
  }
  return top;
}

function disarm(): void {
  if (timer !== undefined) clearTimeout(timer);
  timer = undefined;
  armedFor = Infinity;
  idle = false;
}

/** Arm the shared timer for the earliest live deadline, unless it is armed for one as early. */
function arm(): void {
  while (queue.length > 0 && !queue[0].live) pop();
  const next = queue[0];
  if (next === undefined) return disarm();
  if (timer !== undefined && armedFor <= next.due) {
    if (idle && canUnref(timer)) timer.ref();
    idle = false;
    return;
  }
  disarm();
  armedFor = next.due;
  timer = setTimeout(run, Math.max(0, next.due - performance.now()));
}

function run(): void {
  timer = undefined;
  armedFor = Infinity;
  idle = false;
  const now = performance.now();
  const due: Deadline[] = [];
  while (queue.length > 0 && (queue[0].due <= now || !queue[0].live)) {
    const entry = pop()!;
    if (!entry.live) continue;
    const late = now - entry.due;
    if (!entry.extended && late > LOOP_LAG_MS) {
      // The loop was blocked: one more wait, as long as it was late (at most `ms`), from now.
      entry.extended = true;
      entry.due = now + Math.min(late, entry.ms);
      due.push(entry); // re-queued below, not popped again in this turn
      continue;
    }
    entry.live = false;
    live--;
    try {
      entry.fire();
    } catch (err) {
      // As a setTimeout callback's error would: reported, the other deadlines still run.
      queueMicrotask(() => {
        throw err;
      });
    }
  }
  for (const entry of due) push(entry);
  if (live === 0) queue.length = 0;
  arm();
}

/**
 * `work`, or a rejection with `onTimeout()` when `ms` pass first (measured by
 * {@linkcode deadlineTimer}, so a blocked event loop is not blamed on the store); the timer is
 * cancelled either way. A result of `work` that comes late is dropped: the caller says, through
 * `onLate`, what a late result or failure must still do (a late reservation's range is spent).
 *
 * @example
 * ```ts
 * import { withDeadline } from "./deadline_timer.ts";
 * import assert from "node:assert/strict";
 *
 * const quick = await withDeadline(Promise.resolve(7), 1_000, () => new Error("too slow"));
 * assert.ok(quick === 7);
 * const never = new Promise<number>(() => {});
 * await assert.rejects(withDeadline(never, 5, () => new Error("too slow")), /too slow/);
 * ```
 *
 * @param work What to wait for.
 * @param ms The deadline, in ms from now.
 * @param onTimeout The error to reject with when the deadline passes first.
 * @param onLate Called with `work`'s outcome when it settles after the deadline.
 * @returns `work`'s result, when it came in time.
 * @throws What `work` threw, or `onTimeout()`'s error.
 */
export function withDeadline<T>(
  work: Promise<T>,
  ms: number,
  onTimeout: () => unknown,
  onLate?: (outcome: PromiseSettledResult<T>) => void,
): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let late = false;
    const cancel = deadlineTimer(ms, () => {
      late = true;
      reject(onTimeout());
    });
    work.then((value) => {
      if (late) onLate?.({ status: "fulfilled", value });
      else {
        cancel();
        resolve(value);
      }
    }, (reason) => {
      if (late) onLate?.({ status: "rejected", reason });
      else {
        cancel();
        reject(reason);
      }
    });
  });
}
