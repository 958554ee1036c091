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
 * The step policy. Pure: the caller passes the time and how many IDs were taken.
 *
 * Both rules keep the step within `minStep`..`maxStep`, start at `initialStep`, and react only at a
 * reservation. The doubling rule needs about log2(target / minStep) reservations to reach a
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

  /**
   * Record a reservation completed at `now` (ms), when `taken` IDs in all had been taken or asked
   * for, and return the step for the next one.
   */
  reserved(now: number, taken: number): number {
    const lastAt = this.#lastAt;
    const lastTaken = this.#lastTaken;
    this.#lastAt = now;
    this.#lastTaken = taken;
    // First reservation, or a clock that went back: no measure, the step stays.
    if (lastAt === undefined || !(now >= lastAt)) return this.step;
    const elapsed = now - lastAt;
    if (this.#rule === "doubling") {
      if (elapsed < this.#duration) this.step = Math.min(this.step * 2, this.#max);
      else if (elapsed > this.#duration) this.step = Math.max(Math.floor(this.step / 2), this.#min);
      return this.step;
    }
    const rate = (taken - lastTaken) / Math.max(elapsed, 1e-3); // IDs per ms
    const wanted = Math.ceil(rate * this.#duration);
    const low = Math.max(this.#min, Math.floor(this.step / 2));
    const high = Math.min(this.#max, this.step * RATE_MAX_GROWTH);
    this.step = Math.min(Math.max(wanted, low), high);
    return this.step;
  }
}
