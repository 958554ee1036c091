/**
 * The double buffer: the segment being served and what was reserved ahead of it.
 *
 * @module
 */

import { Segment } from "./segment.ts";
import type { IdRange } from "../contract/store.ts";

/** Why {@linkcode SegmentBuffer.add} refused a reservation. */
export type Refusal = "unsafe" | "rollback";

/**
 * The current segment and the ones reserved ahead (one reservation: usually one range, several
 * when a store interleaves blocks). A range is accepted only above every ID this buffer ever
 * held (its high-water mark), so what it hands out strictly increases even if the store's
 * counter went backwards.
 *
 * The current segment lives in the buffer's own fields (`first`, `firstNumber`, `size`, `used`,
 * `prefetchFrom`), not in a {@linkcode Segment} of its own: `KvId.next()` reads them on every
 * call, one object away; the segments ahead are only read when they become current.
 *
 * Pure and synchronous: no I/O, no clock.
 */
export class SegmentBuffer {
  // Initialised to small integers, so V8 keeps them as such (a field first set to undefined
  // would stay a tagged value of any kind, slower to read and write).
  /** The first ID of the current segment. */
  first = 1n;
  /** `first` as a number; exact whenever `first` is a safe integer. */
  firstNumber = 1;
  /** How many IDs the current segment holds (0 before the first reservation). */
  size = 0;
  /** How many IDs of the current segment have been handed out. */
  used = 0;
  /**
   * The index of the current segment whose taking leaves at most the prefetch mark's IDs, so the
   * next reservation should start. `size` (never) when prefetch is off or the mark is spent.
   */
  prefetchFrom = 0;
  /** Segments reserved ahead, switched to in order when the current one runs out. */
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
    let n = this.size - this.used;
    for (const s of this.ahead) n += s.size;
    return n;
  }

  /** True when nothing is reserved ahead and the current segment passed its prefetch mark. */
  get wantsNext(): boolean {
    return this.ahead.length === 0 && this.used > this.prefetchFrom;
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
      if (this.used >= this.size && this.ahead.length === 0) this.#open(segment);
      else this.ahead.push(segment);
    }
    // What follows the current segment is buffered, so its mark is spent: the rest of it is
    // handed out on KvId.next()'s fast branch, which only compares `used` with `prefetchFrom`.
    if (this.ahead.length > 0 && this.prefetchFrom < this.size) this.prefetchFrom = this.size;
    return total;
  }

  /** When the current segment is used up and one is ahead, make it current. True if it did. */
  advance(): boolean {
    if (this.used < this.size || this.ahead.length === 0) return false;
    this.#open(this.ahead.shift()!);
    return true;
  }

  /** Make `s` the current segment. */
  #open(s: Segment): void {
    this.first = s.first;
    this.firstNumber = s.firstNumber;
    this.size = s.size;
    this.used = 0;
    this.prefetchFrom = s.prefetchFrom;
  }

  /**
   * The unused IDs at the top of the buffer, contiguous up to `high` (the end of the last
   * reservation): what `close()` may give back to the counter. Undefined when the top ID was
   * handed out.
   */
  unusedTail(): IdRange | undefined {
    const segments = [{ first: this.first, size: this.size, used: this.used }];
    for (const { first, size } of this.ahead) segments.push({ first, size, used: 0 });
    let first: bigint | undefined;
    let end = this.high;
    // Only the current segment, the last one looked at, can be empty or partly used; an empty
    // one stops the walk as a used-up one does.
    for (let i = segments.length - 1; i >= 0; i--) {
      const s = segments[i];
      if (s.first + BigInt(s.size) - 1n !== end || s.used >= s.size) break;
      first = s.first + BigInt(s.used);
      end = s.first - 1n;
    }
    return first === undefined ? undefined : { first, last: this.high };
  }

  /**
   * Every unused ID buffered, as increasing ranges (contiguous segments merged): what `close()`
   * gives back to a store with a pool of given-back ranges.
   */
  unusedRanges(): IdRange[] {
    const out: IdRange[] = [];
    const push = (first: bigint, n: number) => {
      if (n <= 0) return;
      const last = first + BigInt(n) - 1n;
      const prev = out.at(-1);
      if (prev !== undefined && prev.last + 1n === first) prev.last = last;
      else out.push({ first, last });
    };
    push(this.first + BigInt(this.used), this.size - this.used);
    for (const s of this.ahead) push(s.first, s.size);
    return out;
  }

  /** Drop everything buffered (the high-water mark stays). */
  clear(): void {
    this.size = 0;
    this.used = 0;
    this.prefetchFrom = 0;
    this.ahead = [];
  }
}
