/**
 * Suite 2, round trips: IDs per second and server commands per million IDs, KvId against one
 * `INCR`, one `HINCRBY` or one `EVALSHA` per ID, with one caller and with 100 callers.
 *
 * Each iteration takes 1,000 IDs, so time/iter in µs is ns per ID. Commands are read from
 * `INFO commandstats` before and after every iteration (outside the timed part) and summed over
 * the run; they include the commands a script runs inside the server (KvId's reserve script
 * runs several per reservation). Round trips are counted at the client.
 *
 * KvId runs with its defaults (guard on, steps 1 .. 1,000,000 adapting to 10-minute segments,
 * prefetch at 20%), from a cold start at the first iteration. A paced run at 100k IDs/s checks
 * the target of at least 1,000x fewer commands per ID than per-ID INCR.
 *
 *     deno bench -A bench/round_trips_bench.ts
 *
 * @module
 */

import { KvId } from "../mod.ts";
import {
  BENCH_KEY,
  benchClient,
  benchServer,
  commandCalls,
  commandDelta,
  CountingClient,
  field,
  metric,
  RUN_ID,
  sleep,
} from "./_server.ts";

/** IDs per bench iteration. */
const PER_ITER = 1_000;
const CALLERS = 100;
const SEQ = `round trips, 1 caller (${PER_ITER.toLocaleString("en-US")} IDs per iteration)`;
const PAR = `round trips, ${CALLERS} callers (${
  PER_ITER.toLocaleString("en-US")
} IDs per iteration)`;

const server = await benchServer();
const { raw, redis } = await benchClient(server.url);

// The per-ID script a user would write instead: one EVALSHA per ID.
const SCRIPT = "return redis.call('HINCRBY', KEYS[1], ARGV[1], 1)";
const sha = await raw.scriptLoad(SCRIPT);
const incrKey = `${BENCH_KEY}:incr:${RUN_ID}`;

/** Per-ID peers: one command per ID. */
const peers: Record<string, (variant: string) => () => Promise<unknown>> = {
  "INCR per ID": () => () => raw.incr(incrKey),
  "HINCRBY per ID": (v) => {
    const f = field("rt", `hincrby-${v}`);
    return () => raw.hIncrBy(BENCH_KEY, f, 1);
  },
  "EVALSHA per ID": (v) => {
    const f = field("rt", `evalsha-${v}`);
    return () => raw.evalSha(sha, { keys: [BENCH_KEY], arguments: [f] });
  },
};

/** What one bench took, summed over all its iterations (warm-up included). */
interface Tally {
  ids: number;
  commands: number;
  roundTrips: number;
}

/** Run `take` for PER_ITER IDs, one caller at a time or `callers` at once. */
async function takeMany(take: () => Promise<unknown>, callers: number): Promise<void> {
  if (callers === 1) {
    for (let i = 0; i < PER_ITER; i++) await take();
    return;
  }
  const each = PER_ITER / callers;
  await Promise.all(
    Array.from({ length: callers }, async () => {
      for (let i = 0; i < each; i++) await take();
    }),
  );
}

/** A bench that counts server commands around each timed iteration. */
function countedBench(
  group: string,
  name: string,
  baseline: boolean,
  callers: number,
  make: () => { take: () => Promise<unknown>; roundTrips: () => number },
): void {
  const tally: Tally = { ids: 0, commands: 0, roundTrips: 0 };
  let subject: ReturnType<typeof make> | undefined;
  Deno.bench(name, { group, baseline, n: 10, warmup: 2 }, async (b) => {
    subject ??= make();
    const before = await commandCalls(server.url);
    const trips = subject.roundTrips();
    b.start();
    await takeMany(subject.take, callers);
    b.end();
    tally.ids += PER_ITER;
    tally.roundTrips += subject.roundTrips() - trips;
    tally.commands += commandDelta(before, await commandCalls(server.url));
  });
  addEventListener("unload", () => {
    if (tally.ids === 0) return; // filtered out
    metric("round trips", `${name}, ${callers === 1 ? "1 caller" : `${callers} callers`}`, {
      ids: tally.ids,
      "round trips per 1M IDs": tally.roundTrips / tally.ids * 1e6,
      "server commands per 1M IDs": tally.commands / tally.ids * 1e6,
    });
  });
}

for (const [group, callers, v] of [[SEQ, 1, "seq"], [PAR, CALLERS, "par"]] as const) {
  for (const [name, peer] of Object.entries(peers)) {
    countedBench(group, name, name === "INCR per ID", callers, () => {
      let trips = 0;
      const take = peer(v);
      return { take: () => (trips++, take()), roundTrips: () => trips };
    });
  }
  for (const guard of [true, false]) {
    const name = `KvId next() (defaults${guard ? "" : ", guard off"})`;
    countedBench(group, name, false, callers, () => {
      const counting = new CountingClient(redis);
      const id = new KvId(field("rt", `kvid-${v}-${guard}`), {
        redis: counting,
        key: BENCH_KEY,
        guard,
      });
      return { take: () => id.next(), roundTrips: () => counting.sent };
    });
  }
}

// The target is stated at 100k IDs/s: pace a cold generator at that rate.
const RATE = 100_000; // IDs per second
const TICK_MS = 100; // one bench iteration paces this long
{
  const counting = new CountingClient(redis);
  const id = new KvId(field("rt", "paced"), { redis: counting, key: BENCH_KEY });
  const tally: Tally = { ids: 0, commands: 0, roundTrips: 0 };
  const name = `KvId next() paced at ${RATE.toLocaleString("en-US")} IDs/s from cold start`;
  Deno.bench(
    name,
    { group: "round trips, paced (100 ms per iteration)", n: 10, warmup: 0 },
    async () => {
      const before = await commandCalls(server.url);
      const trips = counting.sent;
      const start = performance.now();
      let taken = 0;
      const total = RATE * TICK_MS / 1000;
      while (taken < total) {
        // Catch up to the schedule, then let the event loop run (replies, prefetch).
        const due = Math.min(total, Math.ceil((performance.now() - start) * RATE / 1000));
        for (; taken < due; taken++) await id.next();
        await sleep(1);
      }
      tally.ids += taken;
      tally.roundTrips += counting.sent - trips;
      tally.commands += commandDelta(before, await commandCalls(server.url));
    },
  );
  addEventListener("unload", () => {
    if (tally.ids === 0) return;
    metric("round trips", name, {
      ids: tally.ids,
      seconds: tally.ids / RATE,
      "round trips per 1M IDs": tally.roundTrips / tally.ids * 1e6,
      "server commands per 1M IDs": tally.commands / tally.ids * 1e6,
      "INCR commands per 1M IDs": 1e6,
      "fewer commands than INCR": tally.commands > 0 ? tally.ids / tally.commands : Infinity,
      "step now": id.stats().step,
    });
  });
}
