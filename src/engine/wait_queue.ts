/**
 * The calls waiting for IDs: served in order as reservations land, each rejected at its own
 * deadline.
 *
 * @module
 */

import { deadlineTimer } from "../runtime/deadline_timer.ts";

/** One waiting call. */
interface Waiter<T> {
  need: number;
  got: number;
  /** The IDs of a batch; undefined for a single `next()`. */
  ids: T[] | undefined;
  deadline: number;
  resolve(value: T | T[]): void;
  reject(err: unknown): void;
}

/** The owner's method taking one buffered ID (see {@linkcode WaitQueueOwner}). */
export const TAKE: unique symbol = Symbol("kvid.take");
/** The owner's method copying buffered IDs into a batch (see {@linkcode WaitQueueOwner}). */
export const FILL: unique symbol = Symbol("kvid.fill");
/** The owner's method making the error of a call past its deadline. */
export const TIMED_OUT: unique symbol = Symbol("kvid.timedOut");
/** The owner's method told of calls that expired (see {@linkcode WaitQueueOwner}). */
export const EXPIRED: unique symbol = Symbol("kvid.expired");
/** The key of {@linkcode Demand}'s count. */
export const DEMAND: unique symbol = Symbol("kvid.demand");

/**
 * What the waiting calls still need, in IDs: the generator's view for its reservations (a
 * generator holds a queue only while calls wait).
 *
 * @example
 * ```ts
 * import { DEMAND, type Demand } from "./wait_queue.ts";
 *
 * const none: Demand = { [DEMAND]: 0 };
 * console.log(none[DEMAND]);
 * ```
 */
export interface Demand {
  /** IDs the waiting calls still need. */
  readonly [DEMAND]: number;
}

/**
 * How a {@linkcode WaitQueue} reaches its generator's buffer and reports expiries: methods of the
 * generator under symbols, so the queue holds one reference and no closures (an idle generator
 * is measured in bytes: tests/faults/resources_test.ts).
 */
export interface WaitQueueOwner<T> {
  /** Take one buffered ID, switching segments if needed; undefined when none is buffered. */
  [TAKE](): T | undefined;
  /** Copy buffered IDs into `ids` from index `from`, up to `count`; returns the new count. */
  [FILL](ids: T[], from: number, count: number): number;
  /** The error a call past its deadline rejects with. */
  [TIMED_OUT](): unknown;
  /** Calls expired at `now` and were rejected: the store may be known down. */
  [EXPIRED](now: number): void;
}

/**
 * A FIFO of waiting calls, with one deadline timer for the first (see `deadlineTimer`: a blocked
 * event loop is not counted against the store). A call for IDs queues only when none is buffered
 * for it; while any call waits, later ones queue behind it, so IDs are handed out in call order.
 *
 * @example
 * ```ts
 * import { EXPIRED, FILL, TAKE, TIMED_OUT, WaitQueue, type WaitQueueOwner } from "./wait_queue.ts";
 * import assert from "node:assert/strict";
 *
 * let next = 1;
 * let buffered = 0;
 * const owner: WaitQueueOwner<number> = {
 *   [TAKE]: () => buffered > 0 ? (buffered--, next++) : undefined,
 *   [FILL]: (ids, from, count) => {
 *     while (from < count && buffered > 0) ids[from++] = (buffered--, next++);
 *     return from;
 *   },
 *   [TIMED_OUT]: () => new Error("timeout"),
 *   [EXPIRED]: () => {},
 * };
 * const queue = new WaitQueue<number>(1_000, owner);
 * const id = queue.push(1, undefined, 0, performance.now());
 * assert.ok(queue.demand === 1);
 * buffered = 5;
 * queue.serve();
 * assert.ok(await id === 1 && queue.empty);
 * ```
 */
export class WaitQueue<T> {
  /** IDs the waiting calls still need. */
  demand = 0;
  #waiters: Waiter<T>[] = [];
  #head = 0;
  // Cancels the timer of the first queued call's deadline.
  #deadlineTimer: (() => void) | undefined;
  readonly #timeout: number;
  readonly #owner: WaitQueueOwner<T>;

  /**
   * @param timeout How long a call waits, ms.
   * @param owner The generator: its buffer and what an expiry tells it.
   */
  constructor(timeout: number, owner: WaitQueueOwner<T>) {
    this.#timeout = timeout;
    this.#owner = owner;
  }

  /** No call is waiting. */
  get empty(): boolean {
    return this.#waiters.length === this.#head;
  }

  /** Queue a call, at `now`, for `need` IDs (of which `got` are already in `ids`). */
  push(need: number, ids: T[] | undefined, got: number, now: number): Promise<T | T[]> {
    return new Promise((resolve, reject) => {
      this.#waiters.push({ need, got, ids, deadline: now + this.#timeout, resolve, reject });
      this.demand += need - got;
      this.#deadlineTimer ??= deadlineTimer(this.#timeout, () => this.#expire());
    });
  }

  /** Serve queued calls, in order, from the buffer. */
  serve(): void {
    const waiters = this.#waiters;
    const owner = this.#owner;
    while (this.#head < waiters.length) {
      const w = waiters[this.#head];
      const before = w.got;
      if (w.ids === undefined) {
        const id = owner[TAKE]();
        if (id === undefined) break;
        w.got = 1;
        this.demand -= 1;
        this.#head++;
        w.resolve(id);
        continue;
      }
      w.got = owner[FILL](w.ids, w.got, w.need);
      this.demand -= w.got - before;
      if (w.got < w.need) break;
      this.#head++;
      w.resolve(w.ids);
    }
    this.#compact();
  }

  /** Reject every queued call with `error()`. */
  rejectAll(error: () => unknown): void {
    const waiters = this.#waiters;
    while (this.#head < waiters.length) waiters[this.#head++].reject(error());
    this.demand = 0;
    this.#compact();
  }

  /** Reject every queued call whose deadline passed; re-arm the timer for the next. */
  #expire(): void {
    this.#deadlineTimer = undefined;
    const now = performance.now();
    const waiters = this.#waiters;
    let expired = 0;
    while (this.#head < waiters.length && waiters[this.#head].deadline <= now) {
      const w = waiters[this.#head++];
      this.demand -= w.need - w.got;
      w.reject(this.#owner[TIMED_OUT]());
      expired++;
    }
    this.#compact();
    if (expired > 0) this.#owner[EXPIRED](now);
    // The queue as it is now: compact() may have replaced the array (its head back at 0), and the
    // owner may have rejected every call. Re-armed from the captured array, an emptied queue
    // armed a 1 ms timer for a call already rejected (a timer left behind by close()).
    if (this.#head < this.#waiters.length && this.#deadlineTimer === undefined) {
      const wait = Math.max(1, this.#waiters[this.#head].deadline - now);
      this.#deadlineTimer = deadlineTimer(wait, () => this.#expire());
    }
  }

  #compact(): void {
    if (this.#head === this.#waiters.length) {
      this.#waiters = [];
      this.#head = 0;
      this.#deadlineTimer?.();
      this.#deadlineTimer = undefined;
    } else if (this.#head > 1024 && this.#head * 2 > this.#waiters.length) {
      this.#waiters = this.#waiters.slice(this.#head);
      this.#head = 0;
    }
  }
}
