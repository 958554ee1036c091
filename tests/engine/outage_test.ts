/**
 * Unit tests of the outage state machine (src/engine/outage.ts): pure, so every transition is
 * handed its time and its randomness here; no timer, no sleep, no store. The generator's use of
 * it against real servers is in tests/faults/fail_fast_test.ts and tests/faults/down_test.ts.
 */

import "../support/deadline.ts"; // a time limit on every test of this file
import assert from "node:assert/strict";
import { KvIdError } from "../../mod.ts";
import { backoff, Outage } from "../../src/engine/outage.ts";

const where = { key: "kvid", field: "order" };
const lost = () => new KvIdError("connection", "connection refused", where);
const refused = () => new KvIdError("config", "AOF is off", where);
const half = () => 0.5;

Deno.test("ok -> failing -> ok: a transient failure is retried, a success clears it", () => {
  const o = new Outage({ failFast: true, timeout: 1_000, ...where });
  assert.equal(o.state, "ok");
  assert.equal(o.failed(lost(), 100, 110, half), "retry");
  assert.equal(o.state, "failing");
  assert.equal(o.failures, 1);
  assert.equal(o.failuresInRow, 1);
  assert.equal(o.failingSince, 100);
  assert.equal(o.lastError?.code, "connection");
  // 20 ms for the first failure, half fixed, half random: 10 + 0.5 * 10.
  assert.equal(o.retryAt, 110 + 15);
  o.succeeded();
  assert.equal(o.state, "ok");
  assert.equal(o.retryAt, 0);
  assert.equal(o.lastError, undefined);
  assert.equal(o.failures, 1, "the total stays for stats()");
  assert.equal(o.failuresInRow, 0);
});

Deno.test("failingSince is when the first failure in a row began, not the last", () => {
  const o = new Outage({ failFast: true, timeout: 1_000, ...where });
  o.failed(lost(), 100, 110, half);
  o.failed(lost(), 200, 210, half);
  assert.equal(o.failingSince, 100);
  assert.equal(o.failuresInRow, 2);
  o.succeeded();
  o.failed(lost(), 500, 510, half);
  assert.equal(o.failingSince, 500);
});

Deno.test("a refusal is told at once, and turns calls away from memory until the backoff ends", () => {
  const o = new Outage({ failFast: true, timeout: 1_000, ...where });
  assert.equal(o.failed(refused(), 0, 10, half), "refused");
  assert.equal(o.retryAt, 25);
  assert.equal(o.turnAway(24, false)?.code, "config");
  assert.equal(o.turnAway(25, false), undefined, "retried once the backoff ended");
});

Deno.test("an attempt that took the whole timeout is hung: the store is then known down", () => {
  const o = new Outage({ failFast: true, timeout: 1_000, ...where });
  assert.equal(o.failed(lost(), 0, 999, half), "retry");
  assert.equal(o.failed(lost(), 1_000, 2_000, half), "hung");
  assert.equal(o.state, "failing", "markDown is the generator's step");
  assert.ok(o.markDown(2_000));
  assert.equal(o.state, "down");
  assert.equal(o.downSince, 2_000);
  assert.ok(o.probeWanted);
  assert.ok(!o.markDown(2_500), "once");
  assert.equal(o.downSince, 2_000);
  assert.equal(o.failed(lost(), 2_500, 2_600, half), "down", "while down, callers are told so");
});

Deno.test("down: calls are turned away only while a probe is on its way, and ask for another", () => {
  const o = new Outage({ failFast: true, timeout: 1_000, ...where });
  o.failed(lost(), 0, 10, half);
  o.markDown(1_000);
  o.probeWanted = false; // the probe started
  assert.equal(o.turnAway(1_100, false), undefined, "no probe: the call waits for one");
  const e = o.turnAway(1_234, true);
  assert.ok(e instanceof KvIdError);
  assert.equal(e.code, "unavailable");
  assert.match(e.message, /no reservation succeeded for 1234 ms/);
  assert.equal(e.cause, o.lastError, "the last store error is the cause");
  assert.ok(o.probeWanted, "a call turned away wants another probe");
  o.succeeded();
  assert.equal(o.state, "ok");
  assert.equal(o.turnAway(1_300, true), undefined);
});

Deno.test("without failFast the store is never known down", () => {
  const o = new Outage({ failFast: false, timeout: 1_000, ...where });
  assert.equal(o.failed(lost(), 0, 1_000, half), "hung");
  assert.ok(!o.markDown(1_000));
  assert.equal(o.state, "failing");
  assert.equal(o.turnAway(1_001, true), undefined);
});

Deno.test("backoff doubles from 20 ms, capped by half the timeout and by 2 s, half of it jitter", () => {
  assert.equal(backoff(1, 1_000, () => 0), 10);
  assert.equal(backoff(1, 1_000, () => 1), 20);
  assert.equal(backoff(4, 1_000, () => 1), 160);
  assert.equal(backoff(5, 1_000, () => 0), 160, "after 5 failures: 160..320 ms");
  assert.equal(backoff(5, 1_000, () => 1), 320);
  assert.equal(backoff(20, 1_000, () => 1), 1_000, "half the timeout (here 2 s / 2)");
  assert.equal(backoff(20, 10_000, () => 1), 2_000, "never more than 2 s");
  assert.equal(backoff(1_000, 10_000, () => 0), 1_000, "no overflow after many failures");
  const o = new Outage({ failFast: true, timeout: 100, ...where });
  for (let i = 0; i < 10; i++) o.failed(lost(), 0, 0, () => 1);
  assert.equal(o.retryAt, 50, "the generator's cap is half its timeout");
});

Deno.test("the verdict and the down error measure from when the failures began, at any clock", () => {
  const o = new Outage({ failFast: true, timeout: 1_000, ...where });
  assert.equal(o.probeWanted, false, "no probe wanted before the store is known down");
  // Late on the clock: an attempt of 10 ms is a retry, not a hang.
  assert.equal(o.failed(lost(), 50_000, 50_010, half), "retry");
  assert.equal(o.failed(lost(), 50_020, 51_020, half), "hung", "the whole timeout");
  assert.equal(o.markDown(51_020), true);
  assert.match(o.downError(51_520).message, /no reservation succeeded for 1520 ms/);
});
