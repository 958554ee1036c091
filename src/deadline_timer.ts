/**
 * A deadline timer that does not blame the store for a blocked event loop.
 *
 * @module
 */

/**
 * How late a timer may fire and still count as on time, in ms. Later than this, the event loop
 * was busy with something else (the application's synchronous work, a long GC pause) when the
 * timer was due; under load on 2 shared cores timers were seen firing up to ~20 ms late.
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
  const due = performance.now() + ms;
  let timer = setTimeout(() => {
    const late = performance.now() - due;
    if (late <= LOOP_LAG_MS) return fire();
    timer = setTimeout(fire, Math.min(late, ms));
  }, ms);
  return () => clearTimeout(timer);
}
