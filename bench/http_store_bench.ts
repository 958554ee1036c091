/**
 * `HttpStore` (`@kvid/core/client`): what an edge process pays per ID when its segments come
 * from the ID service over HTTP, and how many reservations per second one service instance
 * answers. The service runs in this process behind its own listener (`@kvid/core/serve`) on a
 * Redis the bench starts (or `KVID_BENCH_URL`); loopback HTTP/1.1 with keep-alive.
 *
 * - `next()` per ID: a `KvId` on `HttpStore` with default options, warm; each iteration takes
 *   100,000 IDs (time/iter / 100,000 = one ID; segments switch during it, the prefetch hides
 *   them), beside the same `KvId` on `RedisStore` (the baseline).
 * - Reservations: each iteration is one `POST /v1/segments/{name}` of 1,000 IDs, awaited
 *   (1 / time per iteration = reservations per second, one at a time), and 16 at once.
 *
 *     deno bench -A bench/http_store_bench.ts
 *
 * @module
 */

import { createClient } from "redis";
import { fromNodeRedis, KvId, type NodeRedisLike } from "../mod.ts";
import { HttpStore } from "../src/client/mod.ts";
import { createHandler } from "../src/service/mod.ts";
import { listen } from "../src/service/serve.ts";
import { benchServer } from "./_server.ts";

const TOKEN = "bench-token-0123456789abcdef";
const server = await benchServer();
const client = await createClient({ url: server.url }).connect();
const redis = fromNodeRedis(client as unknown as NodeRedisLike);
const service = createHandler({ redis, tokens: `${TOKEN}:*`, log: () => {} });
const listener = listen({ hostname: "127.0.0.1", port: 0, handler: service.fetch, log: () => {} });
const url = `http://127.0.0.1:${listener.addr.port}`;
const store = new HttpStore(url, { token: TOKEN });

const run = `${Date.now().toString(36)}`;
const edge = new KvId(`bench-edge-${run}`, { store });
const direct = new KvId(`bench-direct-${run}`, { redis });
// Warm both to their steady step before measuring.
for (let i = 0; i < 2_000_000; i++) await edge.next();
for (let i = 0; i < 2_000_000; i++) await direct.next();

const IDS = 100_000;
Deno.bench("KvId on RedisStore: next() x 100,000", { group: "next", baseline: true }, async () => {
  for (let i = 0; i < IDS; i++) await direct.next();
});
Deno.bench("KvId on HttpStore: next() x 100,000", { group: "next" }, async () => {
  for (let i = 0; i < IDS; i++) await edge.next();
});

const opts = { floor: 0n, raiseTo: 0n, guard: true, exact: true };
Deno.bench(
  "HttpStore.reserve(1,000): one reservation",
  { group: "reserve", baseline: true },
  async () => {
    await store.reserve("kvid", `bench-seg-${run}`, 1_000, opts);
  },
);
Deno.bench("HttpStore.reserve(1,000): 16 at once", { group: "reserve" }, async () => {
  await Promise.all(
    Array.from({ length: 16 }, () => store.reserve("kvid", `bench-seg-${run}`, 1_000, opts)),
  );
});

globalThis.addEventListener("unload", () => {
  // deno bench ends the process after the last bench; nothing to await here.
  void edge.close();
  void direct.close();
  void listener.shutdown();
  client.destroy();
});
