/**
 * Dynamic step: how many IDs the next reservation asks for.
 *
 * @module
 */

/**
 * The doubling rule of the Rust `kvid` crate and Leaf: after each reservation, compare the time
 * since the previous one with `segmentDuration`. Shorter: IDs go fast, double the step (at most
 * `maxStep`). Longer: IDs go slowly, halve it (at least `minStep`). So under a steady rate the
 * step settles where one segment lasts about `segmentDuration`, within a factor of two.
 *
 * Pure: the caller passes the time.
 */
export class StepSizer {
  /** The step the next reservation asks for. */
  step: number;
  readonly #min: number;
  readonly #max: number;
  readonly #duration: number;
  #lastAt: number | undefined;

  /**
   * @param minStep Smallest step, the first one too.
   * @param maxStep Largest step.
   * @param segmentDuration Target time between reservations, in ms.
   */
  constructor(minStep: number, maxStep: number, segmentDuration: number) {
    this.#min = minStep;
    this.#max = maxStep;
    this.#duration = segmentDuration;
    this.step = minStep;
  }

  /** Record a reservation completed at `now` (ms) and return the step for the next one. */
  reserved(now: number): number {
    const last = this.#lastAt;
    this.#lastAt = now;
    if (last === undefined) return this.step;
    const elapsed = now - last;
    if (elapsed < this.#duration) this.step = Math.min(this.step * 2, this.#max);
    else if (elapsed > this.#duration) this.step = Math.max(Math.floor(this.step / 2), this.#min);
    return this.step;
  }
}
