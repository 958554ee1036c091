/**
 * Unit tests of what close() gives back (src/engine/give_back.ts), pure ranges in and out: every
 * branch the systematic mutation run (`deno task mutate:all give_back`) found no store test
 * depending on. The store paths are in tests/engine/give_back_test.ts and tests/engine/edge_cases_audit_test.ts.
 * Starts no server.
 */

import "../support/deadline.ts"; // a time limit on every test of this file
import assert from "node:assert/strict";
import { rangesToGiveBack, rangeToRelease } from "../../src/engine/give_back.ts";

const r = (first: number, last: number) => ({ first: BigInt(first), last: BigInt(last) });
const late = (...ranges: ReturnType<typeof r>[]) => ({ ranges, raised: false });

Deno.test("rangesToGiveBack: the unused ranges, and a late one only when all of it is above the mark", () => {
  const unused = [r(1, 2), r(4, 5)];
  assert.equal(rangesToGiveBack(unused, undefined, 5n), unused, "no late one: as buffered");
  assert.equal(rangesToGiveBack(unused, { ...late(r(6, 9)), raised: true }, 5n), unused);
  // Above the mark: added, merged with a contiguous unused one.
  assert.deepEqual(rangesToGiveBack([r(5, 10)], late(r(11, 20)), 10n), [r(5, 20)]);
  assert.deepEqual(rangesToGiveBack([r(5, 8)], late(r(11, 20)), 10n), [r(5, 8), r(11, 20)]);
  assert.deepEqual(rangesToGiveBack([], late(r(11, 20)), 10n), [r(11, 20)]);
  // Contiguous unused ranges merge too, once a late range is added.
  assert.deepEqual(
    rangesToGiveBack([r(1, 2), r(3, 4), r(7, 8)], late(r(20, 25), r(26, 30)), 10n),
    [r(1, 4), r(7, 8), r(20, 30)],
  );
  // At or below the mark (a rollback): none of the late reservation goes back.
  assert.deepEqual(rangesToGiveBack([r(5, 8)], late(r(10, 19)), 10n), [r(5, 8)]);
  assert.deepEqual(rangesToGiveBack([r(5, 8)], late(r(3, 9)), 10n), [r(5, 8)]);
  assert.deepEqual(rangesToGiveBack([r(5, 8)], late(r(3, 5), r(11, 20)), 10n), [r(5, 8)]);
  assert.deepEqual(rangesToGiveBack([r(5, 8)], late(r(11, 20), r(3, 5)), 10n), [r(5, 8)]);
});

Deno.test("rangeToRelease: the tail, extended by a single late range above the mark", () => {
  assert.deepEqual(rangeToRelease(r(8, 10), undefined, 10n), r(8, 10));
  assert.equal(rangeToRelease(undefined, undefined, 10n), undefined);
  assert.deepEqual(rangeToRelease(r(8, 10), late(r(11, 20)), 10n), r(8, 20));
  assert.deepEqual(rangeToRelease(r(5, 8), late(r(11, 20)), 10n), r(11, 20), "not contiguous");
  assert.deepEqual(rangeToRelease(undefined, late(r(11, 20)), 10n), r(11, 20));
  // Raised, several ranges, at or below the mark: nothing (the tail is no longer the top).
  assert.equal(rangeToRelease(r(8, 10), { ...late(r(11, 20)), raised: true }, 10n), undefined);
  assert.equal(rangeToRelease(r(8, 10), late(r(11, 20), r(30, 40)), 10n), undefined);
  assert.equal(rangeToRelease(r(8, 10), late(r(10, 19)), 10n), undefined);
  assert.equal(rangeToRelease(r(8, 10), late(r(4, 13)), 10n), undefined);
});
