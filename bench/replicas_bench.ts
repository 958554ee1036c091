/**
 * The cost of `replicas: 1` (WAIT after each reservation) on a redis-server primary with one
 * replica, both started here on loopback: the reservation round trip (a KvId of step 1 without
 * prefetch, so every `next()` is one reservation), and `next()` per ID with defaults (100k IDs
 * per iteration, cold start included, so the reservations' share shows).
 *
 *     deno bench -A bench/replicas_bench.ts
 *
 * @module
 */

import { createClient } from "redis";
import { fromNodeRedis, KvId } from "../mod.ts";
import { info, type RedisProcess, startRedis, until } from "../tests/support/redis_replication.ts";
import { redisBinaryMissing } from "../tests/support/redis_server.ts";

const LOOP = 100_000;
const TRIP = "reservation round trip, primary + 1 replica (1 reservation per iteration)";
const HOT = `next() per ID, primary + 1 replica (${
  LOOP.toLocaleString("en-US")
} IDs per iteration)`;

const ignore = redisBinaryMissing();
const processes: RedisProcess[] = [];
const dir = await Deno.makeTempDir({ prefix: "kvid-bench-replicas-" });
addEventListener("unload", () => {
  for (const p of processes) void p.kill();
  try {
    Deno.removeSync(dir, { recursive: true });
  } catch { /* already gone */ }
});

let redis = undefined as unknown as ReturnType<typeof fromNodeRedis>;
if (!ignore) {
  const primary = await startRedis(dir);
  processes.push(primary);
  processes.push(await startRedis(dir, [["replicaof", `127.0.0.1 ${primary.port}`]]));
  await until("the replica online", async () => {
    const r = await info(primary.url, "replication");
    return /state=online/.test(r.get("slave0") ?? "");
  });
  const client = createClient({ url: primary.url });
  client.on("error", () => {});
  await client.connect();
  addEventListener("unload", () => client.destroy());
  redis = fromNodeRedis(client);
  console.log(`server: redis-server ${(await info(primary.url, "server")).get("redis_version")}`);
}

const run = Date.now().toString(36);
const trips = [0, 1].map((replicas) =>
  new KvId(`trip-${replicas}-${run}`, {
    redis,
    replicas,
    prefetchAt: 0,
    maxStep: 1,
    durability: "best-effort", // replicas 0 on a primary with a replica: refused under strict
  })
);

// Warm both before the first bench (JIT, the script cache, the setup's garbage): otherwise
// whichever runs first pays for it.
if (!ignore) {
  for (let round = 0; round < 500; round++) for (const t of trips) await t.next();
  for (const replicas of [0, 1]) {
    await using id = new KvId(`warm-${replicas}-${run}`, {
      redis,
      replicas,
      durability: "best-effort",
    });
    for (let i = 0; i < LOOP; i++) await id.next();
  }
}

for (const replicas of [0, 1]) {
  Deno.bench({
    name: `replicas: ${replicas}`,
    group: TRIP,
    baseline: replicas === 0,
    ignore,
    n: 500,
    warmup: 50,
    async fn() {
      await trips[replicas].next();
    },
  });
}

let generation = 0;
for (const replicas of [0, 1]) {
  Deno.bench({
    name: `replicas: ${replicas}`,
    group: HOT,
    baseline: replicas === 0,
    ignore,
    n: 20,
    warmup: 2,
    async fn() {
      // A fresh generator per iteration: its ramp-up reservations are part of the cost.
      await using id = new KvId(`hot-${replicas}-${run}-${generation++}`, { redis, replicas });
      for (let i = 0; i < LOOP; i++) await id.next();
    },
  });
}
