/**
 * Fault suite, scenario 5: the server is down. Buffered IDs keep flowing; then calls reject
 * with a KvIdError at their deadline (not before, not never); retries back off with jitter; the
 * same generator recovers when the server is back.
 */

import "../support/deadline.ts"; // a time limit on every test of this file
import assert from "node:assert/strict";
import { KvId, KvIdError } from "../../mod.ts";
import { CLIENTS, openClient } from "../support/redis_clients.ts";
import { startServer } from "../support/redis_server.ts";
import {
  assertIncreasing,
  assertNoDuplicates,
  openFailFastClient,
  rawClient,
  Recorder,
  rejectsWith,
} from "../support/faults.ts";

const BACKOFF_BASE_MS = 20; // src/engine/outage.ts
const BACKOFF_MAX_MS = 2_000;

/** Take IDs until one succeeds, at most `ms`; what failed meanwhile is returned too. */
async function recover(id: KvId<number>, ms: number) {
  const started = performance.now();
  const errors: string[] = [];
  while (performance.now() - started < ms) {
    try {
      return { id: await id.next(), after: performance.now() - started, errors };
    } catch (err) {
      assert.ok(err instanceof KvIdError, `not a KvIdError: ${err}`);
      errors.push(err.code);
    }
  }
  return assert.fail(`no recovery within ${ms} ms: ${errors.join(", ")}`);
}

for (const kind of CLIENTS) {
  Deno.test({
    name: `faults: server down (${kind}, commands fail at once): timeout, backoff, recovery`,
    timeout: 60_000,
    fn: async () => {
      await using server = await startServer({ persistence: "aof" });
      await using client = await openFailFastClient(kind, server.url);
      const rec = new Recorder(client.redis);
      const timeout = 800;
      await using id = new KvId("down", {
        redis: rec,
        minStep: 50,
        maxStep: 50,
        prefetchAt: 0,
        timeout,
        failFast: false, // every call waits out its timeout (failFast: see fail_fast_test.ts)
      });
      const ids = [await id.next()];
      await server.kill();

      // Buffered IDs keep flowing, with no round trip.
      const sent = rec.calls.length;
      for (let i = 0; i < 49; i++) ids.push(await id.next());
      assert.equal(rec.calls.length, sent);
      assert.deepEqual(ids, Array.from({ length: 50 }, (_, i) => i + 1));

      // Then a KvIdError at the deadline: not before, not never.
      const started = performance.now();
      const err = await rejectsWith(id.next(), "timeout", /800 ms/);
      const waited = performance.now() - started;
      assert.ok(waited >= timeout - 1, `rejected early, after ${waited} ms`);
      // Late only by what a loaded machine delays a timer: a bound no speed reaches, far below
      // the next deadline's worth of waiting.
      assert.ok(waited < timeout + 5_000, `rejected late, after ${waited} ms`);
      assert.equal(
        (err.cause as KvIdError | undefined)?.code,
        "connection",
        "cause: the last error",
      );
      assert.equal(err.field, "down");

      // Retried meanwhile, with growing waits: a handful of attempts, not a busy loop.
      const tries = rec.calls.slice(sent);
      assert.ok(tries.every((c) => c.error !== undefined), "every attempt failed");
      // At least one retry (a wait is at most half the timeout), at most what the backoff
      // allows (a slower machine makes fewer): counts and lower bounds, never how fast.
      assert.ok(
        tries.length >= 2 && tries.length <= 12,
        `${tries.length} attempts in ${waited} ms`,
      );
      for (let k = 1; k < tries.length; k++) {
        const gap = tries[k].start - tries[k - 1].end!;
        const full = Math.min(BACKOFF_MAX_MS, timeout / 2, BACKOFF_BASE_MS * 2 ** (k - 1));
        assert.ok(gap >= full / 2 - 2, `wait ${k} was ${gap} ms, less than half of ${full}`);
      }
      const { failures, stalls, lastError } = id.stats();
      assert.ok(failures >= tries.length - 1, `failures ${failures}`);
      assert.ok(stalls >= 1);
      assert.equal(lastError?.code, "connection");

      // Nobody waiting: no retries either.
      const idle = rec.calls.length;
      await new Promise((r) => setTimeout(r, 100));
      assert.equal(rec.calls.length, idle, "no retry without a caller");

      // The server comes back: the same object recovers.
      await server.restart();
      const back = await recover(id, 10_000);
      assert.ok(back.id > 50, `resumed at ${back.id}`);
      ids.push(back.id);
      for (let i = 0; i < 200; i++) ids.push(await id.next());
      assertIncreasing(ids);
      assert.equal(id.stats().lastError, undefined);
      assert.equal(id.stats().rollbacks, 0, "appendfsync always: nothing lost");
    },
  });
}

Deno.test({
  name: "faults: server down: retries of several generators are jittered",
  timeout: 30_000,
  fn: async () => {
    await using server = await startServer();
    const client = rawClient(server.url);
    const recs = Array.from({ length: 8 }, () => new Recorder(client));
    const gens = recs.map((redis, i) =>
      new KvId(`jitter-${i}`, {
        redis,
        minStep: 1,
        maxStep: 1,
        prefetchAt: 0,
        // Long enough for 6 attempts (waits of at most 20+40+80+160+320 ms) on a slow machine.
        timeout: 2_000,
        failFast: false,
      })
    );
    try {
      await Promise.all(gens.map((g) => g.next()));
      await server.kill();
      // Every generator fails at the same moment, then each waits its own backoff.
      await Promise.all(gens.map((g) => rejectsWith(g.next(), "timeout")));
      // The 5th wait is 80 to 160 ms with jitter, exactly 160 without.
      const waits = recs.map((r) => {
        const tries = r.calls.slice(1);
        assert.ok(tries.length >= 6, `only ${tries.length} attempts`);
        return tries[5].start - tries[4].end!;
      });
      // The wait after 5 failures: 160..320 ms with jitter. Without jitter every wait is at
      // least 320 ms (a late timer only adds); with it, 8 waits are all that long only if each
      // timer fired late by the rest.
      const full = Math.min(BACKOFF_MAX_MS, 1_000, BACKOFF_BASE_MS * 2 ** 4);
      const shown = waits.map((w) => w.toFixed(1)).join(", ");
      assert.ok(waits.some((w) => w < full - 2), `waits ${shown}: no jitter below ${full}`);
      assert.ok(waits.every((w) => w >= full / 2 - 2), `waits ${shown}`);
    } finally {
      await Promise.all(gens.map((g) => g.close()));
    }
  },
});

for (const kind of CLIENTS) {
  Deno.test({
    name: `faults: server down (${kind}, commands queued until reconnect): no duplicate after`,
    timeout: 60_000,
    fn: async () => {
      // The npm clients' defaults: a command sent while disconnected waits in the client and
      // goes out after the reconnect, long after the generator gave up on it.
      await using server = await startServer({ persistence: "aof" });
      await using client = await openClient(kind, server.url);
      const rec = new Recorder(client.redis);
      await using id = new KvId("queued", {
        redis: rec,
        minStep: 20,
        maxStep: 20,
        prefetchAt: 0,
        timeout: 300,
        failFast: false,
      });
      const ids: number[] = [];
      for (let i = 0; i < 20; i++) ids.push(await id.next());
      await server.kill();
      await rejectsWith(id.next(), "timeout");
      await rejectsWith(id.next(), "timeout");
      await server.restart();
      const back = await recover(id, 10_000);
      ids.push(back.id);
      for (let i = 0; i < 100; i++) ids.push(await id.next());
      // Let the abandoned commands' late replies arrive.
      await Promise.all(rec.calls.map((c) => c.settled));
      assertIncreasing(ids);
      assertNoDuplicates([ids]);
      // IDs come only from replies received in time: none from an abandoned one.
      // IDs come only from replies received in time. An abandoned reservation's command went
      // out after the reconnect (its EVALSHA found no script and the store sent EVAL): its range
      // is spent, no ID of it issued, and every other range is served whole, in order.
      const ranges = rec.ranges().sort((a, b) => (a.first < b.first ? -1 : 1));
      const served = new Set(ids.map(BigInt));
      let spent = 0;
      for (const r of ranges) {
        let n = 0;
        for (let x = r.first; x <= r.last; x++) if (served.has(x)) n++;
        if (n === 0) spent++;
        else if (r !== ranges.at(-1)) assert.equal(n, 20, `range ${r.first}..${r.last} cut`);
      }
      assert.ok(spent >= 1, `no abandoned range applied late: ${ranges.length} ranges`);
      assert.equal(ids.length, served.size);
    },
  });
}

Deno.test({
  name: "faults: after a long outage, a caller with a short timeout still gets a retry",
  timeout: 30_000,
  fn: async () => {
    await using server = await startServer({ persistence: "aof" });
    const rec = new Recorder(rawClient(server.url));
    const timeout = 300;
    await using id = new KvId("outage", {
      redis: rec,
      minStep: 1,
      maxStep: 1,
      // No prefetch: a prefetch of ID 2 landing before the kill below served the first call
      // meant to time out (seen once in a full suite run).
      prefetchAt: 0,
      timeout,
      failFast: false,
    });
    assert.equal(await id.next(), 1);
    await server.kill();
    // Enough failed attempts for the backoff to reach its cap.
    for (let i = 0; i < 6; i++) await rejectsWith(id.next(), "timeout");
    const sent = rec.calls.length;
    await server.restart();
    // The server is back. A caller that waits `timeout` must get an ID within that time (from an
    // attempt made since the restart began), not be turned away because the backoff after the
    // outage is longer than its timeout.
    const next = await id.next().catch((e) => e);
    assert.ok(rec.calls.length > sent, "no attempt was made since the server came back");
    assert.equal(typeof next, "number", `rejected: ${next}`);
  },
});
