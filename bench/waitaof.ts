/**
 * The cost of `waitAof` (WAITAOF 1 0 after each reservation) on valkey-server with AOF: one
 * server with `appendfsync everysec`, one with `always`, both started here on loopback. The two
 * settings (`waitAof: false`, `true`) are measured in turn (A B B A rounds), so the load of other
 * processes and the disk's moods land on both alike; medians over the rounds.
 *
 * - reservation: a KvId of step 1 without prefetch, so every `next()` is one reservation;
 * - cold start: a new generator's first ID (the reservation and its confirmation);
 * - next() per ID: 100,000 IDs from a fresh generator with defaults (its ramp-up included).
 *
 *     deno run -A bench/waitaof.ts
 *
 * @module
 */

import { createClient } from "redis";
import { fromNodeRedis, KvId, type RedisClient } from "../mod.ts";
import { command } from "../tests/support/redis_server.ts";

const ROUNDS = 8;
const TRIPS = 200;
const COLD = 40;
const LOOP = 100_000;

interface Running {
  url: string;
  redis: RedisClient;
  stop(): Promise<void>;
}

async function startValkey(fsync: string): Promise<Running> {
  const dir = await Deno.makeTempDir({ prefix: `kvid-bench-waitaof-${fsync}-` });
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  const child = new Deno.Command("valkey-server", {
    args: ["--port", String(port), "--bind", "127.0.0.1", "--dir", dir, "--save", ""].concat(
      ["--appendonly", "yes", "--appendfsync", fsync],
    ),
    stdin: "null",
    stdout: "null",
    stderr: "null",
  }).spawn();
  const url = `redis://127.0.0.1:${port}`;
  for (let i = 0; i < 400; i++) {
    if (await command(url, "PING").then(() => true, () => false)) break;
    await new Promise((r) => setTimeout(r, 25));
  }
  const client = createClient({ url });
  client.on("error", () => {});
  await client.connect();
  return {
    url,
    redis: fromNodeRedis(client),
    async stop() {
      client.destroy();
      child.kill("SIGKILL");
      await child.status;
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    },
  };
}

function median(values: number[]): number {
  const s = [...values].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

function quantile(values: number[], q: number): number {
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(s.length * q))];
}

const run = Date.now().toString(36);
let generation = 0;

/** Per-reservation latencies (ms) of `TRIPS` reservations. */
async function trips(redis: RedisClient, waitAof: boolean, into: number[]): Promise<void> {
  await using id = new KvId(`trip-${waitAof}-${run}-${generation++}`, {
    redis,
    waitAof,
    prefetchAt: 0,
    maxStep: 1,
    rememberStep: false,
    giveBack: false,
  });
  await id.next();
  for (let i = 0; i < TRIPS; i++) {
    const t = performance.now();
    await id.next();
    into.push(performance.now() - t);
  }
}

/** First-ID latencies (ms) of `COLD` new generators. */
async function cold(redis: RedisClient, waitAof: boolean, into: number[]): Promise<void> {
  for (let i = 0; i < COLD; i++) {
    const t = performance.now();
    await using id = new KvId(`cold-${waitAof}-${run}-${generation++}`, {
      redis,
      waitAof,
      rememberStep: false,
      giveBack: false,
    });
    await id.next();
    into.push(performance.now() - t);
  }
}

/** ns per ID of `LOOP` IDs from a fresh generator. */
async function hot(redis: RedisClient, waitAof: boolean, into: number[]): Promise<void> {
  const t = performance.now();
  await using id = new KvId(`hot-${waitAof}-${run}-${generation++}`, { redis, waitAof });
  for (let i = 0; i < LOOP; i++) await id.next();
  into.push((performance.now() - t) * 1e6 / LOOP);
}

const rows: string[] = [];
for (const fsync of ["everysec", "always"]) {
  const server = await startValkey(fsync);
  try {
    const version = String(await command(server.url, "INFO", "server"))
      .match(/valkey_version:(\S+)/)?.[1];
    const m = {
      trip: [[], []] as number[][],
      cold: [[], []] as number[][],
      hot: [[], []] as number[][],
    };
    // Warm-up (JIT, script cache), not counted.
    for (const w of [false, true]) await trips(server.redis, w, []);
    for (let round = 0; round < ROUNDS; round++) {
      const order = round % 2 === 0 ? [false, true, true, false] : [true, false, false, true];
      for (const w of order) {
        const i = Number(w);
        await trips(server.redis, w, m.trip[i]);
        await cold(server.redis, w, m.cold[i]);
        await hot(server.redis, w, m.hot[i]);
      }
    }
    const f = (v: number, d = 3) => v.toFixed(d);
    for (const i of [0, 1]) {
      rows.push(
        `| valkey ${version} | ${fsync} | ${i === 1} | ${f(median(m.trip[i]))} | ${
          f(quantile(m.trip[i], 0.99))
        } | ${f(median(m.cold[i]))} | ${f(median(m.hot[i]), 1)} |`,
      );
    }
  } finally {
    await server.stop();
  }
}
console.log(
  `waitAof cost, ${new Date().toISOString().slice(0, 10)}, load ${
    Deno.loadavg()[0].toFixed(1)
  }, ${navigator.hardwareConcurrency} cores, medians over ${ROUNDS} A B B A rounds\n`,
);
console.log(
  "| server | appendfsync | waitAof | reservation ms (median) | reservation ms (p99) | cold start ms (median) | next() ns per ID (median, 100k from a fresh generator) |",
);
console.log("| --- | --- | --- | ---: | ---: | ---: | ---: |");
for (const r of rows) console.log(r);
