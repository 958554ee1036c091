/**
 * `InterleavedStore` remembers, per counter, the cycle each member reached through it: a member
 * found below that (its counter lowered behind the store's back: a restore, a lost write) is
 * raised above it and the reply says `raised`, even when the caller passes no floor (a generator
 * without `guard`). Found by the `interleaved/member-rollback-mark` mutation, which no other test
 * caught. Members: Deno KV in memory (they record the layout; no server needed).
 */

import "./deadline.ts"; // a time limit on every test of this file
import assert from "node:assert/strict";
import { DenoKvStore } from "../src/stores/deno_kv/deno_kv_store.ts";
import { InterleavedStore } from "../src/stores/interleaved/interleaved_store.ts";
import type { IdRange, ReserveOptions } from "../src/stores/mod.ts";

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
