/**
 * `InterleavedStore`'s own bookkeeping of its members, on Deno KV members in memory (they record
 * the layout; no server needed): the cycle each member reached through it (a member found below
 * it is raised above it, even when the caller passes no floor: a generator without `guard`;
 * found by the `interleaved/member-rollback-mark` mutation, which no other test caught), and the
 * rotation of the first member tried.
 */

import "../../support/deadline.ts"; // a time limit on every test of this file
import assert from "node:assert/strict";
import { DenoKvStore } from "../../../src/stores/deno_kv/deno_kv_store.ts";
import { InterleavedStore } from "../../../src/stores/interleaved/interleaved_store.ts";
import type { IdRange, ReserveOptions } from "../../../src/stores/mod.ts";

const NO_FLOOR: ReserveOptions = { floor: 0n, raiseTo: 0n, guard: false, exact: true };

Deno.test("interleaved: a member lowered below this store's own last reply is raised above it, with no floor given", async () => {
  using kvA = await Deno.openKv(":memory:");
  using kvB = await Deno.openKv(":memory:");
  const a = new DenoKvStore(kvA);
  const b = new DenoKvStore(kvB);
  const store = new InterleavedStore([a, b], { block: 10 });
  const before: IdRange[] = [];
  for (let i = 0; i < 4; i++) {
    const r = await store.reserve("kvid", "mark", 10, NO_FLOOR);
    assert.equal(r.raised, false);
    before.push(...r.ranges);
  }
  // Both members lose what they counted (their layouts stay): back to cycle 0.
  await kvA.set(a.kvKey("kvid", "mark"), new Deno.KvU64(0n));
  await kvB.set(b.kvKey("kvid", "mark"), new Deno.KvU64(0n));
  let raised = 0;
  for (let i = 0; i < 2; i++) {
    const r = await store.reserve("kvid", "mark", 10, NO_FLOOR);
    if (r.raised) raised++;
    for (const range of r.ranges) {
      for (const old of before) {
        assert.ok(range.last < old.first || range.first > old.last, "an ID handed out twice");
      }
    }
  }
  assert.equal(raised, 2, "each lowered member says it was raised");
});

Deno.test("interleaved: each reservation starts at the member after the last one that served", async () => {
  const kvs = await Promise.all([0, 1, 2].map(() => Deno.openKv(":memory:")));
  try {
    const store = new InterleavedStore(kvs.map((kv) => new DenoKvStore(kv)), { block: 5 });
    const served: number[] = [];
    for (let i = 0; i < 6; i++) {
      const r = await store.reserve("kvid", "rotation", 5, NO_FLOOR);
      assert.equal(r.ranges.length, 1);
      // Block j of cycle c is member j's: IDs (c * 3 + j) * 5 + 1 ..
      served.push(Number(((r.ranges[0].first - 1n) / 5n) % 3n));
    }
    for (let i = 1; i < served.length; i++) {
      assert.equal(served[i], (served[i - 1] + 1) % 3, `members in turn: ${served}`);
    }
  } finally {
    for (const kv of kvs) kv.close();
  }
});

Deno.test("interleaved: a floor between block edges starts at the first block above it, on every member", async () => {
  using kvA = await Deno.openKv(":memory:");
  using kvB = await Deno.openKv(":memory:");
  const store = new InterleavedStore([new DenoKvStore(kvA), new DenoKvStore(kvB)], { block: 10 });
  // Floor 25: block 2 (21..30) holds 21..25, which the floor says are issued; each member jumps
  // to its first block starting above 25: member 0 to 41..50, member 1 to 31..40.
  const firsts: bigint[] = [];
  for (let i = 0; i < 2; i++) {
    const r = await store.reserve("kvid", "floored", 10, {
      floor: 25n,
      raiseTo: 25n,
      guard: true,
      exact: true,
    });
    for (const range of r.ranges) assert.ok(range.first > 25n, `got ${range.first}..`);
    firsts.push(r.ranges[0].first);
  }
  assert.deepEqual(firsts.sort(), [31n, 41n]);
});
