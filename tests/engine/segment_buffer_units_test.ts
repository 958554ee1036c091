/**
 * Unit tests of the double buffer (src/engine/segment_buffer.ts, src/engine/segment.ts), the
 * part that decides which IDs are handed out: a range is kept only above every ID the buffer
 * ever held (what was cut is counted), number mode cuts at 2^53-1, the prefetch mark, the
 * segments ahead, and what close() may give back. The same paths through `KvId` against a real
 * server are in tests/engine/segment_flow_test.ts and tests/engine/kvid_test.ts. Starts no
 * server.
 */

import "../support/deadline.ts"; // a time limit on every test of this file
import assert from "node:assert/strict";
import { SegmentBuffer } from "../../src/engine/segment_buffer.ts";
import { Segment } from "../../src/engine/segment.ts";

const SAFE = BigInt(Number.MAX_SAFE_INTEGER);

/** Hand out `n` IDs as `KvId.next()` does: the current segment, then the next one ahead. */
function take(buf: SegmentBuffer, n: number): bigint[] {
  const out: bigint[] = [];
  for (let i = 0; i < n; i++) {
    if (buf.used >= buf.size && !buf.advance()) break;
    out.push(buf.first + BigInt(buf.used++));
  }
  return out;
}

function current(buf: SegmentBuffer) {
  const { first, firstNumber, size, used, prefetchFrom } = buf;
  return { first, firstNumber, size, used, prefetchFrom };
}

Deno.test("SegmentBuffer: the first range becomes the current segment", () => {
  const buf = new SegmentBuffer({ prefetchAt: 0, safeOnly: true });
  assert.equal(buf.remaining, 0);
  assert.equal(buf.high, 0n);
  assert.equal(buf.add([{ first: 5n, last: 14n }]), 10);
  assert.deepEqual(current(buf), {
    first: 5n,
    firstNumber: 5,
    size: 10,
    used: 0,
    prefetchFrom: 10,
  });
  assert.equal(buf.high, 14n);
  assert.equal(buf.remaining, 10);
  assert.deepEqual(buf.ahead, []);
  assert.equal(buf.wantsNext, false, "prefetch off: never");
  assert.deepEqual(take(buf, 3), [5n, 6n, 7n]);
  assert.equal(buf.remaining, 7);
  assert.equal(buf.add([{ first: 15n, last: 15n }]), 1, "a one-ID range");
});

Deno.test("SegmentBuffer: a range at or below the high mark is cut there, what was cut counted", () => {
  const buf = new SegmentBuffer({ prefetchAt: 0, safeOnly: true });
  buf.add([{ first: 1n, last: 10n }]);
  // Overlapping the top: 8..10 dropped, 11..12 kept.
  assert.equal(buf.add([{ first: 8n, last: 12n }]), 2);
  assert.equal(buf.skipped, 3n);
  assert.equal(buf.high, 12n);
  // Starting exactly at the mark: only the mark itself dropped.
  assert.equal(buf.add([{ first: 12n, last: 15n }]), 3);
  assert.equal(buf.skipped, 4n);
  // Wholly below: nothing kept, each of its IDs counted, the mark unchanged.
  assert.equal(buf.add([{ first: 3n, last: 9n }]), "rollback");
  assert.equal(buf.skipped, 11n);
  assert.equal(buf.high, 15n);
  // Ending exactly at the mark: all of it dropped.
  assert.equal(buf.add([{ first: 14n, last: 15n }]), "rollback");
  assert.equal(buf.skipped, 13n);
  assert.equal(buf.add([]), "rollback", "no range at all");
  // What is handed out strictly increases, whatever came in.
  const ids = take(buf, 100);
  assert.deepEqual(ids, [1n, 2n, 3n, 4n, 5n, 6n, 7n, 8n, 9n, 10n, 11n, 12n, 13n, 14n, 15n]);
});

Deno.test("SegmentBuffer: number mode cuts at 2^53-1; bigint mode does not", () => {
  const buf = new SegmentBuffer({ prefetchAt: 0, safeOnly: true });
  assert.equal(buf.add([{ first: SAFE - 2n, last: SAFE + 5n }]), 3, "cut, the safe part kept");
  assert.equal(buf.high, SAFE);
  assert.deepEqual(take(buf, 5), [SAFE - 2n, SAFE - 1n, SAFE]);
  assert.equal(buf.add([{ first: SAFE + 1n, last: SAFE + 9n }]), "unsafe");
  const exact = new SegmentBuffer({ prefetchAt: 0, safeOnly: false });
  assert.equal(exact.add([{ first: SAFE - 2n, last: SAFE + 5n }]), 8);
  assert.equal(exact.high, SAFE + 5n);
  assert.deepEqual(take(exact, 8).at(-1), SAFE + 5n);
  // Ending exactly at 2^53-1: kept whole.
  const edge = new SegmentBuffer({ prefetchAt: 0, safeOnly: true });
  assert.equal(edge.add([{ first: SAFE, last: SAFE }]), 1);
  // Below the mark, nothing cut at 2^53-1: a rollback, not unsafe.
  assert.equal(edge.add([{ first: 1n, last: 2n }]), "rollback");
  // Ending exactly at 2^53-1, below the mark: the store went back, nothing was cut (a rollback).
  assert.equal(edge.add([{ first: SAFE - 3n, last: SAFE }]), "rollback");
});

Deno.test("SegmentBuffer: several ranges of one reservation, served in order, one mark", () => {
  const buf = new SegmentBuffer({ prefetchAt: 0.5, safeOnly: true });
  const added = buf.add([{ first: 1n, last: 4n }, { first: 11n, last: 14n }, {
    first: 21n,
    last: 24n,
  }]);
  assert.equal(added, 12);
  assert.equal(buf.ahead.length, 2);
  assert.equal(buf.remaining, 12);
  // Only the last range has a mark: half of the 12 is 6, more than that range holds.
  assert.equal(buf.ahead[0].prefetchFrom, 4, "no mark");
  assert.equal(buf.ahead[1].prefetchFrom, 0);
  // The current one's mark is spent: something is buffered behind it.
  assert.equal(buf.prefetchFrom, buf.size);
  assert.deepEqual(take(buf, 12), [1n, 2n, 3n, 4n, 11n, 12n, 13n, 14n, 21n, 22n, 23n, 24n]);
  assert.equal(buf.remaining, 0);
  assert.equal(buf.high, 24n);
});

Deno.test("SegmentBuffer: the prefetch mark: prefetchAt of the reservation, or the lead", () => {
  const buf = new SegmentBuffer({ prefetchAt: 0.2, safeOnly: true });
  buf.add([{ first: 1n, last: 10n }]);
  // 2 of 10 left: wanted once the 8th is taken.
  assert.equal(buf.prefetchFrom, 7);
  take(buf, 7);
  assert.equal(buf.wantsNext, false);
  take(buf, 1);
  assert.equal(buf.wantsNext, true);
  // The next reservation lands: the current segment's mark is spent, nothing more wanted.
  buf.add([{ first: 11n, last: 20n }], 5.5);
  assert.equal(buf.wantsNext, false);
  assert.equal(buf.prefetchFrom, buf.size);
  assert.equal(buf.ahead[0].prefetchFrom, 3, "a lead of 5.5 IDs: 6 left");
  take(buf, 2);
  assert.equal(buf.advance(), true);
  assert.equal(buf.first, 11n);
  take(buf, 4);
  assert.equal(buf.wantsNext, true, "6 left");
  // A lead larger than the reservation: wanted at once.
  const lead = new SegmentBuffer({ prefetchAt: 0.2, safeOnly: true });
  lead.add([{ first: 1n, last: 10n }], 50);
  assert.equal(lead.prefetchFrom, 0);
  take(lead, 1);
  assert.equal(lead.wantsNext, true);
  // Prefetch off: the lead is not read.
  const off = new SegmentBuffer({ prefetchAt: 0, safeOnly: true });
  off.add([{ first: 1n, last: 10n }], 50);
  take(off, 10);
  assert.equal(off.wantsNext, false);
});

Deno.test("SegmentBuffer: advance only when the current one is used up and one is ahead", () => {
  const buf = new SegmentBuffer({ prefetchAt: 0, safeOnly: true });
  assert.equal(buf.advance(), false, "empty");
  buf.add([{ first: 1n, last: 2n }]);
  buf.add([{ first: 3n, last: 4n }]);
  assert.equal(buf.advance(), false, "the current one has IDs left");
  assert.equal(buf.first, 1n);
  buf.used = 2;
  assert.equal(buf.advance(), true);
  assert.deepEqual(current(buf), { first: 3n, firstNumber: 3, size: 2, used: 0, prefetchFrom: 2 });
  buf.used = 2;
  assert.equal(buf.advance(), false, "nothing ahead");
  // Used up with nothing ahead: the next reservation becomes current at once.
  buf.add([{ first: 5n, last: 6n }]);
  assert.equal(buf.first, 5n);
  assert.deepEqual(buf.ahead, []);
});

Deno.test("SegmentBuffer: the unused top close() may give back", () => {
  const buf = new SegmentBuffer({ prefetchAt: 0, safeOnly: true });
  assert.equal(buf.unusedTail(), undefined, "nothing reserved");
  buf.add([{ first: 1n, last: 10n }]);
  assert.deepEqual(buf.unusedTail(), { first: 1n, last: 10n });
  take(buf, 3);
  assert.deepEqual(buf.unusedTail(), { first: 4n, last: 10n });
  buf.add([{ first: 11n, last: 20n }]);
  assert.deepEqual(buf.unusedTail(), { first: 4n, last: 20n }, "contiguous with what is ahead");
  take(buf, 7);
  assert.deepEqual(buf.unusedTail(), { first: 11n, last: 20n }, "the current one used up");
  take(buf, 10);
  assert.equal(buf.unusedTail(), undefined, "the top ID was handed out");
  // A gap below what is ahead (another generator reserved between): only the top part.
  const gap = new SegmentBuffer({ prefetchAt: 0, safeOnly: true });
  gap.add([{ first: 1n, last: 10n }]);
  gap.add([{ first: 31n, last: 40n }]);
  assert.deepEqual(gap.unusedTail(), { first: 31n, last: 40n });
  assert.deepEqual(gap.unusedRanges(), [{ first: 1n, last: 10n }, { first: 31n, last: 40n }]);
  // The top segment partly used: from its first unused ID, nothing below it.
  gap.used = 10;
  gap.advance();
  take(gap, 2);
  assert.deepEqual(gap.unusedTail(), { first: 33n, last: 40n });
  // A range cut at 2^53-1: its unused top ends at the cut, the high mark.
  const cut = new SegmentBuffer({ prefetchAt: 0, safeOnly: true });
  cut.add([{ first: SAFE - 1n, last: SAFE + 3n }]);
  assert.deepEqual(cut.unusedTail(), { first: SAFE - 1n, last: SAFE });
});

Deno.test("SegmentBuffer: every unused ID as ranges, contiguous ones merged", () => {
  const buf = new SegmentBuffer({ prefetchAt: 0, safeOnly: true });
  assert.deepEqual(buf.unusedRanges(), []);
  buf.add([{ first: 1n, last: 5n }, { first: 6n, last: 8n }, { first: 20n, last: 22n }]);
  assert.deepEqual(buf.unusedRanges(), [{ first: 1n, last: 8n }, { first: 20n, last: 22n }]);
  take(buf, 2);
  assert.deepEqual(buf.unusedRanges(), [{ first: 3n, last: 8n }, { first: 20n, last: 22n }]);
  take(buf, 3);
  assert.deepEqual(buf.unusedRanges(), [{ first: 6n, last: 8n }, { first: 20n, last: 22n }]);
  take(buf, 6);
  assert.deepEqual(buf.unusedRanges(), []);
});

Deno.test("SegmentBuffer: clear drops what is buffered and keeps the high mark", () => {
  const buf = new SegmentBuffer({ prefetchAt: 0.2, safeOnly: true });
  buf.add([{ first: 1n, last: 10n }]);
  buf.add([{ first: 11n, last: 20n }]);
  take(buf, 3);
  buf.clear();
  assert.equal(buf.remaining, 0);
  assert.deepEqual(current(buf), { first: 1n, firstNumber: 1, size: 0, used: 0, prefetchFrom: 0 });
  assert.deepEqual(buf.ahead, []);
  assert.deepEqual(buf.unusedRanges(), []);
  assert.equal(buf.high, 20n);
  assert.equal(buf.add([{ first: 5n, last: 20n }]), "rollback", "nothing below the mark again");
  assert.equal(buf.add([{ first: 21n, last: 30n }]), 10);
  assert.equal(buf.first, 21n, "current at once");
});

Deno.test("Segment: its prefetch index from the IDs to leave", () => {
  assert.equal(new Segment(1n, 10, -1).prefetchFrom, 10, "no mark: never");
  assert.equal(new Segment(1n, 10, 0).prefetchFrom, 9, "at the last ID");
  assert.equal(new Segment(1n, 10, 2).prefetchFrom, 7);
  assert.equal(new Segment(1n, 10, 9).prefetchFrom, 0);
  assert.equal(new Segment(1n, 10, 50).prefetchFrom, 0, "never below 0");
  const s = new Segment(SAFE, 1, -1);
  assert.equal(s.first, SAFE);
  assert.equal(s.firstNumber, Number.MAX_SAFE_INTEGER);
  assert.equal(s.size, 1);
});
