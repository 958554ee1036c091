/**
 * {@linkcode KvId}: the segment-mode generator.
 *
 * Longer than 500 lines on purpose: the reservation loop, the waiting callers, prefetch, retries
 * with backoff, the `failFast` probe, rollback detection and the give-back on close all read and
 * write one generator's private state under one invariant (IDs strictly increase, one
 * reservation in flight); split across files they would need that state exposed. The parts that
 * stand alone are apart already: the segment buffer (`segment_buffer.ts`), the step rule
 * (`step.ts`), the options and stats types (`kvid_options.ts`), validation (`validate.ts`) and
 * the store contract (`store_contract.ts`).
 *
 * @module
 */

import { KvIdError, type KvIdErrorCode } from "../contract/errors.ts";
import type {
  DurabilityReport,
  ExpiryDetail,
  KvIdOptions,
  KvIdStats,
  RollbackDetail,
} from "./kvid_options.ts";
import {
  checkDurabilityOptions,
  type DurabilityMode,
  durabilityRefusal,
  markServerReadsStale,
} from "../contract/durability.ts";
import { checkStoreSource, storeFromSource } from "../contract/store_source.ts";
import { SegmentBuffer } from "./segment_buffer.ts";
import type {
  DurabilityOptions,
  IdRange,
  Reservation,
  Store,
  StoreDurability,
} from "../contract/store.ts";
import { toKvIdError } from "../contract/store_errors.ts";
import {
  checkCounterName,
  checkInteger,
  checkName,
  checkNumber,
  describe,
} from "../contract/validate.ts";
import { deadlineTimer } from "../contract/deadline_timer.ts";
import { trackGenerator, untrackGenerator } from "../contract/shutdown.ts";
import { StepSizer } from "./step.ts";

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
   */
  next(): Promise<T>;
  /** `count` IDs, increasing, with one await and few round trips. */
  nextBatch(count: number): Promise<T[]>;
  /** A snapshot of the generator's state: plain data, JSON-safe. */
  stats(): KvIdStats;
  /** The highest ID reserved so far, exactly (0n before the first); `stats().high` as a bigint. */
  readonly high: bigint;
  /**
   * Stop: pending and later calls reject with a `"closed"` {@linkcode KvIdError}; waits for an
   * in-flight reservation, then gives back the unused IDs where it can (`giveBack`), all in at
   * most `timeout` ms. The Redis client is the caller's to close.
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
   */
  new (name: string, options: KvIdOptions & { bigint: true }): KvId<bigint>;
  /**
   * A generator of `number` IDs.
   *
   * @param name The counter: a field of the hash, non-empty, at most 4,096 UTF-8 bytes.
   * @param options See {@linkcode KvIdOptions}.
   */
  new (name: string, options?: KvIdOptions & { bigint?: false }): KvId<number>;
  /**
   * A generator whose ID type is known only at run time (options typed `KvIdOptions`).
   *
   * @param name The counter: a field of the hash, non-empty, at most 4,096 UTF-8 bytes.
   * @param options See {@linkcode KvIdOptions}.
   */
  new (name: string, options?: KvIdOptions): KvId<number | bigint>;
  /** The prototype. */
  readonly prototype: KvId<number | bigint>;
}

const OPTION_NAMES = new Set([
  "redis",
  "block",
  "store",
  "key",
  "minStep",
  "maxStep",
  "initialStep",
  "segmentDuration",
  "prefetchAt",
  "timeout",
  "failFast",
  "bigint",
  "guard",
  "rollbackMargin",
  "giveBack",
  "rememberStep",
  "replicas",
  "waitAof",
  "stepRule",
  "clock",
  "durability",
  "serverSettings",
  "floor",
]);
const MAX_TIMER_MS = 2_147_483_647; // setTimeout fires at once above this
const MAX_BATCH = 10_000_000;
const MAX_REPLICAS = 1_000;
const BACKOFF_BASE_MS = 20;
const LEAD_ROUND_TRIPS = 4;
const BACKOFF_MAX_MS = 2_000;
/** How often, at most, a changed step is written next to the counter. */
const STEP_SAVE_MS = 10_000;
const MAX_ID = (1n << 63n) - 1n;

/**
 * Internal (the ID service's, not part of the package's surface): `gen[NUMBERS_WHILE_SAFE]()`
 * makes a `bigint` generator's `nextBatch()` put numbers for the IDs up to
 * `Number.MAX_SAFE_INTEGER` and bigints above, exact either way. The service formats IDs as
 * text: a bigint costs ~0.1 µs more per ID to make and to print (nextBatch(100) and its body
 * 8.4 µs against 4.35 µs in number mode).
 */
export const NUMBERS_WHILE_SAFE: unique symbol = Symbol("kvid.numbersWhileSafe");

interface Waiter<T> {
  need: number;
  got: number;
  /** The IDs of a batch; undefined for a single `next()`. */
  ids: T[] | undefined;
  deadline: number;
  resolve(value: T | T[]): void;
  reject(err: unknown): void;
}

// The classes with each mode's next(), set in KvIdImpl's static block (which can reach its
// private names) and chosen by KvId at the end.
let NumberKvId: new (name: string, options?: KvIdOptions) => KvIdImpl<number>;
let BigIntKvId: new (name: string, options?: KvIdOptions) => KvIdImpl<bigint>;

class KvIdImpl<T extends number | bigint> extends EventTarget implements KvId<T> {
  readonly name: string;
  readonly key: string;
  readonly #options: KvIdOptions;
  readonly #bigint: boolean;
  // bigint mode, set by NUMBERS_WHILE_SAFE: nextBatch() fills numbers while they are exact.
  #numbersWhileSafe = false;
  // Set here, to a buffer, and again in the constructor: a field first set to undefined would
  // make V8 check what it holds on every next().
  readonly #buf: SegmentBuffer = new SegmentBuffer({ prefetchAt: 0, safeOnly: true });
  readonly #sizer: StepSizer;
  readonly #maxStep: number;
  readonly #minStep: number;
  readonly #timeout: number;
  readonly #guard: boolean;
  readonly #failFast: boolean;
  readonly #margin: bigint;
  readonly #replicas: number;
  readonly #waitAof: boolean;
  readonly #clock: () => number;
  readonly #durabilityMode: DurabilityMode;
  #store: Store | undefined;
  // The store's durability: read before the first reservation and again after a transient
  // failure, a refusal or a rollback (the server may have restarted, or be another one).
  #durabilityDue = true;
  #durability: StoreDurability | undefined;
  // The last read was accepted: a re-read may then go beside the reservation.
  #durabilityAccepted = false;
  #ttlRemovals = 0;
  // The floor option: consulted before the first reservation and after a rollback.
  #floorDue = true;
  #userFloor = 0n;

  #waiters: Waiter<T>[] = [];
  #head = 0;
  #demand = 0;
  // Cancels the timer of the first queued call's deadline (see deadlineTimer: a blocked event
  // loop is not counted against the store).
  #deadlineTimer: (() => void) | undefined;
  #backoffTimer: ReturnType<typeof setTimeout> | undefined;
  #inflight: Promise<void> | undefined;
  #retryAt = 0;
  #closed = false;
  #closing: Promise<void> | undefined;
  // The remembered step: looked up before the first reservation, written when it changed.
  #stepLoaded: boolean;
  #savedStep = 0;
  #savedAt = -Infinity;
  // A reservation that landed after close(): its range may be given back too.
  #late: { ranges: IdRange[]; raised: boolean } | undefined;
  #prefetchTimer: ReturnType<typeof setTimeout> | undefined;
  #accepted = 0;
  #slowTrip = 0;
  #leadAt: number | undefined;
  #leadTaken = 0;

  #segments = 0;
  #failures = 0;
  #failuresInRow = 0;
  // Outage state (failFast): when the failures in a row began, since when the store is known
  // down, and whether a call was turned away since the last probe (so another one is wanted).
  #failingSince = 0;
  #downSince: number | undefined;
  #probeWanted = false;
  #stalls = 0;
  #rollbacks = 0;
  #lastFetchMs: number | undefined;
  #lastError: KvIdError | undefined;

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
    checkCounterName("KvId", "name", name);
    if (options === null || typeof options !== "object") {
      throw new TypeError(`KvId options must be an object, got ${describe(options)}`);
    }
    for (const k of Object.keys(options)) {
      if (!OPTION_NAMES.has(k)) throw new TypeError(`KvId: unknown option ${JSON.stringify(k)}`);
      // `??` below would take null for "the default": a wrong type, said so by name.
      if ((options as Record<string, unknown>)[k] === null) {
        throw new TypeError(`KvId option ${k} must not be null (leave it out for the default)`);
      }
    }
    const key = options.key ?? "kvid";
    checkName("KvId", "key", key);
    const minStep = options.minStep ?? 1;
    checkInteger("KvId", "minStep", minStep, 1, Number.MAX_SAFE_INTEGER);
    const maxStep = options.maxStep ?? Math.max(1_000_000, minStep);
    checkInteger("KvId", "maxStep", maxStep, minStep, Number.MAX_SAFE_INTEGER);
    const initialStep = options.initialStep ?? minStep;
    checkInteger("KvId", "initialStep", initialStep, minStep, maxStep);
    const segmentDuration = options.segmentDuration ?? 600_000;
    checkNumber("KvId", "segmentDuration", segmentDuration, Number.MIN_VALUE, Number.MAX_VALUE);
    const prefetchAt = options.prefetchAt ?? 0.2;
    checkNumber("KvId", "prefetchAt", prefetchAt, 0, 1);
    const timeout = options.timeout ?? 5_000;
    checkNumber("KvId", "timeout", timeout, 1, MAX_TIMER_MS);
    const margin = options.rollbackMargin ?? 0;
    checkInteger("KvId", "rollbackMargin", margin, 0, Number.MAX_SAFE_INTEGER);
    const replicas = options.replicas ?? 0;
    checkInteger("KvId", "replicas", replicas, 0, MAX_REPLICAS);
    for (
      const flag of ["bigint", "guard", "giveBack", "rememberStep", "failFast", "waitAof"] as const
    ) {
      if (options[flag] !== undefined && typeof options[flag] !== "boolean") {
        throw new TypeError(
          `KvId option ${flag} must be a boolean, got ${describe(options[flag])}`,
        );
      }
    }
    const stepRule = options.stepRule ?? "doubling";
    if (stepRule !== "doubling" && stepRule !== "rate") {
      throw new TypeError(
        `KvId option stepRule must be "doubling" or "rate", got ${describe(stepRule)}`,
      );
    }
    if (options.clock !== undefined && typeof options.clock !== "function") {
      throw new TypeError(`KvId option clock must be a function, got ${describe(options.clock)}`);
    }
    checkStoreSource("KvId", options.redis);
    checkDurabilityOptions("KvId", options.durability, options.serverSettings);
    if (options.floor !== undefined) {
      if (typeof options.floor !== "function") {
        throw new TypeError(`KvId option floor must be a function, got ${describe(options.floor)}`);
      }
      if (options.guard === false) {
        throw new TypeError(
          "KvId option floor needs guard (the counter is raised above it by the guard script)",
        );
      }
    }
    if (options.block !== undefined) {
      checkInteger("KvId", "block", options.block, 1, Number.MAX_SAFE_INTEGER);
      if (!Array.isArray(options.redis)) {
        throw new TypeError("KvId option block needs several servers in the redis option");
      }
    }
    if (options.store !== undefined) {
      if (options.redis !== undefined) {
        throw new TypeError("KvId: give either the redis option or the store option, not both");
      }
      if (typeof options.store?.reserve !== "function") {
        throw new TypeError("KvId option store must have a reserve() method");
      }
    }

    this.name = name;
    this.key = key;
    this.#options = options;
    this.#bigint = options.bigint ?? false;
    this.#buf = new SegmentBuffer({ prefetchAt, safeOnly: !this.#bigint });
    this.#sizer = new StepSizer(minStep, maxStep, segmentDuration, stepRule, initialStep);
    this.#maxStep = maxStep;
    this.#minStep = minStep;
    this.#timeout = timeout;
    this.#guard = options.guard ?? true;
    this.#failFast = options.failFast ?? true;
    this.#margin = BigInt(margin);
    this.#replicas = replicas;
    this.#waitAof = options.waitAof ?? true;
    this.#clock = options.clock ?? (() => performance.now());
    this.#durabilityMode = options.durability ?? "strict";
    this.#store = options.store;
    this.#stepLoaded = options.rememberStep === false || options.initialStep !== undefined;
    trackGenerator(this);
  }

  // The hot path is next() of NumberKvId and BigIntKvId below, one class per mode; this one
  // serves subclasses of KvId (see KvId at the end). No I/O, no lock, no allocation but the
  // promise (and the bigint); one comparison before the prefetch mark. What it costs, measured
  // in bench/hot_path_bench.ts:
  // - next() is an async function without `await`. Once an `await` in it had run (a stall),
  //   V8 kept its resumable frame on every call, fast path included (1.8x a bare await).
  // - V8 elides the promise of an inlined async function with one path (a bare counter), not
  //   once it has a second (here: switch segments or wait): ~0.15x of a bare await, the floor
  //   of any awaited source that can run dry (measured beside it).
  // - A function that may return a bigint costs number mode ~0.1x more, even on a path that
  //   is not taken: hence a class per mode.
  // - A private method call on the fast path costs ~0.1x more; the fields read here must hold
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
    if (this.#waiters.length === this.#head) got = this.#fill(ids, 0, count);
    if (got === count) {
      if (this.#buf.wantsNext) this.#prefetchSoon();
      return ids;
    }
    return await this.#wait(count, ids, got) as T[];
  }

  stats(): KvIdStats {
    return {
      name: this.name,
      key: this.key,
      step: this.#sizer.step,
      remaining: this.#buf.remaining,
      segments: this.#segments,
      failures: this.#failures,
      stalls: this.#stalls,
      lastFetchMs: this.#lastFetchMs,
      high: String(this.#buf.high),
      rollbacks: this.#rollbacks,
      durability: this.#durabilityReport(),
      ttlRemovals: this.#ttlRemovals,
      reserving: this.#inflight !== undefined || this.#prefetchTimer !== undefined,
      lastError: this.#lastError === undefined
        ? undefined
        : { code: this.#lastError.code, message: this.#lastError.message },
    };
  }

  get high(): bigint {
    return this.#buf.high;
  }

  /** See NUMBERS_WHILE_SAFE. */
  [NUMBERS_WHILE_SAFE](): void {
    this.#numbersWhileSafe = this.#bigint;
  }

  #durabilityReport(): DurabilityReport {
    const d = this.#durability;
    return {
      mode: this.#durabilityMode,
      durable: d?.durable,
      problems: d === undefined ? [] : [...d.problems],
      settings: d === undefined ? {} : { ...d.settings },
    };
  }

  async close(): Promise<void> {
    if (!this.#closed) {
      this.#closed = true;
      untrackGenerator(this);
      const tail = this.#options.giveBack === false ? undefined : this.#buf.unusedTail();
      const unused = this.#options.giveBack === false ? [] : this.#buf.unusedRanges();
      // Drop what is buffered so the hot path falls through to the closed check.
      this.#buf.clear();
      this.#rejectWaiters(() => this.#closedError());
      clearTimeout(this.#backoffTimer);
      this.#backoffTimer = undefined;
      clearTimeout(this.#prefetchTimer);
      this.#prefetchTimer = undefined;
      this.#closing = this.#finishClose(tail, unused, performance.now() + this.#timeout);
    }
    await this.#closing;
  }

  /**
   * After the reservation in flight (if any) landed, give back the unused top of what this
   * generator reserved, if the store can (compare-and-set: only when nobody reserved since),
   * and remember the step. All of close() is bounded by one `timeout` from its call (`deadline`):
   * what the reservation in flight took is not given again; a failure leaves the gap, as
   * without it.
   */
  async #finishClose(
    tail: IdRange | undefined,
    unused: IdRange[],
    deadline: number,
  ): Promise<void> {
    await this.#inflight;
    const left = deadline - performance.now();
    if (left <= 0) return;
    const store = this.#store;
    const work: Promise<unknown>[] = [];
    if (this.#options.giveBack !== false && store?.giveBack !== undefined) {
      // Every unused range: the top one lowers the counter, the others go to its pool.
      const ranges = this.#unusedAll(unused);
      if (ranges.length > 0) work.push(store.giveBack(this.key, this.name, ranges));
    } else {
      const range = this.#options.giveBack === false ? undefined : this.#unusedTop(tail);
      if (range !== undefined && store?.release !== undefined) {
        work.push(store.release(this.key, this.name, range));
      }
    }
    // After one reservation the step is a guess from one round trip (the ramp-up floor): a name
    // used once (10,000 names, one call each) writes no step field.
    if (this.#segments > 1 && this.#stepChanged()) work.push(this.#saveStep());
    if (work.length === 0) return;
    let timer: ReturnType<typeof setTimeout> | undefined;
    try {
      await Promise.race([
        Promise.all(work),
        new Promise((resolve) => timer = setTimeout(resolve, left)),
      ]);
    } catch {
      // Not given back: a gap, as without giveBack.
    } finally {
      clearTimeout(timer);
    }
  }

  /** The unused ranges buffered at close, and a late reservation's above everything held. */
  #unusedAll(unused: IdRange[]): IdRange[] {
    const late = this.#late;
    if (late === undefined || late.raised) return unused;
    const above = late.ranges.filter((r) => r.first > this.#buf.high);
    if (above.length !== late.ranges.length) return unused;
    const out: IdRange[] = [];
    for (const r of [...unused, ...above]) {
      const prev = out.at(-1);
      if (prev !== undefined && prev.last + 1n === r.first) {
        out[out.length - 1] = { ...prev, last: r.last };
      } else out.push(r);
    }
    return out;
  }

  /** The unused IDs ending at the counter's value as this generator last saw it, if any. */
  #unusedTop(tail: IdRange | undefined): IdRange | undefined {
    const late = this.#late;
    if (late === undefined) return tail;
    const r = late.ranges.length === 1 && !late.raised ? late.ranges[0] : undefined;
    // Only IDs above everything this generator held: a late range below that is a rollback.
    if (r === undefined || r.first <= this.#buf.high) return undefined;
    return tail !== undefined && tail.last + 1n === r.first
      ? { first: tail.first, last: r.last }
      : r;
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

  /** Queue a call for `need` IDs (of which `got` are already in `ids`) until served. */
  #wait(need: number, ids: T[] | undefined, got = 0): Promise<T | T[]> {
    // Callers come here with nothing buffered for them (next() already tried the segment ahead).
    if (this.#closed) return Promise.reject(this.#closedError());
    const now = performance.now();
    const last = this.#lastError;
    if (last !== undefined && !isTransient(last.code) && now < this.#retryAt) {
      return Promise.reject(last); // fail fast on a refusal, retried after the backoff
    }
    if (this.#downSince !== undefined && this.#probing()) {
      // Known down and a probe is on its way: say so now rather than after `timeout`.
      this.#probeWanted = true;
      return Promise.reject(this.#downError(now));
    }
    this.#stalls++;
    return new Promise((resolve, reject) => {
      this.#waiters.push({ need, got, ids, deadline: now + this.#timeout, resolve, reject });
      this.#demand += need - got;
      this.#deadlineTimer ??= deadlineTimer(this.#timeout, () => this.#expire());
      this.#pump();
    });
  }

  /** Serve queued calls, in order, from the buffer. */
  #serve(): void {
    const waiters = this.#waiters;
    while (this.#head < waiters.length) {
      const w = waiters[this.#head];
      const before = w.got;
      if (w.ids === undefined) {
        const id = this.#takeOne();
        if (id === undefined) break;
        w.got = 1;
        this.#demand -= 1;
        this.#head++;
        w.resolve(id);
        continue;
      }
      w.got = this.#fill(w.ids, w.got, w.need);
      this.#demand -= w.got - before;
      if (w.got < w.need) break;
      this.#head++;
      w.resolve(w.ids);
    }
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
      this.#demand -= w.need - w.got;
      w.reject(this.#timeoutError());
      expired++;
    }
    this.#compact();
    // A call waited its whole timeout while reservations failed: the store is known down.
    if (expired > 0 && this.#lastError !== undefined) this.#markDown(now);
    if (this.#head < waiters.length) {
      const wait = Math.max(1, waiters[this.#head].deadline - now);
      this.#deadlineTimer = deadlineTimer(wait, () => this.#expire());
    }
  }

  #rejectWaiters(error: () => unknown): void {
    const waiters = this.#waiters;
    while (this.#head < waiters.length) waiters[this.#head++].reject(error());
    this.#demand = 0;
    this.#compact();
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

  /**
   * Start the prefetch from a task of its own, so the call that crosses the mark does not pay
   * for sending the command (the client's encoding and write, and their promise chain).
   */
  #prefetchSoon(): void {
    if (
      this.#prefetchTimer !== undefined || this.#inflight !== undefined ||
      this.#buf.ahead.length > 0 || this.#closed ||
      (this.#retryAt !== 0 && performance.now() < this.#retryAt)
    ) return;
    this.#prefetchTimer = setTimeout(() => {
      this.#prefetchTimer = undefined;
      this.#pump();
    }, 0);
  }

  /**
   * How many IDs should be left when the next reservation starts so that, at the rate seen since
   * the previous reservation, they last `LEAD_ROUND_TRIPS` of the slowest recent round trips.
   * `prefetchAt` alone can be too little when segments are short and the network slow.
   */
  #prefetchLead(now: number, taken: number): number {
    this.#slowTrip = Math.max(this.#lastFetchMs ?? 0, this.#slowTrip * 0.8);
    const lastAt = this.#leadAt;
    const rate = lastAt === undefined || now < lastAt
      ? 0
      : (taken - this.#leadTaken) / Math.max(now - lastAt, 1);
    this.#leadAt = now;
    this.#leadTaken = taken;
    return rate * this.#slowTrip * LEAD_ROUND_TRIPS;
  }

  /** Start a reservation if one is wanted and none is in flight (single flight). */
  #pump(): void {
    if (this.#inflight !== undefined || this.#closed) return;
    const waiting = this.#demand > 0 || (this.#downSince !== undefined && this.#probeWanted);
    if (!waiting && !this.#buf.wantsNext) return;
    const delay = this.#retryAt - performance.now();
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
    this.#probeWanted = false;
    this.#inflight = this.#reserve().finally(() => {
      this.#inflight = undefined;
      // Callers waiting: the next reservation now. Only a prefetch: from a task of its own, so
      // the caller just served resumes first (a new name's first ID: it was ~30 µs later).
      if (this.#demand > 0 || this.#probeWanted) this.#pump();
      else if (this.#buf.wantsNext) this.#prefetchSoon();
    });
  }

  /** One reservation, bounded by `timeout`. Never rejects. */
  async #reserve(): Promise<void> {
    let early: Promise<void> | undefined;
    // The remembered step: read in the reservation itself when the store can (no lookup of its
    // own), else by a lookup beside the durability read.
    let loadStep = false;
    // First use of a store that can: the durability is read by the reservation itself, which
    // reserves only if the server is accepted (one round trip for the first ID).
    let readInReserve = false;
    if (!this.#stepLoaded) {
      // First use: the store's durability is read beside the remembered step, one round trip
      // for both; the reservation waits for it (below).
      let store: Store | undefined;
      try {
        store = this.#store ??= this.#makeStore();
        readInReserve = store.readsDurability === true && store.durability !== undefined &&
          this.#durabilityDue;
        if (!readInReserve) {
          early = this.#checkDurability(store);
          early.catch(() => {}); // awaited by the attempt
        }
      } catch {
        // No store: said by the attempt.
      }
      if (store?.reservesStep === true && this.#guard) {
        this.#stepLoaded = true;
        loadStep = true;
      } else await this.#loadStep();
    }
    const count = Math.min(Math.max(this.#sizer.step, this.#demand), this.#maxStep);
    const floor = this.#buf.high;
    const started = performance.now();
    let cancelTimer: (() => void) | undefined;
    let abandoned = false;
    try {
      // A bad clock is said before any I/O: its reading must never size a reservation.
      const before = this.#readClock();
      if (!Number.isSafeInteger(count) || count < 1) {
        throw new KvIdError("config", `the step became ${count}, not a positive integer`, {
          key: this.key,
          field: this.name,
        });
      }
      const store = this.#store ??= this.#makeStore();
      const reserveAbove = (mark: bigint, durability?: DurabilityOptions) =>
        store.reserve(this.key, this.name, count, {
          ...(durability === undefined ? {} : { durability }),
          floor: mark,
          // Capped at 2^63-1 so a counter is never written past it: the increment overflows.
          raiseTo: mark + this.#margin > MAX_ID ? MAX_ID : mark + this.#margin,
          guard: this.#guard,
          exact: this.#bigint,
          replicas: this.#replicas,
          // Under "best-effort", a server read as keeping no AOF cannot confirm with WAITAOF:
          // the loss was accepted, so it is not asked.
          waitAof: this.#waitAof && !this.#acceptedNoAof(),
          // WAIT returns (with the count it saw) a little before the reservation's deadline.
          waitMs: this.#timeout * 0.9,
          loadStep,
          maxCount: this.#maxStep,
          // The pool is read by the guard script: plain HINCRBY (guard: false) never takes from it.
          pool: this.#guard && this.#options.giveBack !== false && store.giveBack !== undefined,
        });
      const attempt = (async () => {
        // First use: the store is read before anything is reserved (a refused server is left
        // untouched). Later (after a failure or a rollback) it is read beside the reservation,
        // one round trip for both, and the range is used only once it answered.
        const probe = readInReserve ? undefined : early ?? this.#checkDurability(store);
        probe?.catch(() => {}); // awaited below
        if (probe !== undefined && !this.#durabilityAccepted) await probe;
        if (this.#floorDue) await this.#readFloor();
        const mark = this.#userFloor > floor ? this.#userFloor : floor;
        let reply = await reserveAbove(mark, readInReserve ? this.#durabilityAsked() : undefined);
        if (readInReserve && reply.durability !== undefined) this.#judge(reply.durability);
        else if (readInReserve) await this.#checkDurability(store); // it did not read it
        await probe; // a refusal spends the range
        if (reply.raised && this.#options.floor !== undefined && mark === floor) {
          // Found below this generator's own mark: the floor may know of IDs above it.
          await this.#readFloor();
          const first = reply.ranges[0]?.first;
          if (first !== undefined && first <= this.#userFloor) {
            reply = await reserveAbove(this.#userFloor); // the range found is spent
            reply = { ...reply, raised: true };
          }
        }
        return reply;
      })();
      // A timer that fired late because the event loop was blocked gives the reply (likely in
      // the socket already) more time: before, 1,500 ms of synchronous work with timeout 500
      // failed the waiting call and marked a healthy store down (15 calls "unavailable").
      const timeout = new Promise<never>((_, reject) => {
        cancelTimer = deadlineTimer(this.#timeout, () => {
          abandoned = true;
          // No cause: the last error's own cause chain would grow by one per failed attempt.
          reject(this.#timeoutError("the reservation took", false));
        });
      });
      // A late reply is dropped: its range is spent, never handed out.
      // A late reply is still read for a rollback it found (a command a client queued while the
      // server restarted empty raises the counter): nobody else would ever report it.
      attempt.then((late) => {
        if (abandoned && !this.#closed) this.#lateRollback(late, floor);
      }, () => {});
      const reply = await Promise.race([attempt, timeout]);
      if (this.#closed) {
        this.#late = reply;
        return;
      }
      this.#lastFetchMs = performance.now() - started;
      this.#segments++;
      if (loadStep && reply.step !== undefined) {
        this.#sizer.step = Math.min(Math.max(reply.step, this.#minStep), this.#maxStep);
        this.#savedStep = reply.step;
      }
      // IDs taken or asked for so far: what the step rule and the prefetch lead measure.
      let now = before;
      try {
        const after = this.#clock();
        if (Number.isFinite(after)) now = after;
      } catch { /* said by the next reservation's reading */ }
      const taken = this.#accepted - this.#buf.remaining + this.#demand;
      this.#sizer.reserved(now, taken, Math.max(0, now - before));
      const lead = this.#prefetchLead(now, taken);
      const lowest = reply.ranges[0]?.first;
      if (lowest !== undefined && lowest < 1n) {
        // Hostile data, not a rollback of ours: the range is spent, nothing below 1 is issued.
        throw new KvIdError(
          "reply",
          `the counter held a negative value (the reply reserved ${lowest}..); IDs start at 1`,
          { key: this.key, field: this.name },
        );
      }
      // A range starting at or below the mark: the counter went back, even if part of the
      // range is still above the mark (without guard nothing raised it).
      const below = floor > 0n && reply.ranges.length > 0 && reply.ranges[0].first <= floor;
      if (this.#userFloor > 0n && lowest !== undefined && lowest <= this.#userFloor) {
        // A store that could not raise the counter (no scripting): the range is spent.
        this.#floorDue = true;
        this.#rollbacks++;
        throw new KvIdError(
          "rollback",
          `the counter (${
            reply.ranges.at(-1)?.last
          }) is at or below the floor option's ${this.#userFloor} and the store could not raise it (no scripting): set it above by hand (HSET ${this.key} ${this.name} <floor>)`,
          { key: this.key, field: this.name },
        );
      }
      const ttl = reply.ttlRemovedMs ?? 0;
      if (ttl !== 0) {
        this.#ttlRemovals++;
        this.dispatchEvent(
          new CustomEvent<ExpiryDetail>("expiry", { detail: { key: this.key, ttlMs: ttl } }),
        );
      }
      const added = this.#buf.add(reply.ranges, lead);
      const last = reply.ranges.at(-1)?.last ?? 0n;
      if (reply.raised || below || added === "rollback") {
        // The server lost data: it may have restarted, or be another one; ask it again. (The
        // floor option was asked again already, before this range was accepted.)
        this.#markDurabilityDue();
        this.#rollbacks++;
        this.dispatchEvent(
          new CustomEvent<RollbackDetail>("rollback", { detail: { floor, last } }),
        );
      }
      if (typeof added === "string") throw this.#refusal(added, last);
      this.#accepted += added;
      // Written at most every STEP_SAVE_MS, the first time that long after the first
      // reservation: a process killed young leaves the step it was given, not one it doubled at
      // once (each restart then started at twice its predecessor's: 4 processes at 50,000 IDs/s,
      // one killed every 1.25 s, had a density of 0.44; 0.63 this way, bench/deploy_bench.ts).
      if (this.#savedAt === -Infinity) this.#savedAt = now;
      else if (this.#stepChanged() && now - this.#savedAt >= STEP_SAVE_MS) {
        this.#savedAt = now;
        void this.#saveStep();
      }
      this.#failuresInRow = 0;
      this.#retryAt = 0;
      this.#downSince = undefined;
      this.#lastError = undefined;
      this.#serve();
    } catch (err) {
      const error = toKvIdError(err, this.key, this.name);
      this.#failures++;
      if (this.#failuresInRow++ === 0) this.#failingSince = started;
      this.#lastError = error;
      this.#retryAt = performance.now() + backoff(this.#failuresInRow, this.#timeout / 2);
      // A transient failure may hide a reconnect to a restarted (or another) server.
      if (isTransient(error.code)) this.#markDurabilityDue();
      // A refusal will not heal by waiting: tell the callers now. Others retry until timeout.
      if (!isTransient(error.code)) this.#rejectWaiters(() => error);
      else if (this.#downSince !== undefined) this.#rejectWaiters(() => this.#downError());
      // An attempt that took the whole timeout (a hung server): known down too.
      else if (performance.now() - started >= this.#timeout) this.#markDown();
    } finally {
      cancelTimer?.();
    }
  }

  /**
   * Start from the step remembered next to the counter, if any (once, before the first
   * reservation). A failure or no value leaves `minStep`: the step rule grows it as before.
   */
  async #loadStep(): Promise<void> {
    this.#stepLoaded = true;
    let timer: ReturnType<typeof setTimeout> | undefined;
    try {
      const store = this.#store ??= this.#makeStore();
      if (store.loadStep === undefined) return;
      const step = await Promise.race([
        store.loadStep(this.key, this.name),
        new Promise<undefined>((resolve) =>
          timer = setTimeout(() => resolve(undefined), this.#timeout / 2)
        ),
      ]);
      if (step !== undefined && !this.#closed) {
        this.#sizer.step = Math.min(Math.max(step, this.#minStep), this.#maxStep);
        this.#savedStep = step;
      }
    } catch {
      // No remembered step: start at minStep. A store that cannot be made fails the reservation.
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * Read the store's durability when due and refuse one that can lose reservations (see
   * {@linkcode durabilityRefusal}); a refusal leaves it due, so a fixed server is served again.
   */
  async #checkDurability(store: Store): Promise<void> {
    if (!this.#durabilityDue || store.durability === undefined) {
      this.#durabilityAccepted = true;
      return;
    }
    this.#judge(await store.durability(this.key, this.#durabilityAsked()));
  }

  /** What the store's durability read is asked with. */
  #durabilityAsked(): DurabilityOptions {
    return {
      field: this.name,
      mode: this.#durabilityMode,
      replicas: this.#replicas,
      stated: this.#options.serverSettings ?? {},
      // The first read may be another generator's on the same client (see DurabilityOptions).
      reuse: this.#durability === undefined,
    };
  }

  /** Keep the store's durability `d`; throw the refusal of a store that can lose reservations. */
  #judge(d: StoreDurability): void {
    this.#durability = d;
    const refusal = durabilityRefusal(d, this.#durabilityMode, this.key, this.name);
    this.#durabilityAccepted = refusal === undefined;
    if (refusal !== undefined) {
      markServerReadsStale(); // a fixed server is read again by the next generator too
      throw refusal;
    }
    this.#durabilityDue = false;
  }

  /** Read the store again before the next reservation, and stop sharing reads made so far. */
  #markDurabilityDue(): void {
    this.#durabilityDue = true;
    markServerReadsStale();
  }

  /** `"best-effort"`, and the store said (one of) its server(s) keeps no AOF. */
  #acceptedNoAof(): boolean {
    if (this.#durabilityMode !== "best-effort") return false;
    const settings = this.#durability?.settings ?? {};
    return Object.entries(settings).some(([k, v]) =>
      (k === "appendonly" || k.endsWith(".appendonly")) && v === "no"
    );
  }

  /** Ask the floor option for the largest ID the user's data holds. */
  async #readFloor(): Promise<void> {
    const read = this.#options.floor;
    if (read === undefined) {
      this.#floorDue = false;
      return;
    }
    const where = { key: this.key, field: this.name };
    let value: unknown;
    try {
      value = await read();
    } catch (cause) {
      // The user's database unreachable: transient, retried like a store that is down.
      throw new KvIdError("unavailable", "the floor option failed", { ...where, cause });
    }
    const floor = typeof value === "number" && Number.isSafeInteger(value)
      ? BigInt(value)
      : typeof value === "bigint"
      ? value
      : undefined;
    if (floor === undefined || floor < 0n || floor >= MAX_ID) {
      throw new KvIdError(
        "config",
        `the floor option returned ${describe(value)}, not an integer from 0 to 2^63-2`,
        where,
      );
    }
    if (floor > this.#userFloor) this.#userFloor = floor;
    this.#floorDue = false;
  }

  /** The step differs from the remembered one (a counter that never left minStep has none). */
  #stepChanged(): boolean {
    const step = this.#sizer.step;
    return step !== this.#savedStep && (step > this.#minStep || this.#savedStep > 0);
  }

  /** Write the current step next to the counter; best effort. */
  async #saveStep(): Promise<void> {
    const step = this.#sizer.step;
    const store = this.#store;
    if (store?.saveStep === undefined || this.#options.rememberStep === false) return;
    this.#savedStep = step;
    try {
      await store.saveStep(this.key, this.name, step);
    } catch {
      // Best effort: the next change tries again.
    }
  }

  #makeStore(): Store {
    return storeFromSource(this.#options.redis, {
      who: "KvId",
      key: this.key,
      field: this.name,
      block: this.#options.block,
      timeout: this.#timeout,
    });
  }

  /** An abandoned reservation's reply that found the counter below the mark: report it. */
  #lateRollback(reply: Reservation, floor: bigint): void {
    const first = reply.ranges[0]?.first;
    if (!reply.raised && !(floor > 0n && first !== undefined && first <= floor)) return;
    this.#rollbacks++;
    const last = reply.ranges.at(-1)?.last ?? 0n;
    this.dispatchEvent(new CustomEvent<RollbackDetail>("rollback", { detail: { floor, last } }));
  }

  /** A probe is in flight or waiting out its backoff. */
  #probing(): boolean {
    return this.#inflight !== undefined || this.#backoffTimer !== undefined;
  }

  /**
   * The store is known down: with `failFast`, callers are told at once from now on and one
   * probe at a time (in the background) looks for the store's return.
   */
  #markDown(now = performance.now()): void {
    if (!this.#failFast || this.#closed || this.#downSince !== undefined) return;
    this.#downSince = now;
    this.#probeWanted = true;
    this.#rejectWaiters(() => this.#downError(now));
    this.#pump();
  }

  #downError(now = performance.now()): KvIdError {
    const since = Math.round(now - this.#failingSince);
    return new KvIdError(
      "unavailable",
      `the store is down (no reservation succeeded for ${since} ms): failing fast while a probe retries`,
      { key: this.key, field: this.name, cause: this.#lastError },
    );
  }

  /** The clock's reading, or a `"config"` error if it is not a finite number of ms. */
  #readClock(): number {
    let now: unknown;
    try {
      now = this.#clock();
    } catch (cause) {
      throw new KvIdError("config", "the clock option threw", {
        key: this.key,
        field: this.name,
        cause,
      });
    }
    if (typeof now !== "number" || !Number.isFinite(now)) {
      throw new KvIdError(
        "config",
        `the clock option returned ${describe(now)}, not a finite number of milliseconds`,
        { key: this.key, field: this.name },
      );
    }
    return now;
  }

  #refusal(reason: "unsafe" | "rollback", last: bigint): KvIdError {
    const where = { key: this.key, field: this.name };
    return reason === "unsafe"
      ? new KvIdError(
        "unsafe",
        `the counter reached ${last}, above Number.MAX_SAFE_INTEGER; use { bigint: true }`,
        where,
      )
      : new KvIdError(
        "rollback",
        `the counter (${last}) went below IDs this generator already issued (up to ${this.#buf.high}); enable guard to raise it`,
        where,
      );
  }

  #closedError(): KvIdError {
    return new KvIdError("closed", "the generator is closed", {
      key: this.key,
      field: this.name,
    });
  }

  #timeoutError(what = "no ID could be reserved in", withCause = true): KvIdError {
    return new KvIdError("timeout", `${what} ${this.#timeout} ms`, {
      key: this.key,
      field: this.name,
      cause: withCause ? this.#lastError : undefined,
    });
  }
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
 * {@linkcode KvIdOptions} for its options.
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

function isTransient(code: KvIdErrorCode): boolean {
  return code === "connection" || code === "timeout" || code === "conflict" ||
    code === "unavailable";
}

/** Exponential backoff with jitter: half fixed, half random. */
function backoff(failures: number, cap: number): number {
  // Capped by half the timeout, so a caller waiting `timeout` sees at least one retry.
  const ms = Math.min(BACKOFF_MAX_MS, cap, BACKOFF_BASE_MS * 2 ** Math.min(failures - 1, 16));
  return ms / 2 + Math.random() * ms / 2;
}
