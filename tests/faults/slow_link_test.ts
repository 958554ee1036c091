/**
 * Fault suite: interleaved servers on a slow link (round trips far above 200 ms) work within
 * the caller's timeout, and attempts given up on do not push the counters without bound.
 */

import "../deadline.ts"; // a time limit on every test of this file
import assert from "node:assert/strict";
import { KvId } from "../../mod.ts";
import { openClient } from "../clients.ts";
import { startProxy } from "../proxy.ts";
import { command, startServer } from "../server.ts";
import { assertIncreasing } from "./helpers.ts";

Deno.test({
  name: "slow link: interleaved servers 300 ms away serve IDs; few blocks wasted",
  timeout: 120_000,
  fn: async () => {
    await using a = await startServer();
    await using b = await startServer();
    // 150 ms each way: a 300 ms round trip, more than the 200 ms an attempt used to get.
    await using pa = await startProxy(a, { delayMs: 150 });
    await using pb = await startProxy(b, { delayMs: 150 });
    await using ca = await openClient("node-redis", pa.url);
    await using cb = await openClient("node-redis", pb.url);
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
    // Six blocks served; each server's cycle counter moved by what it served, plus at most a
    // couple of attempts given up on.
    await id.close();
    const cycles = Number(await command(a.url, "HGET", "kvid", "slow-link")) +
      Number(await command(b.url, "HGET", "kvid", "slow-link"));
    assert.ok(cycles >= 6 && cycles <= 10, `${cycles} cycles used for 6 blocks`);

    // A link that was fast when the round trip was learned, then got slow.
    await using fa = await startProxy(a);
    await using fb = await startProxy(b);
    await using ka = await openClient("node-redis", fa.url);
    await using kb = await openClient("node-redis", fb.url);
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
    assert.ok(slowed >= 6 && slowed <= 12, `${slowed} cycles used for 6 blocks`);
  },
});
