/**
 * Fault suite, scenario 6: a slow or hung server and lost replies, through the loopback delay
 * proxy (tests/support/proxy.ts). A reservation that times out is abandoned, its range spent: a late
 * reply never gets its IDs issued.
 */

import "../support/deadline.ts"; // a time limit on every test of this file
import assert from "node:assert/strict";
import { KvId } from "../../mod.ts";
import { CLIENTS, openClient } from "../support/redis_clients.ts";
import { startProxy } from "../support/proxy.ts";
import { command, startServer } from "../support/redis_server.ts";
import {
  assertIncreasing,
  assertNoDuplicates,
  Recorder,
  rejectsWith,
  waitUntil,
} from "../support/faults.ts";

async function take(id: KvId<number>, n: number): Promise<number[]> {
  const ids: number[] = [];
  for (let i = 0; i < n; i++) ids.push(await id.next());
  return ids;
}

for (const kind of CLIENTS) {
  Deno.test({
    name: `faults: slow server and lost replies (${kind}): abandoned ranges are spent`,
    timeout: 60_000,
    fn: async (t) => {
      await using server = await startServer();
      await using proxy = await startProxy(server);
      await using client = await openClient(kind, proxy.url);
      const counter = async (name: string) =>
        Number(await command(server.url, "HGET", "kvid", name));
      // failFast off: these steps look at every call waiting out its timeout.
      const fixed = { minStep: 10, maxStep: 10, prefetchAt: 0, failFast: false };

      await t.step("a hung server: the call times out, the late reply is dropped", async () => {
        const rec = new Recorder(client.redis);
        await using id = new KvId("hung", { redis: rec, ...fixed, timeout: 300 });
        const first = await take(id, 10); // 1..10
        proxy.pause();
        await rejectsWith(id.next(), "timeout", /300 ms/);
        const late = rec.calls.at(-1)!;
        assert.equal(late.end, undefined, "the reply is still held");
        // The caller's deadline and the reservation's own timeout are both 300 ms: let the
        // reservation give up too before the reply is let through.
        await waitUntil(() => id.stats().failures >= 1, "the reservation to be abandoned");
        proxy.resume();
        await late.settled;
        assert.equal(late.value, 20n, "the server applied it: 11..20");
        const after = await take(id, 10);
        assert.deepEqual(after, [21, 22, 23, 24, 25, 26, 27, 28, 29, 30], "11..20 is spent");
        assertIncreasing([...first, ...after]);
        assert.equal(await counter("hung"), 30);
      });

      await t.step("a reply lost with its connection after the server applied it", async () => {
        await using id = new KvId("lost", { redis: client.redis, ...fixed, timeout: 5_000 });
        const first = await take(id, 10); // 1..10
        proxy.delayMs = 300;
        const pending = id.next();
        // The server applied the reservation (11..20); its reply is still in the proxy.
        await waitUntil(async () => (await counter("lost")) === 20, "the server to apply it");
        proxy.dropConnections();
        proxy.delayMs = 0;
        // node-redis fails the command and the generator retries; ioredis sends it again
        // after reconnecting. Either way 11..20 is never issued.
        const next = await pending;
        assert.ok(next > 20, `issued ${next} from the lost range`);
        const after = [next, ...await take(id, 9)];
        assertIncreasing([...first, ...after]);
        assert.equal(after.at(-1)! - after[0], 9);
        assert.ok((await counter("lost")) >= 30);
      });

      await t.step("every reply slower than the timeout: none of their IDs issued", async () => {
        const rec = new Recorder(client.redis);
        const timeout = 200;
        await using id = new KvId("slow", { redis: rec, ...fixed, timeout });
        const ids = await take(id, 10);
        proxy.delayMs = 150; // 300 ms a round trip
        for (let i = 0; i < 3; i++) await rejectsWith(id.next(), "timeout");
        proxy.delayMs = 0;
        // Replies queued behind the slow ones are late too until the pipe drains.
        for (let tries = 0; ids.length < 60; tries++) {
          assert.ok(tries < 200, "never recovered");
          try {
            ids.push(await id.next());
          } catch (err) {
            await rejectsWith(Promise.reject(err), "timeout");
          }
        }
        await Promise.all(rec.calls.map((c) => c.settled));
        assertIncreasing(ids);
        assertNoDuplicates([ids]);
        const served = new Set(ids);
        const ranges = rec.ranges();
        // Replies later than the timeout by far were abandoned: none of their IDs issued.
        // (The recorder starts its clock after the generator does, so its latency is a lower
        // bound; near the timeout it cannot tell, so those are left out.)
        const late = ranges.filter((r) => r.latency > timeout + 20);
        // At least the first reservation of the slow spell (300 ms a round trip, 200 ms timeout).
        assert.ok(late.length >= 1, `${late.length} late replies`);
        for (const r of late) {
          for (let x = r.first; x <= r.last; x++) {
            assert.ok(!served.has(Number(x)), `${x} issued from a late reply`);
          }
        }
        // Every ID issued came from some reply.
        for (const x of ids) {
          assert.ok(
            ranges.some((r) => BigInt(x) >= r.first && BigInt(x) <= r.last),
            `${x} from no reply`,
          );
        }
      });

      await t.step("a slow server: prefetch keeps IDs flowing, all distinct", async () => {
        proxy.delayMs = 20;
        await using id = new KvId("latency", { redis: client.redis, minStep: 100 });
        const ids: number[] = [];
        for (let i = 0; i < 5_000; i++) {
          ids.push(await id.next());
          // Real services do I/O between IDs: yield now and then so replies can land.
          if (i % 100 === 99) await new Promise((r) => setTimeout(r, 1));
        }
        proxy.delayMs = 0;
        assertIncreasing(ids);
        assert.equal(id.stats().failures, 0);
      });
    },
  });
}
