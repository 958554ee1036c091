/**
 * Dynamic step: how many IDs the next reservation asks for.
 *
 * @module
 */

/**
 * How the step adapts (see {@linkcode StepSizer}):
 *
 * - `"doubling"`: the rule of the Rust `kvid` crate and Leaf. After each reservation, compare the
 *   time since the previous one with `segmentDuration`: shorter, double the step (at most
 *   `maxStep`); longer, halve it (at least `minStep`); equal, keep it.
 * - `"rate"`: size the step by the measured rate: IDs taken since the previous reservation
 *   divided by the time since, times `segmentDuration`; moving at most ×16 up and ÷2 down per
 *   reservation, within `minStep`..`maxStep`.
 *
 * @example Bursty traffic: follow the measured rate
 * ```ts
 * import { KvId, type StepRule } from "@kvid/core";
 * import assert from "node:assert/strict";
 *
 * const stepRule: StepRule = "rate"; // settles in a few reservations, where doubling takes many
 * const EVENT_ID = new KvId("event", { stepRule, segmentDuration: 60_000 });
 * assert.ok(EVENT_ID.stats().step === 1); // every rule starts at minStep
 * ```
 */
export type StepRule = "doubling" | "rate";

const RATE_MAX_GROWTH = 16;
/**
 * Round trips a step must outlast at the rate seen: a step the callers use up in fewer makes them
 * wait for the next reservation, however early it starts. 8: the prefetch lead (4 round trips)
 * twice over, so a prefetch started at the lead lands with IDs to spare. On 10,000 names from
 * cold (bench/deploy_bench.ts) it cut the calls that waited after the first second from 40,000
 * to 0.
 */
const RAMP_ROUND_TRIPS = 8;

/**
 * The step policy. Pure: the caller passes the time and how many IDs were taken.
 *
 * Both rules keep the step within `minStep`..`maxStep`, start at `initialStep`, and react only at a
 * reservation. Under both, the step is at least what the callers take in 8 round trips at the rate
 * seen since the previous reservation (since the first one started, for the first): a new name
 * under load skips the doublings that would each make its callers wait, while an idle one stays
 * small (one call on a new name: 8 IDs). The doubling rule needs about log2(target / minStep) reservations to reach a
 * target and then swings around it (with prefetch, a step is decided from the segment before
 * last, so it can swing by more than ×2); the rate rule gets within ×2 of it in a few.
 */
export class StepSizer {
  /** The step the next reservation asks for. */
  step: number;
  readonly #min: number;
  readonly #max: number;
  readonly #duration: number;
  readonly #rule: StepRule;
  #lastAt: number | undefined;
  #lastTaken = 0;

  /**
   * @param minStep Smallest step, the first one too.
   * @param maxStep Largest step.
   * @param segmentDuration Target time between reservations, in ms.
   * @param rule How the step adapts.
   * @param initialStep The first step, `minStep`..`maxStep`; default `minStep`.
   */
  constructor(
    minStep: number,
    maxStep: number,
    segmentDuration: number,
    rule: StepRule,
    initialStep: number = minStep,
  ) {
    this.#min = minStep;
    this.#max = maxStep;
    this.#duration = segmentDuration;
    this.#rule = rule;
    this.step = initialStep;
  }

  /** Start from `step` (a remembered one), brought within `minStep`..`maxStep`. */
  resume(step: number): void {
    this.step = Math.min(Math.max(step, this.#min), this.#max);
  }

  /**
   * How many IDs the next reservation asks for when calls wait for `demand`: at least the step,
   * at most `maxStep`.
   */
  count(demand: number): number {
    return Math.min(Math.max(this.step, demand), this.#max);
  }

  /**
   * Record a reservation completed at `now` (ms) that took `tripMs` (its round trip), when `taken`
   * IDs in all had been taken or asked for, and return the step for the next one.
   */
  reserved(now: number, taken: number, tripMs = 0): number {
    const lastAt = this.#lastAt;
    const lastTaken = this.#lastTaken;
    this.#lastAt = now;
    this.#lastTaken = taken;
    // The rate since the previous reservation, or over the first one's round trip.
    const since = lastAt ?? now - tripMs;
    const rate = now > since ? (taken - lastTaken) / (now - since) : 0; // IDs per ms
    // First reservation, or a clock that went back: no measure, the step stays.
    if (lastAt !== undefined && now >= lastAt) {
      const elapsed = now - lastAt;
      if (this.#rule === "doubling") {
        if (elapsed < this.#duration) this.step = Math.min(this.step * 2, this.#max);
        else if (elapsed > this.#duration) {
          this.step = Math.max(Math.floor(this.step / 2), this.#min);
        }
      } else {
        const wanted = Math.ceil(rate * this.#duration);
        const low = Math.max(this.#min, Math.floor(this.step / 2));
        const high = Math.min(this.#max, this.step * RATE_MAX_GROWTH);
        this.step = Math.min(Math.max(wanted, low), high);
      }
    }
    // Ramp-up: never a step the callers would use up within RAMP_ROUND_TRIPS round trips.
    if (tripMs > 0 && rate > 0) {
      const outlast = Math.ceil(rate * tripMs * RAMP_ROUND_TRIPS);
      if (outlast > this.step) this.step = Math.min(outlast, this.#max);
    }
    return this.step;
  }
}
