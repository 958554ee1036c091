/**
 * Fault suite: an outage with `failFast` (the default). The first call that finds no ID waits
 * its `timeout`; from then on the store is known down and calls that find no ID reject at once
 * as `"unavailable"` (the last store error as cause) while one probe at a time retries with
 * backoff; the first probe that succeeds serves calls again.
 */

import "../support/deadline.ts"; // a time limit on every test of this file
import assert from "node:assert/strict";
import { KvId, KvIdError, type RedisClient } from "../../mod.ts";
import { CLIENTS, openClient } from "../support/redis_clients.ts";
import { startProxy } from "../support/proxy.ts";
import { startServer } from "../support/redis_server.ts";
import { Spy } from "../support/redis_clients.ts";
import { assertIncreasing, rawClient, rejectsWith, waitUntil } from "../support/faults.ts";

const variants = ["raw", ...CLIENTS] as const;

for (const kind of variants) {
  Deno.test({
    name: `outage (${kind}): known down, calls fail fast with one probe at a time; then served`,
    timeout: 60_000,
    fn: async () => {
      await using server = await startServer({ persistence: "aof" });
      await using open = kind === "raw" ? undefined : await openClient(kind, server.url);
      const spy = new Spy(open?.redis ?? rawClient(server.url));
      const timeout = 1_000;
      await using id = new KvId(`outage-${kind}`, {
        redis: spy as RedisClient,
        minStep: 1,
        maxStep: 1,
        prefetchAt: 0,
        timeout,
      });
      const ids = [await id.next()];
      await server.kill();

      // The first caller learns of the outage: it waits its timeout.
      await rejectsWith(id.next(), "timeout");

      // Known down: told at once, with the last store error as cause.
      // "unavailable", not "timeout": each was told before its deadline (at its deadline a call
      // rejects with "timeout"); how soon is machine speed, not asserted.
      for (let i = 0; i < 20; i++) {
        const err = await rejectsWith(id.next(), "unavailable", /down/);
        assert.ok(err.cause instanceof KvIdError, `cause ${err.cause}`);
        assert.notEqual((err.cause as KvIdError).code, "unavailable");
      }
      const batch = await rejectsWith(id.nextBatch(5), "unavailable");
      assert.equal(batch.field, `outage-${kind}`);
      // (A client that queues commands offline keeps abandoned probes in its queue: only a
      // client that fails at once shows the single flight on the wire.)
      if (kind === "raw") assert.equal(spy.maxInflight, 1, "one probe at a time");

      // The server returns: a probe finds it and calls are served again.
      await server.restart();
      const back = await waitUntil(
        () => id.next().catch((e) => (e instanceof KvIdError ? 0 : Promise.reject(e))),
        "calls to be served again",
        20_000,
      );
      ids.push(back);
      for (let i = 0; i < 20; i++) ids.push(await id.next());
      assertIncreasing(ids);
      assert.equal(id.stats().lastError, undefined);
    },
  });
}

Deno.test({
  name: "outage: a hung server is known down after one timeout; failFast false waits each time",
  timeout: 60_000,
  fn: async () => {
    await using server = await startServer();
    await using proxy = await startProxy(server);
    await using open = await openClient("node-redis", proxy.url);
    const timeout = 300;
    const fixed = { minStep: 1, maxStep: 1, prefetchAt: 0, timeout };
    await using fast = new KvId("hung-fast", { redis: open.redis, ...fixed });
    await using slow = new KvId("hung-wait", { redis: open.redis, ...fixed, failFast: false });
    assert.equal(await fast.next(), 1);
    assert.equal(await slow.next(), 1);
    proxy.pause();
    await Promise.all([rejectsWith(fast.next(), "timeout"), rejectsWith(slow.next(), "timeout")]);
    // The fast one learns the store is down once its own reservation gives up too.
    await waitUntil(() => fast.stats().failures >= 1, "the reservation to give up");
    const err = await rejectsWith(fast.next(), "unavailable");
    assert.equal((err.cause as KvIdError).code, "timeout");
    // failFast false: the caller waits out its timeout again.
    const started = performance.now();
    await rejectsWith(slow.next(), "timeout");
    assert.ok(performance.now() - started >= timeout - 1);
    proxy.resume();
    const back = await waitUntil(
      () => fast.next().catch((e) => (e instanceof KvIdError ? 0 : Promise.reject(e))),
      "calls to be served again",
      20_000,
    );
    assert.ok(back > 1);
  },
});
