/**
 * What the durability probe costs a cold start: time to the first ID of a fresh generator, and
 * the commands it sends, with the probe (the default) and without it (the same Redis store
 * behind a wrapper that hides `durability()`: what every generator did before issue 21).
 *
 *     deno run -A bench/durability.ts        # KVID_DURABILITY_RUNS=400 for more
 *
 * Each run is a new generator on a new name (a fresh process would also connect: the
 * connection is shared here, so what is left is the probe's round trip). The two variants
 * alternate, so load from other work falls on both alike.
 *
 * @module
 */

import { fromNodeRedis, KvId, type RedisClient } from "../mod.ts";
import { RedisStore } from "../src/stores/redis/redis_store.ts";
import type { Release, StepMemory, Store } from "../src/stores/mod.ts";
import { createClient } from "redis";
import { benchServer, quantile, RUN_ID } from "./_server.ts";

const RUNS = Number(Deno.env.get("KVID_DURABILITY_RUNS") ?? 200);

/** Counts every command a generator sends, scripts and plain commands alike. */
class Counting implements RedisClient {
  sent = 0;
  constructor(readonly inner: RedisClient) {}
  hincrby(k: string, f: string, n: number) {
    this.sent++;
    return this.inner.hincrby(k, f, n);
  }
  eval(s: string, k: string[], a: string[]) {
    this.sent++;
    return this.inner.eval(s, k, a);
  }
  evalsha(s: string, k: string[], a: string[]) {
    this.sent++;
    return this.inner.evalsha(s, k, a);
  }
  sendCommand(c: string, a?: string[]) {
    this.sent++;
    return this.inner.sendCommand!(c, a);
  }
}

const server = await benchServer(); // stopped when the process exits
const raw = await createClient({ url: server.url }).connect();
const redis = new Counting(fromNodeRedis(raw));
const probed = new RedisStore(redis);
const blind: Store & StepMemory & Release = {
  reserve: (...a) => probed.reserve(...a),
  loadStep: (...a) => probed.loadStep(...a),
  saveStep: (...a) => probed.saveStep(...a),
  release: (...a) => probed.release(...a),
};
const results: Record<string, { ms: number[]; commands: number[] }> = {
  "with the probe (default)": { ms: [], commands: [] },
  "without (before issue 21)": { ms: [], commands: [] },
};
// Warm up the scripts' SHA cache on the server and the client's code paths.
for (const store of [probed, blind]) {
  await using id = new KvId(`warm-${RUN_ID}-${store === probed}`, { store });
  await id.next();
}
for (let i = 0; i < RUNS; i++) {
  for (
    const [label, store] of [["with the probe (default)", probed], [
      "without (before issue 21)",
      blind,
    ]] as const
  ) {
    const before = redis.sent;
    const started = performance.now();
    const id = new KvId(`cold-${RUN_ID}-${i}-${store === probed}`, { store });
    await id.next();
    results[label].ms.push(performance.now() - started);
    results[label].commands.push(redis.sent - before);
    await id.close();
  }
}
console.log(
  `durability probe, cold start (${RUNS} fresh generators each, ${server.label}, ${
    new Date().toISOString().slice(0, 10)
  }, load ${Deno.loadavg()[0].toFixed(1)})`,
);
for (const [label, r] of Object.entries(results)) {
  const ms = Float64Array.from(r.ms).sort();
  const cmds = r.commands.reduce((a, b) => a + b, 0) / r.commands.length;
  console.log(
    `  ${label}: first ID after median ${quantile(ms, 0.5).toFixed(3)} ms, p90 ${
      quantile(ms, 0.9).toFixed(3)
    } ms; ${cmds.toFixed(1)} commands to the first ID`,
  );
}
await raw.quit();
