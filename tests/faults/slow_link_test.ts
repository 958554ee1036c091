/**
 * Fault suite: interleaved servers on a slow link (round trips far above 200 ms) work within
 * the caller's timeout, and attempts given up on do not push the counters without bound.
 */

import "../support/deadline.ts"; // a time limit on every test of this file
import assert from "node:assert/strict";
import { KvId, type RedisClient } from "../../mod.ts";
import { openClient } from "../support/redis_clients.ts";
import { startProxy } from "../support/proxy.ts";
import { command, startServer } from "../support/redis_server.ts";
import { assertIncreasing } from "../support/faults.ts";

/**
 * The client, counting the scripts it runs as they are sent: each reservation attempt on that
 * server is one (moving its counter at most once); a few others (NOSCRIPT retries, close()) too.
 */
function counting(client: RedisClient): { redis: RedisClient; sent: number } {
  const counter = { redis: client, sent: 0 };
  counter.redis = new Proxy(client, {
    get(target, key) {
      const value = Reflect.get(target, key);
      if (typeof value !== "function") return value;
      if (key !== "eval" && key !== "evalsha") return value.bind(target);
      return (script: string, keys: string[], args: string[]) => {
        void args;
        counter.sent++;
        return value.call(target, script, keys, args);
      };
    },
  });
  return counter;
}

/**
 * Cycles used against attempts sent: every cycle a counter moved is an attempt that was sent (an
 * attempt given up on still moves it), and a reservation tries each of the 2 servers at most once
 * (plus EVALSHAs answered NOSCRIPT, then sent again as EVAL, and close()'s scripts: at most
 * 3 per reservation and 4 more). Counts, not speed: a slow machine gives up on more attempts,
 * each bounded by these.
 */
function assertBounded(cycles: number, sent: number, reservations: number, what: string) {
  assert.ok(cycles >= 6, `${what}: ${cycles} cycles used for 6 blocks`);
  assert.ok(cycles <= sent, `${what}: ${cycles} cycles, only ${sent} attempts sent`);
  assert.ok(
    sent <= 3 * reservations + 4,
    `${what}: ${sent} attempts for ${reservations} reservations on 2 servers`,
  );
  console.log(`${what}: ${cycles} cycles for 6 blocks, ${sent} attempts`);
}

Deno.test({
  name: "slow link: interleaved servers 300 ms away serve IDs; few blocks wasted",
  timeout: 120_000,
  fn: async () => {
    await using a = await startServer();
    await using b = await startServer();
    // 150 ms each way: a 300 ms round trip, more than the 200 ms an attempt used to get.
    await using pa = await startProxy(a, { delayMs: 150 });
    await using pb = await startProxy(b, { delayMs: 150 });
    await using oa = await openClient("node-redis", pa.url);
    await using ob = await openClient("node-redis", pb.url);
    const [ca, cb] = [counting(oa.redis), counting(ob.redis)];
    const block = 10;
    await using id = new KvId("slow-link", {
      redis: [ca.redis, cb.redis],
      block,
      minStep: block,
      maxStep: block,
      prefetchAt: 0,
      timeout: 10_000,
    });
    const ids: number[] = [];
    for (let i = 0; i < 6 * block; i++) ids.push(await id.next());
    assertIncreasing(ids);
    // Six blocks served; each server's cycle counter moved by what it served, plus the attempts
    // given up on.
    await id.close();
    const cycles = Number(await command(a.url, "HGET", "kvid", "slow-link")) +
      Number(await command(b.url, "HGET", "kvid", "slow-link"));
    const { segments, failures } = id.stats();
    assertBounded(cycles, ca.sent + cb.sent, segments + failures, "slow link");

    // A link that was fast when the round trip was learned, then got slow.
    await using fa = await startProxy(a);
    await using fb = await startProxy(b);
    await using oka = await openClient("node-redis", fa.url);
    await using okb = await openClient("node-redis", fb.url);
    const [ka, kb] = [counting(oka.redis), counting(okb.redis)];
    await using later = new KvId("slowed", {
      redis: [ka.redis, kb.redis],
      block,
      minStep: block,
      maxStep: block,
      prefetchAt: 0,
      timeout: 10_000,
    });
    const more: number[] = [];
    for (let i = 0; i < 2 * block; i++) more.push(await later.next());
    fa.delayMs = fb.delayMs = 150;
    for (let i = 0; i < 4 * block; i++) more.push(await later.next());
    assertIncreasing(more);
    await later.close();
    const slowed = Number(await command(a.url, "HGET", "kvid", "slowed")) +
      Number(await command(b.url, "HGET", "kvid", "slowed"));
    const after = later.stats();
    assertBounded(slowed, ka.sent + kb.sent, after.segments + after.failures, "slowed link");
  },
});
