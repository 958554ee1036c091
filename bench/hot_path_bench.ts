/**
 * Suite 1, the hot path: IDs handed out from memory, no network once warm.
 *
 * Every bench takes 100,000 IDs per iteration, so `deno bench`'s time/iter divided by 100,000 is
 * the cost of one ID (the report does the division) and the harness overhead per iteration
 * (well under 1 µs) is negligible. KvId runs with a fixed 100M step reserved before the
 * measurement; at the end each generator is checked to have made no other reservation.
 *
 * Baseline: `await` of a bare async counter, the floor of any awaited API. The peers are called
 * as their users call them, synchronously.
 *
 *     deno bench -A bench/hot_path_bench.ts
 *
 * @module
 */

import { Snowflake } from "@sapphire/snowflake";
import { monotonicFactory } from "ulid";
import { uuidv7 } from "uuidv7";
import { KvId } from "../mod.ts";
import { BENCH_KEY, benchClient, benchServer, field, log, metric, warmUpBench } from "./_server.ts";

/** IDs per bench iteration. */
const LOOP = 100_000;
const GROUP = `hot path (${LOOP.toLocaleString("en-US")} IDs per iteration)`;
// One reservation of 100M IDs covers a whole bench (the batches take up to ~20M), far from the
// 80M prefetch mark, so nothing is reserved during the measurement.
const STEP = 100_000_000;
const ITER = { n: 40, warmup: 5 };
// The slow peers: fewer iterations, so each bench takes about a second.
const SLOW = { n: 5, warmup: 1 };

const server = await benchServer();
const client = await benchClient(server.url);
const fixed = { redis: client.redis, key: BENCH_KEY, minStep: STEP, maxStep: STEP };

const numbers = new KvId(field("hot", "number"), fixed);
const bigints = new KvId(field("hot", "bigint"), { ...fixed, bigint: true });
const batch100 = new KvId(field("hot", "batch100"), fixed);
const batch10k = new KvId(field("hot", "batch10k"), fixed);
// Reserve now, so no bench iteration waits for the network.
await Promise.all([numbers.next(), bigints.next(), batch100.next(), batch10k.next()]);

let sink: unknown;
let bareCount = 0;
const bare = {
  // The cheapest awaited ID source possible: what KvId.next() is compared with. Async on
  // purpose, like KvId.next(), which is async too.
  // deno-lint-ignore require-await
  async next(): Promise<number> {
    return ++bareCount;
  },
};
const ulid = monotonicFactory();
const snowflake = new Snowflake(new Date("2024-01-01T00:00:00Z"));

// Warm every subject before the first bench: without this, JIT compilation and the collection of
// the setup's garbage (npm modules, the client) run in the background during whichever bench
// comes first and inflate its average several times over.
for (let round = 0; round < 5; round++) {
  for (let i = 0; i < LOOP; i++) {
    await bare.next();
    await numbers.next();
    await bigints.next();
  }
  for (let i = 0; i < LOOP / 100; i++) await batch100.nextBatch(100);
  for (let i = 0; i < LOOP / 10_000; i++) await batch10k.nextBatch(10_000);
  for (let i = 0; i < LOOP / 50; i++) {
    sink = [crypto.randomUUID(), uuidv7(), ulid(), snowflake.generate()];
  }
}

warmUpBench(async () => {
  let last = 0;
  for (let i = 0; i < LOOP; i++) last = await bare.next();
  sink = last;
});

Deno.bench("await bare async counter", { group: GROUP, baseline: true, ...ITER }, async () => {
  let last = 0;
  for (let i = 0; i < LOOP; i++) last = await bare.next();
  sink = last;
});

Deno.bench("await kvid.next() (number)", { group: GROUP, ...ITER }, async () => {
  let last = 0;
  for (let i = 0; i < LOOP; i++) last = await numbers.next();
  sink = last;
});

Deno.bench("await kvid.next() (bigint)", { group: GROUP, ...ITER }, async () => {
  let last = 0n;
  for (let i = 0; i < LOOP; i++) last = await bigints.next();
  sink = last;
});

Deno.bench("await kvid.nextBatch(100)", { group: GROUP, ...ITER }, async () => {
  let last: number[] = [];
  for (let i = 0; i < LOOP / 100; i++) last = await batch100.nextBatch(100);
  sink = last;
});

Deno.bench("await kvid.nextBatch(10_000)", { group: GROUP, ...ITER }, async () => {
  let last: number[] = [];
  for (let i = 0; i < LOOP / 10_000; i++) last = await batch10k.nextBatch(10_000);
  sink = last;
});

Deno.bench("crypto.randomUUID()", { group: GROUP, ...ITER }, () => {
  let last = "";
  for (let i = 0; i < LOOP; i++) last = crypto.randomUUID();
  sink = last;
});

Deno.bench("npm:uuidv7 uuidv7()", { group: GROUP, ...SLOW }, () => {
  let last = "";
  for (let i = 0; i < LOOP; i++) last = uuidv7();
  sink = last;
});

Deno.bench("npm:ulid monotonicFactory()()", { group: GROUP, ...SLOW }, () => {
  let last = "";
  for (let i = 0; i < LOOP; i++) last = ulid();
  sink = last;
});

Deno.bench("npm:@sapphire/snowflake generate()", { group: GROUP, n: 20, warmup: 2 }, () => {
  let last = 0n;
  for (let i = 0; i < LOOP; i++) last = snowflake.generate();
  sink = last;
});

addEventListener("unload", () => {
  // A reservation inside the measurement would make the figures meaningless: say so.
  for (const [name, gen] of Object.entries({ numbers, bigints, batch100, batch10k })) {
    const s = gen.stats();
    metric("hot path", `generator ${name}`, {
      reservations: s.segments,
      stalls: s.stalls,
      clean: s.segments === 1 && s.stalls <= 1,
    });
    if (s.segments !== 1) log(`  WARNING: ${name} reserved ${s.segments} times during the bench`);
  }
  void sink;
});
