/**
 * Unit tests of the prefetch lead (src/engine/prefetch.ts): pure, handed the time, the IDs taken
 * and the round trip. How the lead moves the buffer's mark is in tests/engine/flow_control_test.ts.
 */

import "../support/deadline.ts"; // a time limit on every test of this file
import assert from "node:assert/strict";
import { PrefetchLead } from "../../src/engine/prefetch.ts";

Deno.test("the lead is 4 round trips of IDs at the rate since the previous reservation", () => {
  const lead = new PrefetchLead();
  assert.equal(lead.reserved(1_000, 0, 5), 0, "the first reservation measures no rate");
  // 10,000 IDs in 100 ms: 100 a ms; 5 ms round trips: 2,000 IDs.
  assert.equal(lead.reserved(1_100, 10_000, 5), 2_000);
  // Idle since: no lead.
  assert.equal(lead.reserved(2_100, 10_000, 5), 0);
});

Deno.test("the slowest recent round trip counts, forgotten by a fifth per reservation", () => {
  const lead = new PrefetchLead();
  lead.reserved(0, 0, 1);
  assert.equal(lead.reserved(10, 1_000, 50), 100 * 50 * 4); // 100 IDs/ms, a 50 ms trip
  // A fast trip now: the slow one still counts, at 0.8 of it.
  assert.equal(lead.reserved(20, 2_000, 1), 100 * 40 * 4);
  assert.equal(lead.reserved(30, 3_000, 1), 100 * 32 * 4);
});

Deno.test("a clock that went back gives no rate, and the next reading measures from it", () => {
  const lead = new PrefetchLead();
  lead.reserved(1_000, 0, 2);
  assert.equal(lead.reserved(900, 5_000, 2), 0);
  assert.equal(lead.reserved(910, 6_000, 2), 100 * 2 * 4, "1,000 IDs in 10 ms since the 900");
});

Deno.test("two reservations in the same ms measure over 1 ms, not a division by zero", () => {
  const lead = new PrefetchLead();
  lead.reserved(5, 0, 1);
  assert.equal(lead.reserved(5, 300, 1), 300 * 1 * 4);
});
