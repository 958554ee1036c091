/**
 * A segment: a range of reserved IDs, handed out in order from memory.
 *
 * @module
 */

/**
 * The IDs `first .. first + size - 1`, of which the first `used` have been handed out.
 *
 * Pure and synchronous: no I/O, no clock.
 */
export class Segment {
  /** The first ID of the range. */
  readonly first: bigint;
  /** `first` as a number; exact whenever `first` is a safe integer. */
  readonly firstNumber: number;
  /** How many IDs the range holds. */
  readonly size: number;
  /** How many IDs have been handed out. */
  used = 0;
  /**
   * The index whose taking leaves at most `leftAtMark` IDs in this range, so the next
   * reservation should start. `size` (never) when prefetch is off or the mark is spent.
   */
  prefetchFrom: number;

  /**
   * @param first The first ID.
   * @param size How many IDs, >= 0.
   * @param leftAtMark How many IDs are left when the next reservation starts; -1: never.
   */
  constructor(first: bigint, size: number, leftAtMark: number) {
    this.first = first;
    this.firstNumber = Number(first);
    this.size = size;
    this.prefetchFrom = leftAtMark >= 0 ? Math.max(0, size - 1 - leftAtMark) : size;
  }

  /** The next reservation is buffered already: the rest of this range needs no mark. */
  spendMark(): void {
    if (this.prefetchFrom < this.size) this.prefetchFrom = this.size;
  }

  /** How many IDs are left. */
  get remaining(): number {
    return this.size - this.used;
  }
}

/** An empty segment, the state before the first reservation. */
export const EMPTY_SEGMENT: Segment = new Segment(1n, 0, -1);
