/**
 * Unit tests of the step rule (src/engine/step.ts), exact steps for given times and counts:
 * the doubling rule's three cases and its bounds, the rate rule's target and its growth and
 * shrink limits, the ramp-up over round trips, a clock that went back. Starts no server.
 */

import "../support/deadline.ts"; // a time limit on every test of this file
import assert from "node:assert/strict";
import { StepSizer } from "../../src/engine/step.ts";

Deno.test("step, doubling: faster than segmentDuration doubles, slower halves, equal keeps", () => {
  const s = new StepSizer(10, 1_000, 1_000, "doubling");
  assert.equal(s.reserved(0, 0), 10, "the first: no measure");
  assert.equal(s.reserved(500, 10), 20);
  assert.equal(s.reserved(1_500, 30), 20, "exactly segmentDuration: kept");
  assert.equal(s.reserved(2_000, 40), 40);
  assert.equal(s.reserved(4_000, 80), 20);
  assert.equal(s.reserved(6_000, 100), 10);
  assert.equal(s.reserved(9_000, 110), 10, "never below minStep");
  for (const want of [20, 40, 80, 160, 320, 640, 1_000, 1_000]) {
    assert.equal(s.reserved(9_001 + want, 120), want, "never above maxStep");
  }
  assert.equal(s.reserved(5_000, 130), 1_000, "the clock went back: kept");
  assert.equal(s.reserved(5_100, 140), 1_000, "measured from the clock's new reading");
  assert.equal(s.reserved(7_000, 150), 500);
});

Deno.test("step, doubling: an odd step halves down", () => {
  const s = new StepSizer(1, 100, 1_000, "doubling", 15);
  s.reserved(0, 0);
  assert.equal(s.reserved(2_000, 15), 7);
});

Deno.test("step, rate: one segmentDuration's worth, growth at most 16x, shrink at most half", () => {
  const s = new StepSizer(10, 10_000, 1_000, "rate");
  assert.equal(s.reserved(0, 0), 10);
  // 1 ID/ms wants 1,000; 16x the step (160) caps it.
  assert.equal(s.reserved(100, 100), 160);
  assert.equal(s.reserved(200, 200), 1_000);
  assert.equal(s.reserved(300, 300), 1_000, "the same rate: the same step");
  // 10 IDs in 1 s wants 10; at most half the step less: 500.
  assert.equal(s.reserved(1_300, 310), 500);
  assert.equal(s.reserved(2_300, 320), 250);
  // 3 IDs in 1,000 ms: 0.003/ms, 3 wanted, rounded up, kept above minStep.
  for (let i = 0; i < 10; i++) s.reserved(3_300 + i * 1_000, 323 + i * 3);
  assert.equal(s.step, 10);
  // 20 IDs/ms wants 20,000: capped at maxStep.
  const fast = new StepSizer(10, 10_000, 1_000, "rate", 5_000);
  fast.reserved(0, 0);
  assert.equal(fast.reserved(10, 200), 10_000);
});

Deno.test("step, rate: a rate needing a fraction of an ID rounds up", () => {
  const s = new StepSizer(1, 1_000, 1_000, "rate", 2);
  s.reserved(0, 0);
  // 3 IDs in 2,000 ms: 1.5 per segmentDuration, 2 asked.
  assert.equal(s.reserved(2_000, 3), 2);
  assert.equal(s.reserved(3_000, 6), 3);
});

Deno.test("step, rate: two reservations at the same millisecond measure no rate", () => {
  const s = new StepSizer(10, 10_000, 1_000, "rate", 400);
  s.reserved(100, 0);
  assert.equal(s.reserved(100, 400), 200, "no time passed: no rate, half the step at most");
});

Deno.test("step: the ramp-up outlasts RAMP_ROUND_TRIPS (8) round trips at the measured rate", () => {
  for (const rule of ["doubling", "rate"] as const) {
    // The first reservation: 50 IDs asked over its 10 ms round trip, 5/ms: 8 trips take 400.
    const s = new StepSizer(10, 1_000, 1_000, rule);
    assert.equal(s.reserved(100, 50, 10), 400, rule);
    const capped = new StepSizer(10, 1_000, 1_000, rule);
    assert.equal(capped.reserved(100, 500, 10), 1_000, `${rule}: at most maxStep`);
    // Slow callers: 1 ID over a 10 ms trip wants 8: the step stays.
    const slow = new StepSizer(10, 1_000, 1_000, rule);
    assert.equal(slow.reserved(100, 1, 10), 10, rule);
    // 3 IDs over a 7 ms trip: ceil(3 / 7 * 7 * 8) = 24.
    const odd = new StepSizer(1, 1_000, 1_000, rule);
    assert.equal(odd.reserved(100, 3, 7), 24, rule);
  }
  // Later reservations: the rate since the previous one, times the round trip.
  const s = new StepSizer(10, 100_000, 1_000, "doubling");
  s.reserved(0, 0);
  assert.equal(s.reserved(2_000, 4_000, 100), 1_600, "2/ms x 100 ms x 8");
});

Deno.test("step: a remembered step resumes within minStep..maxStep; a reservation's count", () => {
  const s = new StepSizer(10, 1_000, 1_000, "doubling");
  for (const [step, want] of [[500, 500], [5, 10], [5_000, 1_000], [10, 10], [1_000, 1_000]]) {
    s.resume(step);
    assert.equal(s.step, want, `resume(${step})`);
  }
  s.resume(100);
  assert.equal(s.count(1), 100, "at least the step");
  assert.equal(s.count(100), 100);
  assert.equal(s.count(250), 250, "what the waiting calls need");
  assert.equal(s.count(5_000), 1_000, "at most maxStep");
});
