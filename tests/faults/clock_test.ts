/**
 * Fault suite: a `clock` option that returns garbage (NaN, Infinity, not a number, throws) or
 * goes backwards. A bad reading never reaches the wire: it is a `"config"` error before any
 * I/O, and the generator works again once the clock does; a clock going back leaves the step.
 */

import "../support/deadline.ts"; // a time limit on every test of this file
import assert from "node:assert/strict";
import { KvId } from "../../mod.ts";
import { Spy } from "../support/redis_clients.ts";
import { command, startServer } from "../support/redis_server.ts";
import { assertIncreasing, rawClient, rejectsWith } from "../support/faults.ts";

Deno.test("clock: NaN, Infinity, a string or a throw fail as config before any I/O", async () => {
  await using server = await startServer();
  const bad: [string, () => number][] = [
    ["NaN", () => NaN],
    ["Infinity", () => Infinity],
    ["-Infinity", () => -Infinity],
    ["a string", () => "12" as unknown as number],
    ["undefined", () => undefined as unknown as number],
    ["a throw", () => {
      throw new Error("no time");
    }],
  ];
  for (const [what, reading] of bad) {
    for (const stepRule of ["doubling", "rate"] as const) {
      let broken = false;
      const clock = () => broken ? reading() : 1_000;
      const spy = new Spy(rawClient(server.url));
      const name = `clock-${what}-${stepRule}`;
      await using id = new KvId(name, {
        redis: spy,
        stepRule,
        clock,
        prefetchAt: 0,
        timeout: 60_000,
      });
      assert.equal(await id.next(), 1);
      broken = true;
      const sent = spy.calls;
      const started = performance.now();
      await rejectsWith(id.next(), "config", /clock/);
      assert.ok(performance.now() - started < 30_000, `${what}: waited for the timeout`);
      assert.equal(spy.calls, sent, `${what}: a reservation went out with a bad reading`);
      // The clock heals: so does the generator, and nothing odd was ever sent.
      broken = false;
      let next: number | undefined;
      // The refusal is repeated until its short backoff ends (a few ms), then retried.
      const until = performance.now() + 10_000;
      while (next === undefined && performance.now() < until) {
        next = await id.next().catch(() => undefined);
      }
      assert.equal(next, 2, `${what}, ${stepRule}: did not recover`);
      assert.ok(spy.counts.every((n) => Number.isSafeInteger(n) && n >= 1), `${spy.counts}`);
      assert.equal(await command(server.url, "HGET", "kvid", name), String(spy.counts[0] + 1));
    }
  }
});

Deno.test("clock: a clock going backwards leaves the step, never wedges", async () => {
  await using server = await startServer();
  for (const stepRule of ["doubling", "rate"] as const) {
    let now = 1e12;
    const spy = new Spy(rawClient(server.url));
    await using id = new KvId(`clock-back-${stepRule}`, {
      redis: spy,
      stepRule,
      prefetchAt: 0,
      minStep: 10,
      maxStep: 1_000,
      segmentDuration: 1_000,
      clock: () => now,
    });
    const ids: number[] = [];
    for (let i = 0; i < 2_000; i++) {
      // Jumps back by a day every 100 IDs, forward by a little in between.
      now += i % 100 === 99 ? -86_400_000 : 1;
      ids.push(await id.next());
    }
    assertIncreasing(ids);
    assert.ok(spy.counts.every((n) => Number.isSafeInteger(n) && n >= 10 && n <= 1_000));
  }
});
