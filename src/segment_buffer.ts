/**
 * The double buffer: the segment being served and the one reserved ahead of it.
 *
 * @module
 */

import { EMPTY_SEGMENT, Segment } from "./segment.ts";

/** Why {@linkcode SegmentBuffer.add} refused a reserved range. */
export type Refusal = "unsafe" | "rollback";

/**
 * The current segment and the next one. A new range is accepted only above every ID this buffer
 * ever held (its high-water mark), so what it hands out strictly increases even if the store's
 * counter went backwards.
 *
 * Pure and synchronous: no I/O, no clock.
 */
export class SegmentBuffer {
  /** The segment IDs are taken from. */
  current: Segment = EMPTY_SEGMENT;
  /** The segment reserved ahead, switched to when `current` runs out. */
  next: Segment | undefined = undefined;
  /** The highest ID ever accepted, 0 before the first. */
  high = 0n;
  /** IDs of ranges that were cut off because they were not above `high`. */
  skipped = 0n;
  readonly #prefetchAt: number;
  readonly #safeOnly: boolean;

  /**
   * @param options `prefetchAt`: fraction of a segment left when the next is wanted (0: off).
   *   `safeOnly`: cut ranges at `Number.MAX_SAFE_INTEGER` (number mode).
   */
  constructor(options: { prefetchAt: number; safeOnly: boolean }) {
    this.#prefetchAt = options.prefetchAt;
    this.#safeOnly = options.safeOnly;
  }

  /** IDs buffered in both segments. */
  get remaining(): number {
    return this.current.remaining + (this.next?.remaining ?? 0);
  }

  /** True when nothing is reserved ahead and the current segment passed its prefetch mark. */
  get wantsNext(): boolean {
    return this.next === undefined && this.current.used > this.current.prefetchFrom;
  }

  /**
   * Add the reserved range `first..last`: as the current segment if that is used up, else as
   * the next. Returns how many IDs were added, or why none could be.
   */
  add(first: bigint, last: bigint): number | Refusal {
    if (first <= this.high) {
      this.skipped += (last < this.high ? last : this.high) - first + 1n;
      first = this.high + 1n;
    }
    if (this.#safeOnly) {
      if (first > BigInt(Number.MAX_SAFE_INTEGER)) return "unsafe";
      if (last > BigInt(Number.MAX_SAFE_INTEGER)) last = BigInt(Number.MAX_SAFE_INTEGER);
    }
    if (last < first) return "rollback";
    const segment = new Segment(first, Number(last - first + 1n), this.#prefetchAt);
    this.high = last;
    if (this.current.remaining === 0 && this.next === undefined) this.current = segment;
    else if (this.next === undefined) this.next = segment;
    else throw new Error("SegmentBuffer: both segments are full"); // the engine never does this
    return segment.size;
  }

  /** When `current` is used up and `next` is ready, make it current. Returns true if it did. */
  advance(): boolean {
    if (this.current.remaining > 0 || this.next === undefined) return false;
    this.current = this.next;
    this.next = undefined;
    return true;
  }
}
