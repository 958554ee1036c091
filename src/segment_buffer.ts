/**
 * The double buffer: the segment being served and what was reserved ahead of it.
 *
 * @module
 */

import { EMPTY_SEGMENT, Segment } from "./segment.ts";
import type { IdRange } from "./store_contract.ts";

/** Why {@linkcode SegmentBuffer.add} refused a reservation. */
export type Refusal = "unsafe" | "rollback";

/**
 * The current segment and the ones reserved ahead (one reservation: usually one range, several
 * when a store interleaves blocks). A range is accepted only above every ID this buffer ever
 * held (its high-water mark), so what it hands out strictly increases even if the store's
 * counter went backwards.
 *
 * Pure and synchronous: no I/O, no clock.
 */
export class SegmentBuffer {
  /** The segment IDs are taken from. */
  current: Segment = EMPTY_SEGMENT;
  /** Segments reserved ahead, switched to in order when `current` runs out. */
  ahead: Segment[] = [];
  /** The highest ID ever accepted, 0 before the first. */
  high = 0n;
  /** IDs of reserved ranges that were dropped because they were not above `high`. */
  skipped = 0n;
  readonly #prefetchAt: number;
  readonly #safeOnly: boolean;

  /**
   * @param options `prefetchAt`: fraction of a reservation left when the next is wanted (0:
   *   off). `safeOnly`: cut ranges at `Number.MAX_SAFE_INTEGER` (number mode).
   */
  constructor(options: { prefetchAt: number; safeOnly: boolean }) {
    this.#prefetchAt = options.prefetchAt;
    this.#safeOnly = options.safeOnly;
  }

  /** IDs buffered in all segments. */
  get remaining(): number {
    let n = this.current.remaining;
    for (const s of this.ahead) n += s.remaining;
    return n;
  }

  /** True when nothing is reserved ahead and the current segment passed its prefetch mark. */
  get wantsNext(): boolean {
    return this.ahead.length === 0 && this.current.used > this.current.prefetchFrom;
  }

  /**
   * Add the ranges of one reservation, in increasing order, behind what is buffered. With
   * prefetch on, the next reservation is wanted when `prefetchAt` of it is left, or when
   * `leadIds` are left if that is more. Returns how many IDs were added, or why none could be.
   */
  add(ranges: readonly IdRange[], leadIds = 0): number | Refusal {
    const kept: IdRange[] = [];
    let unsafe = false;
    for (let { first, last } of ranges) {
      if (first <= this.high) {
        this.skipped += (last < this.high ? last : this.high) - first + 1n;
        first = this.high + 1n;
      }
      if (this.#safeOnly && last > BigInt(Number.MAX_SAFE_INTEGER)) {
        unsafe = true;
        last = BigInt(Number.MAX_SAFE_INTEGER);
      }
      if (last < first) continue;
      kept.push({ first, last });
      this.high = last;
    }
    if (kept.length === 0) return unsafe ? "unsafe" : "rollback";
    let total = 0;
    for (const r of kept) total += Number(r.last - r.first + 1n);
    const leftAtMark = this.#prefetchAt > 0
      ? Math.max(Math.floor(this.#prefetchAt * total), Math.ceil(leadIds))
      : -1;
    for (let i = 0; i < kept.length; i++) {
      const { first, last } = kept[i];
      const size = Number(last - first + 1n);
      // Only the last range has a mark: prefetch once `prefetchAt` of the whole is left.
      const segment = new Segment(first, size, i === kept.length - 1 ? leftAtMark : -1);
      if (this.current.remaining === 0 && this.ahead.length === 0) this.current = segment;
      else this.ahead.push(segment);
    }
    // What follows the current segment is buffered, so its mark is spent: the rest of it is
    // handed out on KvId.next()'s fast branch, which only compares `used` with `prefetchFrom`.
    if (this.ahead.length > 0) this.current.spendMark();
    return total;
  }

  /** When `current` is used up and a segment is ahead, make it current. True if it did. */
  advance(): boolean {
    if (this.current.remaining > 0 || this.ahead.length === 0) return false;
    this.current = this.ahead.shift()!;
    return true;
  }

  /**
   * The unused IDs at the top of the buffer, contiguous up to `high` (the end of the last
   * reservation): what `close()` may give back to the counter. Undefined when the top ID was
   * handed out.
   */
  unusedTail(): IdRange | undefined {
    const segments = [this.current, ...this.ahead];
    let first: bigint | undefined;
    let end = this.high;
    for (let i = segments.length - 1; i >= 0; i--) {
      const s = segments[i];
      if (s.size === 0) continue;
      if (s.first + BigInt(s.size) - 1n !== end || s.used >= s.size) break;
      first = s.first + BigInt(s.used);
      if (s.used > 0) break;
      end = s.first - 1n;
    }
    return first === undefined ? undefined : { first, last: this.high };
  }

  /** Drop everything buffered (the high-water mark stays). */
  clear(): void {
    this.current = EMPTY_SEGMENT;
    this.ahead = [];
  }
}
