/**
 * {@linkcode KvId}: the segment-mode generator. This file is its hot path (`next()`,
 * `nextBatch()`, served from the segment buffer), its waiting calls and the single flight of
 * its reservations; the parts that stand alone are files of their own: the options checked and
 * defaulted (`settings.ts`, `defaults.ts`), one reservation (`reservation.ts`, with the
 * durability gate, the remembered step, the `floor` option and the prefetch lead beside it), the
 * outage state (`outage.ts`), the waiting calls (`wait_queue.ts`), what close() gives back
 * (`give_back.ts`), the segment buffer and the step rule.
 *
 * @module
 */

import { KvIdError, reasonOf } from "../contract/errors.ts";
import type { ExpiryDetail, KvIdOptions, KvIdStats, RollbackDetail } from "./kvid_options.ts";
import { checkInteger } from "../contract/validate.ts";
import { holdIdleTimer, releaseIdleTimer } from "../runtime/deadline_timer.ts";
import { type Tracked, trackGenerator, untrackGenerator } from "../runtime/shutdown.ts";
import { SegmentBuffer } from "./segment_buffer.ts";
import { Outage } from "./outage.ts";
import { Reserver } from "./reservation.ts";
import { DurabilityGate } from "./durability_gate.ts";
import { type KvIdSettings, resolveOptions } from "./settings.ts";
import {
  DEMAND,
  type Demand,
  EXPIRED,
  FILL,
  TAKE,
  TIMED_OUT,
  WaitQueue,
  type WaitQueueOwner,
} from "./wait_queue.ts";

/**
 * A segment-mode ID generator for one counter (a field of a Redis hash). Construct it at module
 * scope: it does no I/O until the first ID is asked for.
 *
 * Events: `"rollback"` (a `CustomEvent<RollbackDetail>`) when a reservation found the counter
 * below IDs this generator already reserved; `"expiry"` (a `CustomEvent<ExpiryDetail>`) when
 * one found a TTL on the hash and removed it.
 *
 * @example Order IDs
 * ```ts ignore
 * import { KvId } from "@kvid/core";
 * import { connect } from "jsr:@db/redis";
 *
 * const redis = await connect({ hostname: "127.0.0.1", port: 6379 });
 * export const ORDER_ID = new KvId("order", { redis });
 * const id: number = await ORDER_ID.next();
 * const ids: number[] = await ORDER_ID.nextBatch(1000);
 * console.log(id, ids.length, ORDER_ID.stats().step);
 * await ORDER_ID.close();
 * redis.close();
 * ```
 *
 * @typeParam T `number` by default, `bigint` with `{ bigint: true }`.
 */
export interface KvId<T extends number | bigint = number> extends EventTarget {
  /** The counter's field. */
  readonly name: string;
  /** The counter's hash. */
  readonly key: string;
  /**
   * The next ID. Resolves without I/O while IDs are buffered; otherwise waits for a
   * reservation, at most `timeout` ms, then rejects with a {@linkcode KvIdError}.
   *
   * @throws {KvIdError} (the promise rejects) `"timeout"` when no ID could be reserved within
   *   `timeout`; `"unavailable"` at once while the store is known down (`failFast`); `"closed"`
   *   after {@linkcode KvId.close}; a refusal (`"config"`, `"unsafe"`, `"rollback"`, ...) at once,
   *   as the store's verdict (`KvIdError.code`).
   */
  next(): Promise<T>;
  /**
   * `count` IDs, increasing, with one await and few round trips.
   *
   * @throws {TypeError} (the promise rejects) `count` is not a number.
   * @throws {RangeError} `count` is not an integer from 0 to 10,000,000.
   * @throws {KvIdError} As {@linkcode KvId.next}.
   */
  nextBatch(count: number): Promise<T[]>;
  /** A snapshot of the generator's state: plain data, JSON-safe. */
  stats(): KvIdStats;
  /** The highest ID reserved so far, exactly (0n before the first); `stats().high` as a bigint. */
  readonly high: bigint;
  /**
   * Stop: pending and later calls reject with a `"closed"` {@linkcode KvIdError}; waits for an
   * in-flight reservation, then gives back the unused IDs where it can (`giveBack`), all in at
   * most `timeout` ms. The Redis client is the caller's to close. Never rejects: IDs not given
   * back in time are a gap, as without `giveBack`.
   */
  close(): Promise<void>;
  /** Same as {@linkcode KvId.close}, for `await using`. */
  [Symbol.asyncDispose](): Promise<void>;
  /**
   * Listen for `"rollback"`, with `event.detail` typed ({@linkcode RollbackDetail}); other event
   * types as on any `EventTarget`.
   */
  addEventListener(
    type: "rollback",
    listener: ((event: CustomEvent<RollbackDetail>) => void) | null,
    options?: boolean | AddEventListenerOptions,
  ): void;
  /**
   * Listen for `"expiry"`: a reservation found a TTL on the hash and removed it
   * ({@linkcode ExpiryDetail}).
   */
  addEventListener(
    type: "expiry",
    listener: ((event: CustomEvent<ExpiryDetail>) => void) | null,
    options?: boolean | AddEventListenerOptions,
  ): void;
  /** Listen for an event, as on any `EventTarget`. */
  addEventListener(
    type: string,
    listener: EventListenerOrEventListenerObject | null,
    options?: boolean | AddEventListenerOptions,
  ): void;
}

/**
 * The constructor of {@linkcode KvId}.
 *
 * @example The `bigint` option picks the type of the IDs
 * ```ts
 * import { KvId } from "@kvid/core";
 * import assert from "node:assert/strict";
 *
 * const ORDER_ID: KvId<number> = new KvId("order"); // exact up to 2^53-1
 * const EVENT_ID: KvId<bigint> = new KvId("event", { bigint: true }); // exact up to 2^63-1
 * assert.ok(ORDER_ID.name === "order" && EVENT_ID.name === "event");
 * ```
 */
export interface KvIdConstructor {
  /**
   * A generator of `bigint` IDs.
   *
   * @param name The counter: a field of the hash, non-empty, at most 4,096 UTF-8 bytes.
   * @param options See {@linkcode KvIdOptions}.
   * @throws {TypeError} An unknown option, or a name or option of the wrong type, named.
   * @throws {RangeError} A number out of its range (`minStep` above `maxStep`, ...), named.
   */
  new (name: string, options: KvIdOptions & { bigint: true }): KvId<bigint>;
  /**
   * A generator of `number` IDs.
   *
   * @param name The counter: a field of the hash, non-empty, at most 4,096 UTF-8 bytes.
   * @param options See {@linkcode KvIdOptions}.
   * @throws {TypeError} An unknown option, or a name or option of the wrong type, named.
   * @throws {RangeError} A number out of its range (`minStep` above `maxStep`, ...), named.
   */
  new (name: string, options?: KvIdOptions & { bigint?: false }): KvId<number>;
  /**
   * A generator whose ID type is known only at run time (options typed `KvIdOptions`).
   *
   * @param name The counter: a field of the hash, non-empty, at most 4,096 UTF-8 bytes.
   * @param options See {@linkcode KvIdOptions}.
   * @throws {TypeError} An unknown option, or a name or option of the wrong type, named.
   * @throws {RangeError} A number out of its range (`minStep` above `maxStep`, ...), named.
   */
  new (name: string, options?: KvIdOptions): KvId<number | bigint>;
  /** The prototype. */
  readonly prototype: KvId<number | bigint>;
}

const MAX_BATCH = 10_000_000;

/**
 * Internal (the ID service's, not part of the package's surface): `gen[NUMBERS_WHILE_SAFE]()`
 * makes a `bigint` generator's `nextBatch()` put numbers for the IDs up to
 * `Number.MAX_SAFE_INTEGER` and bigints above, exact either way. The service formats IDs as
 * text, and a bigint costs more than a number to make and to print.
 */
export const NUMBERS_WHILE_SAFE: unique symbol = Symbol("kvid.numbersWhileSafe");

/**
 * Internal (the ID service's, not part of the package's surface): `gen[TAKE_RUN](count)` hands
 * out `count` IDs at once when the current segment holds them as exact numbers and no call
 * waits, and returns the first (the rest follow it, consecutive), else -1 (then nextBatch()).
 * The service answers such a request without a promise and prints a run, not an array.
 */
export const TAKE_RUN: unique symbol = Symbol("kvid.takeRun");

// The classes with each mode's next(), set in KvIdImpl's static block (which can reach its
// private names) and chosen by KvId at the end.
let NumberKvId: new (name: string, options?: KvIdOptions) => KvIdImpl<number>;
let BigIntKvId: new (name: string, options?: KvIdOptions) => KvIdImpl<bigint>;

class KvIdImpl<T extends number | bigint> extends EventTarget
  implements KvId<T>, WaitQueueOwner<T>, Demand {
  readonly name: string;
  readonly key: string;
  readonly #bigint: boolean;
  // bigint mode, set by NUMBERS_WHILE_SAFE: nextBatch() fills numbers while they are exact.
  #numbersWhileSafe = false;
  // Set here, to a buffer, and again in the constructor: a field first set to undefined would
  // make V8 check what it holds on every next().
  readonly #buf: SegmentBuffer = new SegmentBuffer({ prefetchAt: 0, safeOnly: true });
  readonly #timeout: number;
  // Only while calls wait: made by the first, dropped when none is left.
  #queue: WaitQueue<T> | undefined;
  // Shared by generators made with equal options (see resolveOptions).
  readonly #s: KvIdSettings;
  // Made on the first failure and the first reservation: an idle generator (10,000 names in a
  // multi-tenant service) holds neither (1,505 -> ~1,000 B each, tests/support/idle_heap.ts).
  #outage: Outage | undefined;
  #reserver: Reserver | undefined;
  #backoffTimer: ReturnType<typeof setTimeout> | undefined;
  #inflight: Promise<void> | undefined;
  #prefetchTimer: ReturnType<typeof setTimeout> | undefined;
  #closed = false;
  #closing: Promise<void> | undefined;
  #stalls = 0;
  // Its entry in shutdown()'s registry.
  readonly #tracked: Tracked;

  // The listener types of the KvId interface: the "rollback" listener gets a CustomEvent.
  override addEventListener(
    type: string,
    listener:
      | EventListenerOrEventListenerObject
      | ((event: CustomEvent<RollbackDetail>) => void)
      | ((event: CustomEvent<ExpiryDetail>) => void)
      | null,
    options?: boolean | AddEventListenerOptions,
  ): void {
    super.addEventListener(type, listener as EventListenerOrEventListenerObject | null, options);
  }

  constructor(name: string, options: KvIdOptions = {}) {
    super();
    const s = resolveOptions(name, options);
    this.name = name;
    this.key = s.key;
    this.#bigint = s.bigint;
    this.#buf = new SegmentBuffer({ prefetchAt: s.prefetchAt, safeOnly: !s.bigint });
    this.#timeout = s.timeout;
    this.#s = s;
    this.#tracked = trackGenerator(this);
  }

  // The hot path is next() of NumberKvId and BigIntKvId below, one class per mode; this one
  // serves subclasses of KvId (see KvId at the end). No I/O, no lock, no allocation but the
  // promise (and the bigint); one comparison before the prefetch mark. Why it is shaped so
  // (bench/hot_path_bench.ts measures it against a bare await; figures in bench/RESULTS.md):
  // - next() is an async function without `await`. Once an `await` in it had run (a stall),
  //   V8 kept its resumable frame on every call, fast path included.
  // - V8 elides the promise of an inlined async function with one path (a bare counter), not
  //   once it has a second (here: switch segments or wait): that promise is the floor of any
  //   awaited source that can run dry.
  // - A function that may return a bigint slows number mode, even on a path that is not
  //   taken: hence a class per mode.
  // - A private method call on the fast path slows it too; the fields read here must hold
  //   small integers from the start (SegmentBuffer, #buf).
  // deno-lint-ignore require-await
  async next(): Promise<T> {
    const b = this.#buf;
    return (b.used < b.prefetchFrom ? undefined : this.#pastMark()) ?? this.#idAt(b.used++);
  }

  static {
    NumberKvId = class KvId extends KvIdImpl<number> {
      // deno-lint-ignore require-await
      override async next(): Promise<number> {
        const b = this.#buf;
        if (b.used < b.prefetchFrom) return b.firstNumber + b.used++;
        return this.#pastMark() ?? b.firstNumber + b.used++;
      }
    };
    BigIntKvId = class KvId extends KvIdImpl<bigint> {
      // asIntN(64) is exact for every ID (at most 2^63 - 1) and lets V8 add in int64 registers,
      // allocating only the result: half the cost of `b.first + BigInt(i)` on its own.
      // deno-lint-ignore require-await
      override async next(): Promise<bigint> {
        const b = this.#buf;
        if (b.used < b.prefetchFrom) return BigInt.asIntN(64, b.first + BigInt(b.used++));
        return this.#pastMark() ?? BigInt.asIntN(64, b.first + BigInt(b.used++));
      }
    };
  }

  /**
   * next() at or past the prefetch mark: switch to the segment ahead and start the prefetch if
   * due. A promise when nothing is buffered (next() returns it); undefined when the current
   * segment has an ID for the caller to take.
   */
  #pastMark(): Promise<T> | undefined {
    const b = this.#buf;
    // Used up: switch to the segment reserved ahead, or wait (no waiter queues while one is).
    if (b.used >= b.size && !b.advance()) return this.#wait(1, undefined) as Promise<T>;
    if (b.used >= b.prefetchFrom) this.#prefetchSoon();
    return undefined;
  }

  /** ID `i` of the current segment, in this generator's mode. */
  #idAt(i: number): T {
    const b = this.#buf;
    return (this.#bigint === true
      ? BigInt.asIntN(64, b.first + BigInt(i))
      : b.firstNumber + i) as T;
  }

  async nextBatch(count: number): Promise<T[]> {
    checkInteger("KvId", "nextBatch(count)", count, 0, MAX_BATCH);
    const ids: T[] = new Array(count);
    let got = 0;
    if (this.#queue === undefined || this.#queue.empty) got = this.#fill(ids, 0, count);
    if (got === count) {
      if (this.#buf.wantsNext) this.#prefetchSoon();
      return ids;
    }
    return await this.#wait(count, ids, got) as T[];
  }

  stats(): KvIdStats {
    const r = this.#reserver;
    const last = this.#outage?.lastError;
    return {
      name: this.name,
      key: this.key,
      step: r === undefined ? this.#s.initialStep : r.sizer.step,
      remaining: this.#buf.remaining,
      segments: r?.segments ?? 0,
      failures: this.#outage?.failures ?? 0,
      stalls: this.#stalls,
      lastFetchMs: r?.lastFetchMs,
      high: String(this.#buf.high),
      rollbacks: r?.rollbacks ?? 0,
      durability: r === undefined
        ? new DurabilityGate(this.#s, this.name).report()
        : r.durabilityReport(),
      ttlRemovals: r?.ttlRemovals ?? 0,
      reserving: this.#inflight !== undefined || this.#prefetchTimer !== undefined,
      lastError: last === undefined ? undefined : { code: last.code, message: last.message },
    };
  }

  get high(): bigint {
    return this.#buf.high;
  }

  /** See NUMBERS_WHILE_SAFE. */
  [NUMBERS_WHILE_SAFE](): void {
    this.#numbersWhileSafe = this.#bigint;
  }

  /** See TAKE_RUN: what nextBatch(count) would take, when it can without waiting. */
  [TAKE_RUN](count: number): number {
    const b = this.#buf;
    const first = b.firstNumber + b.used;
    // As in #fill: a sum past the safe range rounds to 2^53 or more (`first + count - 1` could
    // round 2^53 + 1 back down to the last safe integer).
    if (
      b.size - b.used < count || first + (count - 1) > Number.MAX_SAFE_INTEGER ||
      (this.#queue !== undefined && !this.#queue.empty)
    ) return -1;
    b.used += count;
    if (b.wantsNext) this.#prefetchSoon();
    return first;
  }

  async close(): Promise<void> {
    if (!this.#closed) {
      this.#closed = true;
      if (this.#reserver !== undefined) {
        this.#reserver.close();
        releaseIdleTimer();
      }
      untrackGenerator(this.#tracked);
      const tail = this.#buf.unusedTail();
      const unused = this.#buf.unusedRanges();
      // Drop what is buffered so the hot path falls through to the closed check.
      this.#buf.clear();
      this.#rejectAll(() => this.#closedError());
      clearTimeout(this.#backoffTimer);
      this.#backoffTimer = undefined;
      clearTimeout(this.#prefetchTimer);
      this.#prefetchTimer = undefined;
      this.#closing = this.#finishClose(tail, unused, performance.now() + this.#timeout);
    }
    await this.#closing;
  }

  /**
   * All of close() is bounded by one `timeout` from its call (`deadline`): what the reservation
   * in flight took is not given again to the give-back.
   */
  async #finishClose(
    tail: ReturnType<SegmentBuffer["unusedTail"]>,
    unused: ReturnType<SegmentBuffer["unusedRanges"]>,
    deadline: number,
  ): Promise<void> {
    await this.#inflight;
    // No reservation made: nothing reserved to give back, no step to remember.
    const reserver = this.#reserver;
    if (reserver === undefined) return;
    const left = deadline - performance.now();
    if (left > 0) await reserver.giveBack(tail, unused, left);
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  /** Copy up to `count - from` buffered IDs into `ids` from index `from`; returns the new count. */
  #fill(ids: T[], from: number, count: number): number {
    const b = this.#buf;
    while (from < count) {
      if (b.used >= b.size && !b.advance()) break;
      const n = Math.min(count - from, b.size - b.used);
      const start = b.used;
      b.used += n;
      // firstNumber is exact while first is safe, and a sum past the safe range rounds to
      // 2^53 or more, so this test is exact too.
      if (
        this.#bigint &&
        !(this.#numbersWhileSafe && b.firstNumber + (start + n - 1) <= Number.MAX_SAFE_INTEGER)
      ) {
        for (let i = 0; i < n; i++) {
          ids[from + i] = BigInt.asIntN(64, b.first + BigInt(start + i)) as T;
        }
      } else {
        const base = b.firstNumber + start;
        for (let i = 0; i < n; i++) ids[from + i] = (base + i) as T;
      }
      from += n;
    }
    return from;
  }

  /** Take one buffered ID, switching segments if needed. */
  #takeOne(): T | undefined {
    const b = this.#buf;
    if (b.used >= b.size && !b.advance()) return undefined;
    return this.#idAt(b.used++);
  }

  // The wait queue's view of the generator (see WaitQueueOwner): no closures per generator.
  /** Take one buffered ID (the wait queue serves calls with it). */
  [TAKE](): T | undefined {
    return this.#takeOne();
  }

  /** Copy buffered IDs into a waiting batch. */
  [FILL](ids: T[], from: number, count: number): number {
    return this.#fill(ids, from, count);
  }

  /** The error of a call past its deadline. */
  [TIMED_OUT](): KvIdError {
    return this.#timeoutError();
  }

  /** A call waited its whole timeout while reservations failed: the store is known down. */
  [EXPIRED](now: number): void {
    if (this.#outage?.lastError !== undefined) this.#markDown(now);
  }

  /** Queue a call for `need` IDs (of which `got` are already in `ids`) until served. */
  #wait(need: number, ids: T[] | undefined, got = 0): Promise<T | T[]> {
    // Callers come here with nothing buffered for them (next() already tried the segment ahead).
    if (this.#closed) return Promise.reject(this.#closedError());
    const now = performance.now();
    const turnedAway = this.#outage?.turnAway(now, this.#probing());
    if (turnedAway !== undefined) return Promise.reject(turnedAway);
    this.#stalls++;
    const queue = this.#queue ??= new WaitQueue<T>(this.#timeout, this);
    const waiting = queue.push(need, ids, got, now);
    this.#pump();
    return waiting;
  }

  /**
   * Start the prefetch from a task of its own, so the call that crosses the mark does not pay
   * for sending the command (the client's encoding and write, and their promise chain). Asked
   * on every next() between the mark and the reservation's landing: the clock is read last.
   */
  #prefetchSoon(): void {
    if (
      this.#prefetchTimer !== undefined || this.#inflight !== undefined ||
      this.#buf.ahead.length > 0 || this.#closed ||
      (this.#outage !== undefined && this.#outage.retryAt !== 0 &&
        performance.now() < this.#outage.retryAt)
    ) return;
    this.#prefetchTimer = setTimeout(() => {
      this.#prefetchTimer = undefined;
      this.#pump();
    }, 0);
  }

  /** Start a reservation if one is wanted and none is in flight (single flight). */
  #pump(): void {
    if (this.#inflight !== undefined || this.#closed) return;
    const outage = this.#outage;
    const waiting = this[DEMAND] > 0 ||
      (outage !== undefined && outage.downSince !== undefined && outage.probeWanted);
    if (!waiting && !this.#buf.wantsNext) return;
    const delay = outage === undefined ? 0 : outage.retryAt - performance.now();
    if (delay > 0) {
      // Backing off after a failure: only queued calls are worth a timer.
      if (waiting && this.#backoffTimer === undefined) {
        this.#backoffTimer = setTimeout(() => {
          this.#backoffTimer = undefined;
          this.#pump();
        }, delay);
      }
      return;
    }
    if (outage !== undefined) outage.probeWanted = false;
    this.#inflight = this.#reserve().finally(() => {
      this.#inflight = undefined;
      // Callers waiting: the next reservation now. Only a prefetch: from a task of its own, so
      // the caller just served resumes first (a new name's first ID would wait for it), and
      // its timer made once that caller has resumed (see afterCallers).
      if (this[DEMAND] > 0 || this.#outage?.probeWanted === true) this.#pump();
      else if (this.#buf.wantsNext) void afterCallers().then(() => this.#prefetchSoon());
    });
  }

  /** One reservation, then what its outcome means for the store's state and the callers. */
  async #reserve(): Promise<void> {
    let reserver = this.#reserver;
    if (reserver === undefined) {
      // Until close(), the shared deadline timer outlives this generator's deadlines, for the
      // next ones of any generator (a new name's first ID makes no setTimeout then).
      holdIdleTimer();
      reserver = this.#reserver = new Reserver(this.name, this.#s, this.#buf, this, this);
    }
    const outcome = await reserver.reserve();
    if (outcome.kind === "late") return;
    if (outcome.kind === "served") {
      this.#outage?.succeeded();
      const queue = this.#queue;
      if (queue !== undefined) {
        queue.serve();
        if (queue.empty) this.#queue = undefined;
      }
      return;
    }
    const s = this.#s;
    const outage = this.#outage ??= new Outage({
      failFast: s.failFast,
      timeout: s.timeout,
      key: s.key,
      field: this.name,
      where: () => this.#where().where ?? "",
    });
    const { error } = outcome;
    const verdict = outage.failed(error, outcome.startedAt, performance.now());
    if (verdict === "refused") this.#rejectAll(() => error);
    else if (verdict === "down") this.#rejectAll(() => outage.downError(performance.now()));
    else if (verdict === "hung") this.#markDown(performance.now());
  }

  /** IDs the waiting calls still need (the reserver's view, see Demand). */
  get [DEMAND](): number {
    return this.#queue === undefined ? 0 : this.#queue.demand;
  }

  /** Reject every waiting call with `error()`'s error; the queue goes. */
  #rejectAll(error: () => unknown): void {
    const queue = this.#queue;
    if (queue === undefined) return;
    this.#queue = undefined;
    queue.rejectAll(error);
  }

  /** A probe is in flight or waiting out its backoff. */
  #probing(): boolean {
    return this.#inflight !== undefined || this.#backoffTimer !== undefined;
  }

  /**
   * The store is known down: with `failFast`, callers are told at once from now on and one
   * probe at a time (in the background) looks for the store's return.
   */
  #markDown(now: number): void {
    const outage = this.#outage;
    if (this.#closed || outage === undefined || !outage.markDown(now)) return;
    this.#rejectAll(() => outage.downError(now));
    this.#pump();
  }

  #closedError(): KvIdError {
    return new KvIdError("closed", "the generator is closed", this.#where());
  }

  #timeoutError(): KvIdError {
    const cause = this.#outage?.lastError;
    // Why, on the first line: the last failure's own words.
    const why = cause === undefined || cause === null ? "" : `: ${reasonOf(cause)}`;
    return new KvIdError("timeout", `no ID could be reserved in ${this.#timeout} ms${why}`, {
      ...this.#where(),
      cause,
    });
  }

  /** The counter, for errors: in its store's words once the store is known. */
  #where(): { key: string; field: string; where?: string } {
    return this.#reserver?.where() ?? { key: this.key, field: this.name };
  }
}

/**
 * Settles after the calls a reservation just served have resumed: a caller's `await next()`
 * resumes a few microtasks after its wait is resolved (the async next() adopting the wait's
 * promise, then the await). What runs after it is off that caller's path: making the prefetch's
 * timer (a `setTimeout`) is a sizeable share of a new name's first ID in the engine.
 */
function afterCallers(): Promise<void> {
  return Promise.resolve().then().then();
}

// `new KvId()`: number or bigint mode's class, each with its own next(). A subclass of KvId
// gets KvIdImpl's next(), which serves both modes.
function KvIdClass(this: unknown, name: string, options?: KvIdOptions): KvIdImpl<number | bigint> {
  if (new.target === undefined) {
    throw new TypeError("Class constructor KvId cannot be invoked without 'new'");
  }
  if (new.target !== KvIdClass) return Reflect.construct(KvIdImpl, [name, options], new.target);
  return options?.bigint === true ? new BigIntKvId(name, options) : new NumberKvId(name, options);
}
KvIdClass.prototype = KvIdImpl.prototype;
Object.defineProperty(KvIdClass, "name", { value: "KvId" });

/**
 * A segment-mode ID generator. See the {@linkcode KvId} interface for its methods and
 * {@linkcode KvIdOptions} for its options. `new KvId()` throws a `TypeError` or `RangeError`
 * naming the option that is wrong (see {@linkcode KvIdConstructor}); it does no I/O.
 *
 * @example
 * ```ts ignore
 * import { KvId } from "@kvid/core";
 *
 * export const ORDER_ID = new KvId("order"); // uses the client given to configure()
 * export const BIG_ID = new KvId("big", { bigint: true }); // KvId<bigint>
 * ```
 */
export const KvId: KvIdConstructor = KvIdClass as unknown as KvIdConstructor;
