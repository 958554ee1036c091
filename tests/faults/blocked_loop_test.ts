/**
 * Fault suite: a blocked event loop is not an outage. The application runs synchronous work
 * longer than `timeout` while a reservation is in flight; the server is healthy and its reply
 * is already in the socket when the loop is free again. The deadline timers fire late, all at
 * once: the call must still be served from that reply, and the store is not marked down (before
 * the fix: the waiting call and the next calls failed, `unavailable`, while a probe ran).
 */

import "../support/deadline.ts"; // a time limit on every test of this file
import assert from "node:assert/strict";
import { KvId, KvIdError } from "../../mod.ts";
import { CLIENTS, openClient } from "../support/redis_clients.ts";
import { startServer } from "../support/redis_server.ts";
import { Recorder } from "../support/faults.ts";

const TIMEOUT_MS = 500;
// Three times the timeout: every timer of the generator is due long before the loop is free.
const BLOCK_MS = 1_500;
const BATCH_TIMEOUT_MS = 2_000;

/** Keep the event loop busy for `ms` without yielding (the application's synchronous work). */
function blockLoop(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) { /* busy */ }
}

for (const kind of CLIENTS) {
  Deno.test({
    name: `faults: a loop blocked past the timeout (${kind}) serves the reply already there`,
    timeout: 60_000,
    fn: async (t) => {
      await using server = await startServer();
      await using client = await openClient(kind, server.url);

      await t.step("one reservation per call: the call in flight is served", async () => {
        const rec = new Recorder(client.redis);
        // Step 1, no prefetch: every next() is a reservation of its own, waited for.
        await using id = new KvId(`blocked-${kind}`, {
          redis: rec,
          timeout: TIMEOUT_MS,
          minStep: 1,
          maxStep: 1,
          prefetchAt: 0,
        });
        assert.equal(await id.next(), 1);
        for (let round = 0; round < 3; round++) {
          const pending = id.next();
          blockLoop(BLOCK_MS);
          assert.equal(await pending, 2 + round * 16);
          // The next calls: none turned away as "the store is down".
          for (let i = 1; i <= 15; i++) assert.equal(await id.next(), 2 + round * 16 + i);
        }
        const stats = id.stats();
        assert.equal(stats.failures, 0, `failures: ${JSON.stringify(stats.lastError)}`);
        assert.equal(stats.lastError, undefined);
        // The IDs above are consecutive: no range was spent as a timeout; no command failed.
        const failed = rec.calls.filter((c) =>
          c.error !== undefined && !/NOSCRIPT/.test(String(c.error))
        );
        assert.deepEqual(failed, []);
      });

      await t.step("a batch waiting on a prefetch is served too", async () => {
        // The batch needs two more reservations after the loop is free, in the time the late
        // timer gives back (what it was late, at most the timeout): a timeout of its own, long
        // enough that a loaded machine's round trips fit in it, and a block twice as long.
        await using id = new KvId(`blocked-batch-${kind}`, {
          redis: client.redis,
          timeout: BATCH_TIMEOUT_MS,
          minStep: 100,
          maxStep: 100,
        });
        assert.equal(await id.next(), 1);
        const pending = id.nextBatch(250);
        blockLoop(2 * BATCH_TIMEOUT_MS);
        const ids = await pending;
        assert.equal(ids.length, 250);
        assert.equal(ids[0], 2);
        assert.equal(ids.at(-1), 251);
        assert.equal(id.stats().failures, 0);
      });

      await t.step("a server that really does not answer still times out", async () => {
        // Not every late timer is the loop's fault: a reservation with no reply in time fails.
        const hung = {
          hincrby: () => new Promise<never>(() => {}),
          eval: () => new Promise<never>(() => {}),
          evalsha: () => new Promise<never>(() => {}),
        };
        await using id = new KvId("blocked-hung", { redis: hung, timeout: 100 });
        const pending = id.next();
        blockLoop(300);
        const err = await pending.then(() => undefined, (e) => e);
        assert.ok(err instanceof KvIdError, String(err));
        // A timeout, or the store known down once the reservation took its whole timeout.
        assert.ok(err.code === "timeout" || err.code === "unavailable", err.message);
      });
    },
  });
}
