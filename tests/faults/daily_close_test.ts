/**
 * Fault suite: `DailyId.close()` with `keepDays` settles within `timeout` whatever the server
 * does (here: hung); the background cleanup reports a
 * timeout instead of waiting forever.
 */

import "../support/deadline.ts"; // a time limit on every test of this file
import assert from "node:assert/strict";
import { type DailyCleanupDetail, DailyId } from "../../mod.ts";
import { openClient } from "../support/redis_clients.ts";
import { startProxy } from "../support/proxy.ts";
import { startServer } from "../support/redis_server.ts";
import { rejectsWith } from "../support/faults.ts";

/** close() against a generous bound: it must settle first (it is bounded by `timeout`). */
async function closesInTime(daily: DailyId, timeout: number): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const stuck = new Promise<string>((r) => timer = setTimeout(() => r("stuck"), 40 * timeout));
  const result = await Promise.race([daily.close().then(() => "closed"), stuck]);
  clearTimeout(timer);
  assert.equal(result, "closed", "close() did not settle");
}

// A server down behind a client that queues commands offline is the same case for the
// generator: a command that never settles.
for (const outage of ["hung"] as const) {
  Deno.test({
    name: `DailyId close() with keepDays settles while the server is ${outage}`,
    timeout: 60_000,
    fn: async () => {
      await using server = await startServer();
      await using proxy = await startProxy({ host: server.host, port: server.port });
      // The client's defaults: a command sent while disconnected waits in its offline queue.
      await using client = await openClient("node-redis", proxy.url);
      proxy.pause();
      const timeout = 250;
      const daily = new DailyId("close", { redis: client.redis, keepDays: 1, timeout });
      const cleaned = new Promise<DailyCleanupDetail>((resolve) =>
        daily.addEventListener("cleanup", (e) => resolve((e as CustomEvent).detail))
      );
      await rejectsWith(daily.next(), "timeout");
      await closesInTime(daily, timeout);
      const detail = await cleaned;
      assert.equal(detail.deleted, undefined);
      assert.equal(detail.error?.code, "timeout", String(detail.error));
      proxy.resume();
      proxy.dropConnections();
    },
  });
}
