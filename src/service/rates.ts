/**
 * IDs per second over the last minutes, in one-second buckets kept without a timer.
 *
 * @module
 */

/** A ring of per-second counts; a bucket is reset when its second comes round again. */
export class RateRing {
  readonly #counts: Float64Array;
  readonly #seconds: Float64Array;

  /** Keep the last `size` seconds. */
  constructor(size: number) {
    this.#counts = new Float64Array(size);
    this.#seconds = new Float64Array(size).fill(-1);
  }

  /** Count `n` at `nowMs` (epoch ms). */
  add(n: number, nowMs: number): void {
    const second = Math.floor(nowMs / 1000);
    const i = second % this.#counts.length;
    if (this.#seconds[i] !== second) {
      this.#seconds[i] = second;
      this.#counts[i] = 0;
    }
    this.#counts[i] += n;
  }

  /** The counts of the `seconds` full seconds before `nowMs`, oldest first. */
  series(nowMs: number, seconds = this.#counts.length - 1): number[] {
    const current = Math.floor(nowMs / 1000);
    const out: number[] = [];
    for (let s = current - seconds; s < current; s++) {
      const i = s % this.#counts.length;
      out.push(this.#seconds[i] === s ? this.#counts[i] : 0);
    }
    return out;
  }

  /** The mean rate over the last `seconds` full seconds. */
  rate(nowMs: number, seconds: number): number {
    let sum = 0;
    for (const n of this.series(nowMs, seconds)) sum += n;
    return sum / seconds;
  }
}
