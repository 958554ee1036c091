/**
 * Restarts (issue 15): what a clean restart costs, before and after the give-back on close()
 * and the remembered step. Not a `deno bench` suite (each figure is a few seconds of load, then
 * a restart): run it by hand and copy its tables into bench/RESULTS.md.
 *
 *     deno run -A bench/restarts.ts [--load-ms=5000] [--restarts=3]
 *
 * Before: `{ giveBack: false, rememberStep: false }` (the behaviour until issue 15). After: the
 * defaults; "giveBack only" separates the two. Every generator uses the default step rule and limits (doubling, 1 .. 1,000,000).
 *
 * 1. Gap per clean restart: for 1 and for 4 generators on one counter (each a process of its
 *    own as far as the counter is concerned), `restarts` cycles of `load-ms` of load (each
 *    generator takes 50,000 IDs/s, from calls issued every 5 ms), then `close()`. The gap of a
 *    cycle is how far the counter moved minus the IDs handed out.
 * 2. Ramp-up after a restart: one generator warms the counter up under load and closes; a new
 *    one then takes a load ramp (0 to 200,000 IDs/s over 2 s, from calls issued every 5 ms).
 *    Over its first 3 s: round trips to the server, calls that waited for a reservation
 *    (`stats().stalls`) and the most callers waiting on the server at once.
 *
 * @module
 */

import { parseArgs } from "node:util";
import { KvId, type KvIdOptions, type RedisClient } from "../mod.ts";
import { openClient } from "../tests/support/redis_clients.ts";
import { command, startServer } from "../tests/support/redis_server.ts";

const args = parseArgs({
  args: Deno.args,
  options: {
    "load-ms": { type: "string" },
    restarts: { type: "string" },
    part: { type: "string" },
  },
});
const LOAD_MS = Number(args.values["load-ms"] ?? 5_000);
const RESTARTS = Number(args.values.restarts ?? 3);
const PART = args.values.part ?? "all"; // "gap", "ramp" or "all"
const RAMP_MS = 2_000;
const RAMP_RATE = 200_000; // IDs per second at the top of the ramp
const WATCH_MS = 3_000;
const TICK_MS = 5;
const LOAD_RATE = 50_000; // IDs per second per generator in the gap cycles

const MODES: Record<string, KvIdOptions & { bigint?: false }> = {
  before: { giveBack: false, rememberStep: false },
  "after, giveBack only": { rememberStep: false },
  after: {},
};

/** Counts every command a generator sends (reservations, step, give-back). */
class Counting implements RedisClient {
  calls = 0;
  constructor(readonly inner: RedisClient) {}
  hincrby(key: string, field: string, n: number): Promise<unknown> {
    this.calls++;
    return this.inner.hincrby(key, field, n);
  }
  eval(script: string, keys: string[], a: string[]): Promise<unknown> {
    return this.inner.eval(script, keys, a); // only after NOSCRIPT: the same round trip
  }
  evalsha(sha: string, keys: string[], a: string[]): Promise<unknown> {
    this.calls++;
    return this.inner.evalsha(sha, keys, a);
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const fmt = (n: number) => Math.round(n).toLocaleString("en-US");

await using server = await startServer();
await using client = await openClient("node-redis", server.url);
const counter = async (name: string) =>
  BigInt((await command(server.url, "HGET", "kvid", name) as string | null) ?? "0");

console.log(`# restarts: load ${LOAD_MS} ms per cycle, ${RESTARTS} clean restarts\n`);
if (PART !== "ramp") {
  console.log(
    "| mode | generators | gap per restart (mean) | reserved per restart | gap / reserved | step at close |",
  );
  console.log("| --- | --: | --: | --: | --: | --: |");
}
for (const processes of PART === "ramp" ? [] : [1, 4]) {
  for (const [mode, options] of Object.entries(MODES)) {
    const name = `gap-${mode}-${processes}-${Date.now()}`;
    let gaps = 0;
    let reserved = 0;
    let steps = 0;
    for (let r = 0; r < RESTARTS; r++) {
      const before = await counter(name);
      const gens = Array.from(
        { length: processes },
        () => new KvId(name, { redis: client.redis, ...options }),
      );
      const runs = await Promise.all(gens.map((g) => ramp(g, 0, LOAD_MS, LOAD_RATE)));
      const taken = runs.map((run) => run.taken);
      steps += gens.reduce((n, g) => n + g.stats().step, 0) / processes;
      await Promise.all(gens.map((g) => g.close()));
      const moved = Number((await counter(name)) - before);
      gaps += moved - taken.reduce((a, b) => a + b, 0);
      reserved += moved;
    }
    console.log(
      `| ${mode} | ${processes} | ${fmt(gaps / RESTARTS)} | ${fmt(reserved / RESTARTS)} | ${
        (100 * gaps / reserved).toFixed(1)
      }% | ${fmt(steps / RESTARTS)} |`,
    );
  }
}

if (PART !== "gap") {
  console.log(
    `\n| mode | round trips in the first ${
      WATCH_MS / 1000
    } s | calls that waited | most callers waiting at once | step after ${WATCH_MS / 1000} s |`,
  );
  console.log("| --- | --: | --: | --: | --: |");
}
for (const [mode, options] of PART === "gap" ? [] : Object.entries(MODES)) {
  const name = `ramp-${mode}-${Date.now()}`;
  // Warm-up: the counter's previous process, under the top rate, then a clean shutdown.
  const warm = new KvId(name, { redis: client.redis, ...options });
  await ramp(warm, 0, WATCH_MS);
  await warm.close();
  // The restarted process.
  const counting = new Counting(client.redis);
  const gen = new KvId(name, { redis: counting, ...options });
  const { waitingMax } = await ramp(gen, RAMP_MS, WATCH_MS);
  const s = gen.stats();
  console.log(
    `| ${mode} | ${counting.calls} | ${fmt(s.stalls)} | ${fmt(waitingMax)} | ${fmt(s.step)} |`,
  );
  await gen.close();
}

/** Calls every TICK_MS at a rate ramping from 0 to `top` over `rampMs`, for `ms`. */
async function ramp(gen: KvId<number>, rampMs: number, ms: number, top = RAMP_RATE) {
  const start = performance.now();
  let outstanding = 0;
  let waitingMax = 0;
  let owed = 0;
  let taken = 0;
  const calls: Promise<unknown>[] = [];
  for (let now = start; now - start < ms; now = performance.now()) {
    const rate = top * (rampMs === 0 ? 1 : Math.min(1, (now - start) / rampMs));
    owed += rate * TICK_MS / 1000;
    for (; owed >= 1; owed--) {
      outstanding++;
      taken++;
      calls.push(gen.next().finally(() => outstanding--));
    }
    // Calls served from the buffer settle within a few microtasks: the rest wait on the server.
    for (let i = 0; i < 4; i++) await Promise.resolve();
    waitingMax = Math.max(waitingMax, outstanding);
    if (calls.length > 10_000) await Promise.all(calls.splice(0));
    await sleep(TICK_MS);
  }
  await Promise.all(calls);
  return { waitingMax, taken };
}
