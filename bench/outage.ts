/**
 * Measures what an outage costs a caller, with `failFast` on (the default) and off: the time
 * to the first error, the time of the calls after it, and the time from the server's return
 * (answering PING again) to the first ID served. Real redis-server, real clients, defaults
 * (`timeout` 5,000 ms). Run: `deno run -A bench/outage.ts`; `KVID_OUTAGE_MS=20000` keeps the
 * server down 20 s longer while a call comes every 50 ms (probes back off to their cap).
 *
 * @module
 */

import { KvId, type KvIdError } from "../mod.ts";
import { openClient } from "../tests/support/redis_clients.ts";
import { startServer } from "../tests/support/redis_server.ts";

// How long the server stays down after the first calls failed (env KVID_OUTAGE_MS, default 0).
const OUTAGE_MS = Number(Deno.env.get("KVID_OUTAGE_MS") ?? 0);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const ms = (x: number) => x < 1 ? `${(x * 1000).toFixed(0)} µs` : `${x.toFixed(0)} ms`;

for (const kind of ["node-redis", "ioredis"] as const) {
  for (const failFast of [true, false]) {
    await using server = await startServer({ persistence: "aof" });
    await using client = await openClient(kind, server.url);
    await using id = new KvId("outage", { redis: client.redis, failFast, prefetchAt: 0 });
    await id.next();
    for (let n = id.stats().remaining; n > 0; n--) await id.next();
    await server.kill();
    const calls: number[] = [];
    const codes = new Set<string>();
    for (let i = 0; i < 6; i++) {
      const t = performance.now();
      await id.next().catch((e: KvIdError) => codes.add(e.code));
      calls.push(performance.now() - t);
    }
    // A service keeps asking while the store is down: a call every 50 ms for OUTAGE_MS.
    for (const until = performance.now() + OUTAGE_MS; performance.now() < until;) {
      await id.next().catch(() => {});
      await new Promise((r) => setTimeout(r, 50));
    }
    await server.restart();
    const back = performance.now();
    for (;;) {
      try {
        await id.next();
        break;
      } catch {
        await new Promise((r) => setTimeout(r, 5));
      }
    }
    const recovery = performance.now() - back;
    console.log(
      `${kind.padEnd(10)} failFast ${String(failFast).padEnd(5)}: first error ${ms(calls[0])}, ` +
        `next 5 calls median ${ms(median(calls.slice(1)))} (${[...codes].join(", ")}), ` +
        `recovery ${ms(recovery)}`,
    );
  }
}
