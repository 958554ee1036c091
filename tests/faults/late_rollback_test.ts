/**
 * Fault suite: a rollback found by a reservation whose reply came after the generator gave up
 * on it (a command the client queued while the server restarted empty). The counter was raised
 * by that late command, so no later reservation finds it below the mark: the late reply is the
 * only one that can tell, and it is reported (`rollbacks`, the `"rollback"` event).
 */

import "../support/deadline.ts"; // a time limit on every test of this file
import assert from "node:assert/strict";
import { KvId, type RollbackDetail } from "../../mod.ts";
import { CLIENTS, openClient } from "../support/redis_clients.ts";
import { command, startServer } from "../support/redis_server.ts";
import { assertIncreasing, Recorder, rejectsWith, waitUntil } from "../support/faults.ts";

for (const kind of CLIENTS) {
  for (const guard of [true, false]) {
    Deno.test({
      name: `late rollback (${kind}, guard ${guard}): a queued reservation's rollback is reported`,
      timeout: 60_000,
      fn: async () => {
        await using server = await startServer({ persistence: "none" });
        // The client's defaults: commands sent while disconnected wait in its offline queue.
        await using open = await openClient(kind, server.url);
        const rec = new Recorder(open.redis);
        await using id = new KvId(`late-${guard}`, {
          redis: rec,
          guard,
          minStep: 10,
          maxStep: 10,
          prefetchAt: 0,
          timeout: 300,
          failFast: false, // one queued reservation only, no probes
        });
        const seen: RollbackDetail[] = [];
        id.addEventListener("rollback", (e) => seen.push((e as CustomEvent).detail));
        const ids: number[] = [];
        for (let i = 0; i < 10; i++) ids.push(await id.next()); // 1..10
        await server.kill();
        await rejectsWith(id.next(), "timeout"); // its reservation waits in the client's queue
        const queued = rec.calls.length;
        await server.restart(); // empty: the counter is gone
        await Promise.all(rec.calls.slice(0, queued).map((c) => c.settled));
        await waitUntil(() => id.stats().rollbacks >= 1, "the late reply's rollback", 20_000);
        assert.equal(seen.length, id.stats().rollbacks);
        assert.equal(seen[0].floor, 10n);
        // The server holds what the late command left.
        const stored = Number(await command(server.url, "HGET", "kvid", `late-${guard}`));
        assert.ok(stored >= 10, `stored ${stored}`);
        if (guard) {
          for (let i = 0; i < 20; i++) ids.push(await id.next());
          assertIncreasing(ids);
        }
      },
    });
  }
}
