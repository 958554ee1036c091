/**
 * A segment: a reserved range of IDs waiting its turn in the buffer.
 *
 * @module
 */

/**
 * The IDs `first .. first + size - 1`, reserved and not yet handed out.
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
  /**
   * The index whose taking leaves at most `leftAtMark` IDs in this range, so the next
   * reservation should start. `size` (never) when this range has no mark.
   */
  readonly prefetchFrom: number;

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
}
