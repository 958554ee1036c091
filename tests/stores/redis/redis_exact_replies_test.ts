/**
 * Integer replies above 2^53: a client that returns them as JS numbers rounds them, and a range
 * computed from a rounded reply would hand out IDs that were never reserved (duplicates).
 */

import "../../support/deadline.ts"; // a time limit on every test of this file
import assert from "node:assert/strict";
import { KvId } from "../../../mod.ts";
import { openClient } from "../../support/redis_clients.ts";
import {
  command,
  ownServers,
  startNoScriptingServer,
  startServer,
} from "../../support/redis_server.ts";
import { assertIncreasing, rejectsWith } from "../../support/assert.ts";

Deno.test({
  ...ownServers("bigint mode without scripting: rounded replies refused, exact clients work"),
}, async (t) => {
  await using server = await startNoScriptingServer();
  await using io = await openClient("ioredis", server.url);
  await using ioStrings = await openClient("ioredis", server.url, { stringNumbers: true });
  await using nodeRedis = await openClient("node-redis", server.url);
  const start = 2n ** 60n + 7n;
  const counter = async (name: string) =>
    BigInt(await command(server.url, "HGET", "kvid", name) as string);

  await t.step("ioredis (numbers): a config error naming stringNumbers, no ID", async () => {
    await command(server.url, "HSET", "kvid", "big", String(start));
    await using id = new KvId("big", { redis: io.redis, bigint: true, prefetchAt: 0 });
    await rejectsWith(id.next(), "config", /stringNumbers/);
    assert.equal(id.high, 0n, "nothing accepted from a rounded reply");
  });

  await t.step("node-redis and ioredis with stringNumbers: exact IDs, all distinct", async () => {
    const before = await counter("big");
    await using a = new KvId("big", { redis: nodeRedis.redis, bigint: true, prefetchAt: 0 });
    await using b = new KvId("big", { redis: ioStrings.redis, bigint: true, prefetchAt: 0 });
    const ids: bigint[] = [];
    for (let i = 0; i < 300; i++) ids.push(await (i % 3 === 0 ? b : a).next());
    assert.equal(new Set(ids).size, ids.length);
    assert.ok(ids.every((x) => x > before), "every ID above the counter's start");
    assert.ok(ids.every((x) => x <= 2n ** 60n + 100_000n));
    assert.ok((await counter("big")) >= a.high);
    assert.equal(a.stats().rollbacks + b.stats().rollbacks, 0);
  });

  await t.step("number mode, ioredis: past 2^53 is unsafe, never another's ID", async () => {
    const top = 2 ** 53 - 9; // the last ID generator a hands out
    await command(server.url, "HSET", "kvid", "near", String(top - 4));
    await using a = new KvId("near", { redis: nodeRedis.redis, minStep: 4, prefetchAt: 0 });
    const ids = [await a.next(), await a.next(), await a.next(), await a.next()];
    assert.deepEqual(ids, [top - 3, top - 2, top - 1, top]);
    // 12 more: the counter becomes 2^53 + 3, which ioredis reads as 2^53 + 4.
    await using b = new KvId("near", { redis: io.redis, minStep: 12, prefetchAt: 0 });
    await rejectsWith(b.next(), "unsafe", /MAX_SAFE_INTEGER/);
    assert.equal(b.high, 0n);
    assert.equal(await counter("near"), BigInt(top) + 12n);
  });

  await t.step("number mode, node-redis: exact up to MAX_SAFE_INTEGER", async () => {
    const max = Number.MAX_SAFE_INTEGER;
    await command(server.url, "HSET", "kvid", "edge", String(max - 3));
    await using a = new KvId("edge", { redis: nodeRedis.redis, minStep: 5, prefetchAt: 0 });
    const ids = [await a.next(), await a.next(), await a.next()];
    assert.deepEqual(ids, [max - 2, max - 1, max]);
    await rejectsWith(a.next(), "unsafe");
  });
});

Deno.test("number mode, guard false: a rounded reply is refused, not trusted", async () => {
  await using server = await startServer();
  await using io = await openClient("ioredis", server.url);
  const top = 2 ** 53 - 6;
  await command(server.url, "HSET", "kvid", "n", String(top - 10));
  await using a = new KvId("n", { redis: io.redis, minStep: 10, prefetchAt: 0 });
  const first: number[] = [];
  for (let i = 0; i < 10; i++) first.push(await a.next());
  assertIncreasing(first);
  assert.equal(first.at(-1), top);
  // The counter becomes 2^53 + 1, read as 2^53: the range it stands for is not known exactly.
  await using b = new KvId("n", { redis: io.redis, guard: false, minStep: 7, prefetchAt: 0 });
  await rejectsWith(b.next(), "unsafe");
  assert.equal(b.high, 0n);
  assert.equal(await command(server.url, "HGET", "kvid", "n"), String(2n ** 53n + 1n));
});

Deno.test("number mode, a range crossing 2^53: exact replies serve its IDs up to MAX_SAFE_INTEGER", async () => {
  // The guard script replies with a string, so even a rounding client (ioredis) reads the end of
  // a range exactly: its IDs below 2^53 are served, none is a gap. Only a rounded plain HINCRBY
  // reply (guard: false or no scripting, through ioredis or @db/redis) is refused whole.
  await using server = await startServer();
  await using io = await openClient("ioredis", server.url);
  await using nodeRedis = await openClient("node-redis", server.url);
  const max = Number.MAX_SAFE_INTEGER;
  for (
    const [name, redis, guard] of [
      ["cross-io-guard", io.redis, true],
      ["cross-node-guard", nodeRedis.redis, true],
      ["cross-node-plain", nodeRedis.redis, false],
    ] as const
  ) {
    await command(server.url, "HSET", "kvid", name, String(max - 3));
    await using id = new KvId(name, { redis, guard, minStep: 5, prefetchAt: 0 });
    assert.deepEqual([await id.next(), await id.next(), await id.next()], [max - 2, max - 1, max]);
    await rejectsWith(id.next(), "unsafe");
  }
});
