/**
 * What `close()` gives back: the unused IDs buffered, and a reservation that landed after it.
 * Pure: ranges in, ranges out.
 *
 * @module
 */

import type { IdRange } from "../contract/store.ts";

/** A reservation that landed after `close()`: its range may be given back too. */
export interface LateReservation {
  /** The ranges it reserved. */
  readonly ranges: readonly IdRange[];
  /** The store raised the counter for it (found below the mark): nothing of it goes back. */
  readonly raised: boolean;
}

/**
 * Every unused range for a store with a pool of given-back ranges: those buffered at close
 * (`unused`), and a late reservation's when all of it is above everything held (`high`);
 * contiguous ranges merged. A late range at or below `high` is a rollback: never given back.
 *
 * @example
 * ```ts
 * import { rangesToGiveBack } from "./give_back.ts";
 * import assert from "node:assert/strict";
 *
 * const late = { ranges: [{ first: 11n, last: 20n }], raised: false };
 * const out = rangesToGiveBack([{ first: 5n, last: 10n }], late, 10n);
 * assert.deepEqual(out, [{ first: 5n, last: 20n }]);
 * ```
 */
export function rangesToGiveBack(
  unused: IdRange[],
  late: LateReservation | undefined,
  high: bigint,
): IdRange[] {
  if (late === undefined || late.raised) return unused;
  const above = late.ranges.filter((r) => r.first > high);
  if (above.length !== late.ranges.length) return unused;
  const out: IdRange[] = [];
  for (const r of [...unused, ...above]) {
    const prev = out.at(-1);
    if (prev !== undefined && prev.last + 1n === r.first) {
      out[out.length - 1] = { ...prev, last: r.last };
    } else out.push(r);
  }
  return out;
}

/**
 * For a store that can only release the top of the counter: the unused IDs ending at the
 * counter's value as the generator last saw it, if any (`tail`, the buffer's contiguous unused
 * top, extended by a late reservation's single range above everything held).
 *
 * @example
 * ```ts
 * import { rangeToRelease } from "./give_back.ts";
 * import assert from "node:assert/strict";
 *
 * const late = { ranges: [{ first: 11n, last: 20n }], raised: false };
 * assert.deepEqual(rangeToRelease({ first: 8n, last: 10n }, late, 10n), { first: 8n, last: 20n });
 * assert.ok(rangeToRelease(undefined, { ...late, raised: true }, 10n) === undefined);
 * ```
 */
export function rangeToRelease(
  tail: IdRange | undefined,
  late: LateReservation | undefined,
  high: bigint,
): IdRange | undefined {
  if (late === undefined) return tail;
  const r = late.ranges.length === 1 && !late.raised ? late.ranges[0] : undefined;
  // Only IDs above everything this generator held: a late range below that is a rollback.
  if (r === undefined || r.first <= high) return undefined;
  return tail !== undefined && tail.last + 1n === r.first ? { first: tail.first, last: r.last } : r;
}
