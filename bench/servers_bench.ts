/**
 * The groups `deno task bench:report` runs on each server it finds (redis-server, valkey-server,
 * kvrocks) and writes side by side: a reservation, a round trip, a cold start and contention,
 * each against a raw command on the same client as its baseline (ratios within one run).
 *
 * - **reservation**: `next()` of a generator with a step of 1 and no prefetch, so each call is
 *   one reservation with everything the server asks for (the guard script; `WAITAOF` where the
 *   server has it), against one raw `HINCRBY`.
 * - **round trip**: `PING`, `HINCRBY` and the `EVALSHA` of a one-line script, against `PING`.
 * - **cold start**: `new KvId()` on a fresh name to its first ID (the client's durability read
 *   shared), against one raw `HINCRBY`.
 * - **contention**: 16 live generators on one counter (step 10, no prefetch) taking 100 IDs
 *   each at once, 160 reservations, against 160 concurrent raw `HINCRBY`.
 *
 *     deno bench -A bench/servers_bench.ts                          # KVID_TEST_SERVER's server
 *     KVID_BENCH_URL=redis://127.0.0.1:6666 deno bench -A bench/servers_bench.ts
 *
 * @module
 */

import { KvId } from "../mod.ts";
import { BENCH_KEY, benchClient, benchServer, field, warmUpBench } from "./_server.ts";

const server = await benchServer();
const { raw, redis } = await benchClient(server.url);

const RESERVATION = "servers: one reservation";
const ROUND_TRIP = "servers: one round trip";
const COLD = "servers: cold start";
const CONTENTION = "servers: 16 generators on one counter (160 reservations per iteration)";
const ITER = { n: 200, warmup: 20 };

const rawField = field("servers", "raw");
warmUpBench(async () => {
  await raw.hIncrBy(BENCH_KEY, rawField, 1);
});

Deno.bench("raw HINCRBY", { group: RESERVATION, baseline: true, ...ITER }, async () => {
  await raw.hIncrBy(BENCH_KEY, rawField, 1);
});

const perReservation = new KvId(field("servers", "reservation"), {
  redis,
  key: BENCH_KEY,
  minStep: 1,
  maxStep: 1,
  prefetchAt: 0,
});
addEventListener("unload", () => void perReservation.close());
Deno.bench("KvId next(), step 1: one reservation", { group: RESERVATION, ...ITER }, async () => {
  await perReservation.next();
});

Deno.bench("PING", { group: ROUND_TRIP, baseline: true, ...ITER }, async () => {
  await raw.ping();
});
Deno.bench("HINCRBY", { group: ROUND_TRIP, ...ITER }, async () => {
  await raw.hIncrBy(BENCH_KEY, rawField, 1);
});
const SCRIPT = "return redis.call('HINCRBY', KEYS[1], ARGV[1], 1)";
const sha = await raw.scriptLoad(SCRIPT);
Deno.bench("EVALSHA (one HINCRBY inside)", { group: ROUND_TRIP, ...ITER }, async () => {
  await raw.evalSha(sha, { keys: [BENCH_KEY], arguments: [rawField] });
});

Deno.bench("raw HINCRBY", { group: COLD, baseline: true, n: 100, warmup: 10 }, async () => {
  await raw.hIncrBy(BENCH_KEY, rawField, 1);
});
let cold = 0;
Deno.bench("new KvId(fresh name).next()", { group: COLD, n: 100, warmup: 10 }, async () => {
  await using id = new KvId(field("servers", `cold-${cold++}`), { redis, key: BENCH_KEY });
  await id.next();
});

const GENERATORS = 16;
const contended = field("servers", "contention");
Deno.bench(
  `${GENERATORS * 10} concurrent raw HINCRBY`,
  { group: CONTENTION, baseline: true, n: 30, warmup: 3 },
  async () => {
    await Promise.all(
      Array.from({ length: GENERATORS * 10 }, () => raw.hIncrBy(BENCH_KEY, contended, 10)),
    );
  },
);
const generators = Array.from(
  { length: GENERATORS },
  () =>
    new KvId(field("servers", "contention-kvid"), {
      redis,
      key: BENCH_KEY,
      minStep: 10,
      maxStep: 10,
      prefetchAt: 0,
    }),
);
addEventListener("unload", () => generators.forEach((g) => void g.close()));
Deno.bench(
  `${GENERATORS} KvId x 100 IDs, step 10`,
  { group: CONTENTION, n: 30, warmup: 3 },
  async () => {
    const ids = await Promise.all(generators.map(async (id) => {
      const got: number[] = [];
      for (let i = 0; i < 100; i++) got.push(await id.next());
      return got;
    }));
    if (new Set(ids.flat()).size !== GENERATORS * 100) throw new Error("a duplicate ID");
  },
);
