/**
 * Fault suite, scenario 7: 10,000 concurrent callers on one generator across many segment
 * boundaries with small steps, while a second generator of the same name in the same process
 * takes IDs too. All distinct; callers served in call order; one reservation in flight each.
 */

import "../support/deadline.ts"; // a time limit on every test of this file
import assert from "node:assert/strict";
import { KvId } from "../../mod.ts";
import { openClient, Spy } from "../support/redis_clients.ts";
import { startServer } from "../support/redis_server.ts";
import { assertIncreasing, assertNoDuplicates } from "../support/faults.ts";

Deno.test({
  name: "faults: 10,000 concurrent callers and a second generator on one name: all distinct",
  timeout: 120_000,
  fn: async () => {
    await using server = await startServer();
    await using nodeRedis = await openClient("node-redis", server.url);
    await using ioredis = await openClient("ioredis", server.url);
    const spyA = new Spy(nodeRedis.redis);
    const spyB = new Spy(ioredis.redis);
    await using a = new KvId("load", { redis: spyA, minStep: 5, maxStep: 40, timeout: 30_000 });
    await using b = new KvId("load", { redis: spyB, minStep: 3, maxStep: 25, timeout: 30_000 });

    // B: bursts of concurrent calls, in a loop, until A is done.
    const fromB: number[] = [];
    let stop = false;
    const loopB = (async () => {
      for (let round = 0; !stop; round++) {
        const burst = await Promise.all([
          ...Array.from({ length: 200 }, () => b.next()),
          b.nextBatch(1 + round % 37),
        ]);
        fromB.push(...burst.flat());
      }
    })();

    const fromA: number[] = [];
    let total = 0;
    try {
      for (let round = 0; round < 3; round++) {
        // 10,000 callers at once: mostly next(), every 50th a batch of 1 to 20.
        const calls: Promise<number | number[]>[] = [];
        for (let i = 0; i < 10_000; i++) {
          calls.push(i % 50 === 49 ? a.nextBatch(1 + i % 20) : a.next());
        }
        const results = await Promise.all(calls);
        const flat = results.flat();
        total += flat.length;
        // Served in call order (FIFO), so in call order they increase.
        assertIncreasing(flat, `round ${round}`);
        fromA.push(...flat);
      }
    } finally {
      stop = true;
      await loopB;
    }

    assert.equal(fromA.length, total);
    assertNoDuplicates([fromA, fromB], "A and B");
    assertIncreasing(fromA, "A across rounds");
    assert.ok(fromB.length >= 200, `B took only ${fromB.length}`);
    // Small steps: many boundaries crossed, and never two reservations at once.
    assert.ok(spyA.calls >= total / 40, `A reserved ${spyA.calls} times for ${total} IDs`);
    assert.equal(spyA.maxInflight, 1);
    assert.equal(spyB.maxInflight, 1);
    assert.ok(spyA.counts.every((n) => n >= 5 && n <= 40), "A's steps within bounds");
  },
});
