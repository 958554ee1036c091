/**
 * One generator's reservations: each one asked of the store, bounded by `timeout`, checked and
 * added to the segment buffer. What the waiting callers are told is the generator's
 * (`kvid.ts`); what the store's health is, the outage state's (`outage.ts`).
 *
 * @module
 */

import { isTransient, KvIdError } from "../contract/errors.ts";
import { withDeadline } from "../runtime/deadline_timer.ts";
import {
  type AnyReserveOptions,
  type DurabilityOptions,
  hasCounterWords,
  hasGiveBack,
  hasRelease,
  MAX_ID,
  readsStepInReserve,
  type Reservation,
  type Store,
} from "../contract/store.ts";
import { storeFromSource } from "../runtime/store_source.ts";
import { toKvIdError } from "../contract/store_errors.ts";
import { describe } from "../contract/validate.ts";
import { DurabilityGate } from "./durability_gate.ts";
import type { DurabilityReport, ExpiryDetail, RollbackDetail } from "./kvid_options.ts";
import { type LateReservation, rangesToGiveBack, rangeToRelease } from "./give_back.ts";
import { PrefetchLead } from "./prefetch.ts";
import type { SegmentBuffer } from "./segment_buffer.ts";
import type { KvIdSettings } from "./settings.ts";
import { StepSizer } from "./step.ts";
import { StepMemory } from "./step_memory.ts";
import { UserFloor } from "./user_floor.ts";
import { DEMAND, type Demand } from "./wait_queue.ts";
import type { IdRange } from "../contract/store.ts";

/** How one reservation ended ({@linkcode Reserver.reserve}). */
export type ReservationOutcome =
  /** Its IDs are in the buffer. */
  | { readonly kind: "served" }
  /** The generator closed meanwhile: its range is kept for the give-back. */
  | { readonly kind: "late" }
  /** It failed (`startedAt`: when its store call was about to start, ms). */
  | { readonly kind: "failed"; readonly error: KvIdError; readonly startedAt: number };

const SERVED: ReservationOutcome = Object.freeze({ kind: "served" });
const LATE: ReservationOutcome = Object.freeze({ kind: "late" });

/**
 * The reservations of one generator, one at a time (the generator keeps it single flight):
 * first use (the durability read and the remembered step), the store call under one `timeout`
 * with the `floor` option and the durability verdict, then the reply's checks (hostile data,
 * the floor, a rollback, a TTL), the step rule and the prefetch lead, and the step's memory.
 * Owns the store, the step and the counts `stats()` reports; dispatches `"rollback"` and
 * `"expiry"` on the generator.
 *
 * @example
 * ```ts
 * import { Reserver } from "./reservation.ts";
 * import { resolveOptions } from "./settings.ts";
 * import { SegmentBuffer } from "./segment_buffer.ts";
 * import { DEMAND } from "./wait_queue.ts";
 * import type { Store } from "../contract/store.ts";
 * import assert from "node:assert/strict";
 *
 * let counter = 0n;
 * const store: Store = {
 *   reserve(_key, _field, count) {
 *     const first = counter + 1n;
 *     counter += BigInt(count);
 *     return Promise.resolve({ ranges: [{ first, last: counter }], raised: false });
 *   },
 * };
 * const buf = new SegmentBuffer({ prefetchAt: 0.2, safeOnly: true });
 * const reserver = new Reserver("order", resolveOptions("order", { store, minStep: 10 }), buf, new EventTarget(), { [DEMAND]: 0 });
 * assert.ok((await reserver.reserve()).kind === "served" && buf.remaining === 10);
 * ```
 */
export class Reserver {
  /** Reservations that succeeded. */
  segments = 0;
  /** Counters found below the mark (raised or refused). */
  rollbacks = 0;
  /** TTLs found on the hash and removed. */
  ttlRemovals = 0;
  /** Round trip of the last successful reservation, ms. */
  lastFetchMs: number | undefined;
  readonly sizer: StepSizer;
  #store: Store | undefined;
  #closed = false;
  // A reservation that landed after close(): its range may be given back too.
  #late: LateReservation | undefined;
  // IDs accepted into the buffer, in all: with what is left and asked for, what was taken.
  #accepted = 0;
  readonly #name: string;
  readonly #s: KvIdSettings;
  readonly #buf: SegmentBuffer;
  readonly #events: EventTarget;
  readonly #waiting: Demand;
  readonly #gate: DurabilityGate;
  readonly #memory: StepMemory;
  readonly #floor: UserFloor;
  readonly #lead = new PrefetchLead();

  /**
   * @param name The counter's field.
   * @param settings The generator's settings.
   * @param buf The generator's segment buffer, which reservations fill.
   * @param events Where `"rollback"` and `"expiry"` are dispatched (the generator).
   * @param waiting The waiting calls: `[DEMAND]`, the IDs they still need.
   */
  constructor(
    name: string,
    settings: KvIdSettings,
    buf: SegmentBuffer,
    events: EventTarget,
    waiting: Demand,
  ) {
    const s = settings;
    this.#name = name;
    this.#s = s;
    this.#buf = buf;
    this.#events = events;
    this.#waiting = waiting;
    this.#store = s.store;
    this.sizer = new StepSizer(s.minStep, s.maxStep, s.segmentDuration, s.stepRule, s.initialStep);
    this.#gate = new DurabilityGate(s, name);
    this.#memory = new StepMemory(this.sizer, s, name);
    this.#floor = s.floor === undefined ? UserFloor.NONE : new UserFloor(s.floor, s.key, name);
  }

  /** What the store said of its durability when last read. */
  durabilityReport(): DurabilityReport {
    return this.#gate.report();
  }

  /**
   * One reservation of at least the step and at most `maxStep` IDs (more when calls wait for
   * more), bounded by `timeout`. Never rejects.
   */
  async reserve(): Promise<ReservationOutcome> {
    const first = this.#memory.loaded ? undefined : await this.#firstUse();
    const s = this.#s;
    // The calls waiting now, after first use: those that came during it count too.
    const demand = this.#waiting[DEMAND];
    const count = this.sizer.count(demand);
    const floor = this.#buf.high;
    const startedAt = performance.now();
    try {
      // A bad clock is said before any I/O: its reading must never size a reservation.
      const before = this.#readClock();
      if (!Number.isSafeInteger(count) || count < 1) {
        throw new KvIdError(
          "config",
          `the step became ${count}, not a positive integer`,
          this.where(),
        );
      }
      const store = this.#store ??= this.#makeStore();
      const loadStep = first?.loadStep === true;
      // A timer that fired late because the event loop was blocked gives the reply (likely in
      // the socket already) more time: before, 1,500 ms of synchronous work with timeout 500
      // failed the waiting call and marked a healthy store down (15 calls "unavailable").
      const reply = await withDeadline(
        this.#attempt(store, count, floor, loadStep, first?.durability),
        s.timeout,
        // No cause: the last error's own cause chain would grow by one per failed attempt.
        () => new KvIdError("timeout", `the reservation took ${s.timeout} ms`, this.where()),
        // A late reply is dropped: its range is spent, never handed out. It is still read for
        // a rollback it found (a command a client queued while the server restarted empty
        // raises the counter): nobody else would ever report it.
        (late) => {
          if (late.status === "fulfilled" && !this.#closed) this.#lateRollback(late.value, floor);
        },
      );
      if (this.#closed) {
        this.#late = reply;
        return LATE;
      }
      this.#accept(reply, { before, floor, loadStep, startedAt });
      return SERVED;
    } catch (err) {
      const error = toKvIdError(err, s.key, this.#name);
      // A transient failure may hide a reconnect to a restarted (or another) server.
      if (isTransient(error.code)) this.#gate.markDue(this.#store);
      return { kind: "failed", error, startedAt };
    }
  }

  /** Stop: a reservation landing from now on is kept for the give-back, not used. */
  close(): void {
    this.#closed = true;
  }

  /**
   * At close, after the reservation in flight (if any) landed: give back the unused top of what
   * was reserved, if the store can (compare-and-set: only when nobody reserved since), and
   * remember the step, within `ms`. A failure leaves the gap, as without `giveBack`.
   *
   * @param tail The buffer's contiguous unused top, taken at close.
   * @param unused Every unused range buffered, taken at close.
   * @param ms What is left of close()'s `timeout`.
   */
  async giveBack(tail: IdRange | undefined, unused: IdRange[], ms: number): Promise<void> {
    const s = this.#s;
    const store = this.#store;
    const work: Promise<unknown>[] = [];
    if (s.giveBack && store !== undefined && hasGiveBack(store)) {
      // Every unused range: the top one lowers the counter, the others go to its pool.
      const ranges = rangesToGiveBack(unused, this.#late, this.#buf.high);
      if (ranges.length > 0) work.push(store.giveBack(s.key, this.#name, ranges));
    } else {
      const range = s.giveBack ? rangeToRelease(tail, this.#late, this.#buf.high) : undefined;
      if (range !== undefined && store !== undefined && hasRelease(store)) {
        work.push(store.release(s.key, this.#name, range));
      }
    }
    // After one reservation the step is a guess from one round trip (the ramp-up floor): a name
    // used once (10,000 names, one call each) writes no step field.
    if (this.segments > 1 && this.#memory.changed()) work.push(this.#memory.save(store));
    if (work.length === 0) return;
    // A plain timer, not withDeadline's: close()'s bound is the wall time its caller was
    // promised. withDeadline gives a blocked event loop more time (right for a store's reply,
    // which may be in the socket already) and reads performance.now(), so it would stretch
    // close() past its timeout (tests/engine/flow_control_test.ts holds the clock to show the bound).
    let timer: ReturnType<typeof setTimeout> | undefined;
    try {
      await Promise.race([
        Promise.all(work),
        new Promise((resolve) => timer = setTimeout(resolve, ms)),
      ]);
    } catch {
      // Not given back: a gap, as without giveBack.
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * First use: the store is made, its durability read started (see {@linkcode DurabilityGate})
   * and the remembered step looked up beside it, one round trip for both, unless the store reads
   * the step in the reservation itself.
   */
  async #firstUse(): Promise<{ durability: Promise<void> | undefined; loadStep: boolean }> {
    let store: Store | undefined;
    let durability: Promise<void> | undefined;
    try {
      store = this.#store ??= this.#makeStore();
      durability = this.#gate.firstRead(store);
    } catch {
      // No store: said by the attempt.
    }
    // No store yet (no client configured): looked up once there is one, as for a generator
    // declared at module scope before configure().
    if (store === undefined) return { durability, loadStep: false };
    if (readsStepInReserve(store) && this.#s.guard) {
      this.#memory.loaded = true;
      return { durability, loadStep: true };
    }
    // Half the timeout: the reservation after it must fit in the caller's wait too.
    const step = await this.#memory.lookUp(store, this.#s.timeout / 2);
    if (step !== undefined && !this.#closed) this.#memory.found(step);
    return { durability, loadStep: false };
  }

  /**
   * The store call: past the durability gate and the `floor` option, above the mark; a counter
   * the guard raised is checked against the `floor` option once more.
   */
  async #attempt(
    store: Store,
    count: number,
    floor: bigint,
    loadStep: boolean,
    durability: Promise<void> | undefined,
  ): Promise<Reservation> {
    const read = await this.#gate.beforeReserve(store, durability);
    if (this.#floor.due) await this.#floor.read();
    const mark = this.#floor.value > floor ? this.#floor.value : floor;
    let reply = await this.#reserveAbove(store, count, mark, loadStep, read.asked);
    await read.settle(reply); // a refusal spends the range
    if (reply.raised && this.#floor.given && mark === floor) {
      // Found below this generator's own mark: the floor may know of IDs above it.
      await this.#floor.read();
      const first = reply.ranges[0]?.first;
      if (first !== undefined && first <= this.#floor.value) {
        reply = await this.#reserveAbove(store, count, this.#floor.value, loadStep); // spent
        reply = { ...reply, raised: true };
      }
    }
    return reply;
  }

  /** `count` IDs from the store, the counter raised above `mark` if found below it. */
  #reserveAbove(
    store: Store,
    count: number,
    mark: bigint,
    loadStep: boolean,
    durability?: DurabilityOptions,
  ): Promise<Reservation> {
    const s = this.#s;
    const options: AnyReserveOptions = {
      ...(durability === undefined ? {} : { durability }),
      floor: mark,
      // Capped at 2^63-1 so a counter is never written past it: the increment overflows.
      raiseTo: mark + s.margin > MAX_ID ? MAX_ID : mark + s.margin,
      guard: s.guard,
      exact: s.bigint,
      // A store reads its own options from the generator's (the Redis store: how it confirms).
      generator: s,
      loadStep,
      maxCount: s.maxStep,
      // The pool is read by the guard script: plain HINCRBY (guard: false) never takes from it.
      pool: s.guard && s.giveBack && hasGiveBack(store),
    };
    return store.reserve(s.key, this.#name, count, options);
  }

  /**
   * A reply in time: measure, check, add to the buffer, report. Throws what refuses it (its
   * range is then spent).
   */
  #accept(
    reply: Reservation,
    at: { before: number; floor: bigint; loadStep: boolean; startedAt: number },
  ): void {
    const { before, floor } = at;
    const trip = this.lastFetchMs = performance.now() - at.startedAt;
    this.segments++;
    if (at.loadStep && reply.step !== undefined) this.#memory.found(reply.step);
    // IDs taken or asked for so far: what the step rule and the prefetch lead measure.
    let now = before;
    try {
      const after = this.#s.clock();
      if (Number.isFinite(after)) now = after;
    } catch { /* said by the next reservation's reading */ }
    const taken = this.#accepted - this.#buf.remaining + this.#waiting[DEMAND];
    this.sizer.reserved(now, taken, Math.max(0, now - before));
    const lead = this.#lead.reserved(now, taken, trip);
    this.#refuseHostile(reply);
    // A range starting at or below the mark: the counter went back, even if part of the
    // range is still above the mark (without guard nothing raised it).
    const below = floor > 0n && reply.ranges.length > 0 && reply.ranges[0].first <= floor;
    this.#refuseBelowUserFloor(reply);
    const ttl = reply.ttlRemovedMs ?? 0;
    if (ttl !== 0) {
      this.ttlRemovals++;
      this.#events.dispatchEvent(
        new CustomEvent<ExpiryDetail>("expiry", { detail: { key: this.#s.key, ttlMs: ttl } }),
      );
    }
    const added = this.#buf.add(reply.ranges, lead);
    const last = reply.ranges.at(-1)?.last ?? 0n;
    if (reply.raised || below || added === "rollback") {
      // The server lost data: it may have restarted, or be another one; ask it again. (The
      // floor option was asked again already, before this range was accepted.)
      this.#gate.markDue(this.#store);
      this.#rollback(floor, last);
    }
    if (typeof added === "string") throw this.#refusal(added, last);
    this.#accepted += added;
    if (this.#memory.dueAt(now)) void this.#memory.save(this.#store);
  }

  /** Hostile data, not a rollback of ours: the range is spent, nothing below 1 is issued. */
  #refuseHostile(reply: Reservation): void {
    const lowest = reply.ranges[0]?.first;
    if (lowest !== undefined && lowest < 1n) {
      throw new KvIdError(
        "reply",
        `the counter held a negative value (the reply reserved ${lowest}..); IDs start at 1`,
        this.where(),
      );
    }
  }

  /** A store that could not raise the counter above the `floor` option (no scripting). */
  #refuseBelowUserFloor(reply: Reservation): void {
    const lowest = reply.ranges[0]?.first;
    const userFloor = this.#floor.value;
    if (userFloor > 0n && lowest !== undefined && lowest <= userFloor) {
      // The range is spent.
      this.#floor.due = true;
      this.rollbacks++;
      throw new KvIdError(
        "rollback",
        `the counter (${
          reply.ranges.at(-1)?.last
        }) is at or below the floor option's ${userFloor} and the store could not raise it (no scripting): set it above by hand (HSET ${this.#s.key} ${this.#name} <floor>)`,
        this.where(),
      );
    }
  }

  /** An abandoned reservation's reply that found the counter below the mark: report it. */
  #lateRollback(reply: Reservation, floor: bigint): void {
    const first = reply.ranges[0]?.first;
    if (!reply.raised && !(floor > 0n && first !== undefined && first <= floor)) return;
    this.#rollback(floor, reply.ranges.at(-1)?.last ?? 0n);
  }

  #rollback(floor: bigint, last: bigint): void {
    this.rollbacks++;
    this.#events.dispatchEvent(
      new CustomEvent<RollbackDetail>("rollback", { detail: { floor, last } }),
    );
  }

  #makeStore(): Store {
    const s = this.#s;
    return storeFromSource(s.redis, { who: "KvId", key: s.key, field: this.#name, options: s });
  }

  /** The clock's reading, or a `"config"` error if it is not a finite number of ms. */
  #readClock(): number {
    let now: unknown;
    try {
      now = this.#s.clock();
    } catch (cause) {
      throw new KvIdError("config", "the clock option threw", { ...this.where(), cause });
    }
    if (typeof now !== "number" || !Number.isFinite(now)) {
      throw new KvIdError(
        "config",
        `the clock option returned ${describe(now)}, not a finite number of milliseconds`,
        this.where(),
      );
    }
    return now;
  }

  #refusal(reason: "unsafe" | "rollback", last: bigint): KvIdError {
    return reason === "unsafe"
      ? new KvIdError(
        "unsafe",
        `the counter reached ${last}, above Number.MAX_SAFE_INTEGER; use { bigint: true }`,
        this.where(),
      )
      : new KvIdError(
        "rollback",
        `the counter (${last}) went below IDs this generator already issued (up to ${this.#buf.high}); enable guard to raise it`,
        this.where(),
      );
  }

  /** The counter, for errors: in its store's words once the store is known. */
  where(): { key: string; field: string; where: string } {
    const key = this.#s.key;
    const store = this.#store;
    const where = store !== undefined && hasCounterWords(store)
      ? store.describe(key, this.#name)
      : "";
    return { key, field: this.#name, where };
  }
}
