/**
 * Fault suite, scenario 4: a server restart that loses data (no persistence: the counter rolls
 * back to nothing) under live generators, and the rollback guard.
 */

import "../support/deadline.ts"; // a time limit on every test of this file
import assert from "node:assert/strict";
import { KvId, type RollbackDetail } from "../../mod.ts";
import { type ClientKind, CLIENTS, openClient } from "../support/redis_clients.ts";
import { command, startServer, type TestServer } from "../support/redis_server.ts";
import { assertIncreasing, duplicates, rejectsWith, tick, waitUntil } from "../support/faults.ts";

function rollbacks(id: KvId<number>): RollbackDetail[] {
  const seen: RollbackDetail[] = [];
  id.addEventListener("rollback", (e) => seen.push((e as CustomEvent<RollbackDetail>).detail));
  return seen;
}

async function take(id: KvId<number>, n: number): Promise<number[]> {
  const ids: number[] = [];
  for (let i = 0; i < n; i++) ids.push(await id.next());
  return ids;
}

async function hget(server: TestServer, field: string): Promise<unknown> {
  return await command(server.url, "HGET", "kvid", field);
}

/** Restart a server without persistence: every counter is gone. */
async function loseData(server: TestServer, check = true): Promise<void> {
  await server.restart();
  // Unless generators are producing, which write the hash again at once.
  if (check) assert.equal(await command(server.url, "EXISTS", "kvid"), 0, "the data is gone");
}

for (const kind of CLIENTS) {
  Deno.test({
    name: `faults: data loss under one live generator (${kind}): never at or below its mark`,
    timeout: 60_000,
    fn: async (t) => {
      await using server = await startServer({ persistence: "none" });
      await using client = await openClient(kind, server.url);
      const redis = client.redis;
      const fixed = { redis, minStep: 10, maxStep: 10, prefetchAt: 0 };

      await t.step("guard: raised to the floor, one rollback event and stat", async () => {
        await using id = new KvId("one", fixed);
        const events = rollbacks(id);
        const before = await take(id, 25); // ranges 1..10, 11..20, 21..30
        const high = id.high;
        assert.equal(high, 30n);
        await loseData(server);
        const after = await take(id, 25);
        assertIncreasing([...before, ...after]);
        // 26..30 were buffered; the first range reserved after the loss starts above 30.
        assert.deepEqual(after.slice(0, 7), [26, 27, 28, 29, 30, 31, 32]);
        assert.deepEqual(events, [{ floor: 30n, last: 40n }]);
        assert.equal(id.stats().rollbacks, 1);
        assert.equal(await hget(server, "one"), "50");
      });

      await t.step("rollbackMargin jumps a safety margin past the floor", async () => {
        await using id = new KvId("margin", { ...fixed, rollbackMargin: 1000 });
        const events = rollbacks(id);
        const before = await take(id, 10);
        await loseData(server);
        const after = await take(id, 3);
        assert.deepEqual(after, [1011, 1012, 1013]);
        assertIncreasing([...before, ...after]);
        assert.deepEqual(events, [{ floor: 10n, last: 1020n }]);
        assert.equal(id.stats().rollbacks, 1);
      });

      await t.step("a partial rollback (the last writes lost) is raised too", async () => {
        await using id = new KvId("partial", fixed);
        const events = rollbacks(id);
        const before = await take(id, 30);
        // What `appendfsync everysec` loses in a crash: the most recent increments only.
        await command(server.url, "HSET", "kvid", "partial", "25");
        const after = await take(id, 10);
        assert.deepEqual(after, [31, 32, 33, 34, 35, 36, 37, 38, 39, 40]);
        assertIncreasing([...before, ...after]);
        assert.deepEqual(events, [{ floor: 30n, last: 40n }]);
      });

      await t.step("no guard: refused with a rollback error until the counter passes", async () => {
        await using id = new KvId("noguard", { ...fixed, guard: false });
        const events = rollbacks(id);
        const before = await take(id, 30); // high 30
        await loseData(server);
        // HINCRBY replies 10, 20, 30: all at or below the mark, each refused.
        const err = await rejectsWith(id.next(), "rollback", /went below/);
        assert.equal(err.field, "noguard");
        const after: number[] = [];
        let refusals = 1;
        for (let tries = 0; after.length < 5; tries++) {
          assert.ok(tries < 500, "never recovered");
          try {
            after.push(await id.next());
          } catch (e) {
            await rejectsWith(Promise.reject(e), "rollback");
            refusals++;
            await tick(5); // refusals fail fast during the backoff: let it pass
          }
        }
        assertIncreasing([...before, ...after]);
        assert.ok(after[0] > 30, `issued ${after[0]} after the loss`);
        assert.ok(events.length >= 1 && events.every((e) => e.floor === 30n));
        assert.ok(id.stats().rollbacks >= 1);
        assert.ok(refusals >= 1);
      });

      await t.step("no guard: a partial rollback skips the IDs at or below the mark", async () => {
        await using id = new KvId("noguard-partial", { ...fixed, guard: false });
        const events = rollbacks(id);
        const before = await take(id, 30);
        await command(server.url, "HSET", "kvid", "noguard-partial", "25");
        const after = await take(id, 5);
        // HINCRBY replies 35: 26..30 are dropped, 31..35 served.
        assert.deepEqual(after, [31, 32, 33, 34, 35]);
        assertIncreasing([...before, ...after]);
        // The counter was found below the mark: that is a rollback, even if part of the range
        // could still be served.
        assert.deepEqual(events, [{ floor: 30n, last: 35n }]);
        assert.equal(id.stats().rollbacks, 1);
      });
    },
  });
}

/** Two generators on one name, one per client, fixed steps, no prefetch: fully scripted. */
async function twoLive(server: TestServer, name: string, marginA = 0) {
  const a = await openClient("node-redis", server.url);
  const b = await openClient("ioredis", server.url);
  const fixed = { minStep: 10, maxStep: 10, prefetchAt: 0 };
  const genA = new KvId(name, { redis: a.redis, ...fixed, rollbackMargin: marginA });
  const genB = new KvId(name, { redis: b.redis, ...fixed });
  return {
    a: genA,
    b: genB,
    eventsA: rollbacks(genA),
    eventsB: rollbacks(genB),
    async [Symbol.asyncDispose]() {
      await genA.close();
      await genB.close();
      await a.close();
      await b.close();
    },
  };
}

Deno.test({
  name: "faults: data loss under two live generators: what per-generator floors protect",
  timeout: 60_000,
  fn: async (t) => {
    await using server = await startServer({ persistence: "none" });

    await t.step(
      "the one with the lower mark reserves first: it reissues the other's IDs",
      async () => {
        await using g = await twoLive(server, "low-first");
        const a1 = await take(g.a, 10); // A: 1..10
        const b1 = await take(g.b, 10); // B: 11..20
        await loseData(server);
        const a2 = await take(g.a, 10); // A raises 0 to its floor 10: 11..20 again
        const b2 = await take(g.b, 10); // B's floor is 20, the counter is 20: 21..30
        assert.deepEqual(a2, [11, 12, 13, 14, 15, 16, 17, 18, 19, 20]);
        assert.deepEqual(b2, [21, 22, 23, 24, 25, 26, 27, 28, 29, 30]);
        // Each generator stays above its own mark...
        assertIncreasing([...a1, ...a2]);
        assertIncreasing([...b1, ...b2]);
        assert.deepEqual(g.eventsA, [{ floor: 10n, last: 20n }]);
        assert.deepEqual(g.eventsB, []);
        // ...but A hands out again what B issued before the loss: the documented limit.
        assert.deepEqual(duplicates([[...a1, ...a2], [...b1, ...b2]]), b1);
      },
    );

    await t.step("the one with the highest mark reserves first: no duplicate", async () => {
      await using g = await twoLive(server, "high-first");
      const a1 = await take(g.a, 10); // 1..10
      const b1 = await take(g.b, 10); // 11..20
      await loseData(server);
      const b2 = await take(g.b, 10); // B raises to 20: 21..30
      const a2 = await take(g.a, 10); // the counter (30) is above A's floor: 31..40
      assert.deepEqual(b2[0], 21);
      assert.deepEqual(a2[0], 31);
      assert.deepEqual(duplicates([[...a1, ...a2], [...b1, ...b2]]), []);
      assert.deepEqual(g.eventsB, [{ floor: 20n, last: 30n }]);
      assert.deepEqual(g.eventsA, [], "A cannot see the loss: the counter is above its floor");
    });

    await t.step("a margin larger than the other's lead prevents it", async () => {
      await using g = await twoLive(server, "margin", 1000);
      const a1 = await take(g.a, 10);
      const b1 = await take(g.b, 10);
      await loseData(server);
      const a2 = await take(g.a, 10); // 1011..1020
      const b2 = await take(g.b, 10); // 1021..1030
      assert.equal(a2[0], 1011);
      assert.equal(b2[0], 1021);
      assert.deepEqual(duplicates([[...a1, ...a2], [...b1, ...b2]]), []);
    });
  },
});

Deno.test({
  name: "faults: data loss while two generators produce: each stays above its own mark",
  timeout: 60_000,
  fn: async (t) => {
    await using server = await startServer({ persistence: "none" });
    await using nodeRedis = await openClient("node-redis", server.url);
    await using ioredis = await openClient("ioredis", server.url);
    const clients: Record<ClientKind, typeof nodeRedis> = {
      "node-redis": nodeRedis,
      ioredis,
    };

    for (const margin of [0, 1_000_000]) {
      await t.step(`rollbackMargin ${margin}`, async () => {
        const name = `live-${margin}`;
        const gens = CLIENTS.map((k) =>
          new KvId(name, {
            redis: clients[k].redis,
            minStep: 100,
            maxStep: 100,
            timeout: 10_000,
            rollbackMargin: margin,
          })
        );
        const events = gens.map(rollbacks);
        const ids: number[][] = [[], []];
        const lost: number[] = [0, 0];
        let stop = false;
        const loops = gens.map(async (g, i) => {
          while (!stop) {
            ids[i].push(await g.next());
            if (ids[i].length % 20 === 0) await tick(1);
          }
        });
        try {
          await waitUntil(() => ids.every((l) => l.length >= 2_000), "2k IDs each");
          for (const [i, g] of gens.entries()) lost[i] = Number(g.stats().high);
          await loseData(server, false);
          await waitUntil(
            () => gens.every((g) => g.stats().segments >= 30),
            "10 more reservations each",
            30_000,
          );
        } finally {
          stop = true;
          await Promise.all(loops);
          await Promise.all(gens.map((g) => g.close()));
        }
        for (const [i, l] of ids.entries()) assertIncreasing(l, `generator ${i}`);
        // At least the generator that reserves first after the loss raises the counter.
        const raised = events.flat().length;
        assert.ok(raised >= 1, "no rollback event");
        const dup = duplicates(ids);
        if (margin > 0) assert.deepEqual(dup, [], "a large margin leaves no duplicate");
        console.log(
          `two live generators, margin ${margin}: marks at the loss ${lost.join(", ")}; ` +
            `rollback events ${events.map((e) => e.length).join(", ")}; ` +
            `${dup.length} IDs issued by both`,
        );
      });
    }
  },
});

Deno.test("rollbackMargin near 2^63-1: overflow, and the counter stays a valid integer", async (t) => {
  await using server = await startServer({ persistence: "none" });
  const MAX = 2n ** 63n - 1n;
  for (const kind of CLIENTS) {
    await t.step(kind, async () => {
      await using client = await openClient(kind, server.url);
      const name = `edge-${kind}`;
      const fixed = { redis: client.redis, bigint: true, minStep: 8, maxStep: 8, prefetchAt: 0 };
      await command(server.url, "HSET", "kvid", name, String(MAX - 40n));
      await using id = new KvId(name, { ...fixed, rollbackMargin: 777 });
      for (let i = 0; i < 8; i++) await id.next();
      assert.equal(id.high, MAX - 32n);
      await command(server.url, "HSET", "kvid", name, "3"); // the server lost writes
      await rejectsWith(id.next(), "overflow");
      const stored = BigInt(await hget(server, name) as string);
      assert.ok(stored <= MAX && stored >= MAX - 32n, `counter ${stored}`);
      // Every client can still read and increment the counter.
      await using other = new KvId(name, { ...fixed, rollbackMargin: 0 });
      await rejectsWith(other.next(), "overflow");
      await command(server.url, "HINCRBY", "kvid", name, "0");
      assert.equal(await hget(server, name), String(stored));
    });
  }
});
