/** Assertions shared by the test files. */

import assert from "node:assert/strict";
import { KvIdError } from "../../mod.ts";

/** Fail unless every ID is greater than the one before it. */
export function assertIncreasing(
  ids: ArrayLike<number | bigint | string>,
  what = "ids",
): void {
  for (let i = 1; i < ids.length; i++) {
    if (!(ids[i] > ids[i - 1])) {
      assert.fail(`${what}: not increasing at ${i}: ${ids[i - 1]} then ${ids[i]}`);
    }
  }
}

/** Await `p` and fail unless it rejects with a KvIdError of `code` (matching `message`). */
export async function rejectsWith(
  p: Promise<unknown>,
  code: string,
  message?: RegExp,
): Promise<KvIdError> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof KvIdError, `expected a KvIdError, got ${err}`);
    assert.equal(err.code, code, `code of: ${err.message}`);
    if (message) assert.match(err.message, message);
    return err;
  }
  return assert.fail(`expected a KvIdError ${code}`);
}

/**
 * One generator's IDs kept as runs of consecutive values: memory grows with the number of
 * reservations, not with the number of IDs, so a fast machine making many more IDs in the same
 * time cannot exhaust it. Fails as soon as an ID is not greater than the one before it.
 */
export class IdRuns {
  /** Inclusive `[first, last]` runs, in increasing order. */
  readonly runs: [number, number][] = [];
  /** How many IDs were added. */
  count = 0;

  /** Add IDs in the order they were handed out. */
  add(ids: Iterable<number>): void {
    for (const id of ids) {
      const last = this.runs.at(-1);
      if (last && !(id > last[1])) assert.fail(`not increasing: ${last[1]} then ${id}`);
      if (last && id === last[1] + 1) last[1] = id;
      else this.runs.push([id, id]);
      this.count++;
    }
  }

  /** The greatest ID added (0 when none). */
  get max(): number {
    return this.runs.at(-1)?.[1] ?? 0;
  }
}

/** Fail if any ID appears in two runs, within one `IdRuns` or across several. */
export function assertDisjoint(all: readonly IdRuns[]): void {
  const runs = all.flatMap((r) => r.runs).sort((a, b) => a[0] - b[0]);
  for (let i = 1; i < runs.length; i++) {
    if (runs[i][0] <= runs[i - 1][1]) {
      assert.fail(`duplicate IDs: [${runs[i - 1]}] overlaps [${runs[i]}]`);
    }
  }
}

/**
 * What rotation over interleaved members promises for IDs taken one reservation at a time:
 * consecutive, except where a member missed its attempt's limit (at least 200 ms: an AOF fsync
 * or a Deno KV commit on a loaded disk can take that long) and was skipped, its blocks spent: a
 * gap of whole blocks. A few such gaps are the machine; a broken rotation or floor makes one a turn.
 *
 * Asserts `ids` ascend by one, but for at most `maxGaps` gaps of one or two whole blocks.
 *
 * @param ids IDs in the order they were handed out.
 * @param block The block size.
 * @param maxGaps How many skipped-member gaps to accept.
 */
export function assertConsecutiveButSkips(ids: number[], block: number, maxGaps = 3): void {
  const gaps: number[] = [];
  for (let i = 1; i < ids.length; i++) {
    const gap = ids[i] - ids[i - 1] - 1;
    if (gap === 0) continue;
    assert.ok(gap === block || gap === 2 * block, `${ids[i - 1]} then ${ids[i]}: not whole blocks`);
    assert.equal((ids[i] - 1) % block, 0, `${ids[i]} starts no block`);
    gaps.push(ids[i]);
  }
  assert.ok(gaps.length <= maxGaps, `blocks skipped before ${gaps.join(", ")}`);
}
