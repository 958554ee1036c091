/**
 * The reservation latency histogram: its buckets and the running counts per generator.
 *
 * @module
 */

/** Upper bounds of the reservation latency buckets, in seconds. */
export const BUCKETS: readonly number[] = [
  0.0005,
  0.001,
  0.0025,
  0.005,
  0.01,
  0.025,
  0.05,
  0.1,
  0.25,
  0.5,
  1,
  2.5,
  5,
  10,
];

/** A cumulative histogram of durations in seconds. */
export class Histogram {
  readonly counts: number[] = BUCKETS.map(() => 0);
  count = 0;
  sum = 0;

  /** Record one duration. */
  observe(seconds: number): void {
    this.count++;
    this.sum += seconds;
    for (let i = 0; i < BUCKETS.length; i++) if (seconds <= BUCKETS[i]) this.counts[i]++;
  }
}
