/**
 * Suite 3, segment boundaries: the latency of every `next()` call across many segment
 * boundaries, with prefetch on and off, through a loopback proxy that adds a delay each way
 * (`tests/support/proxy.ts`, run in a Worker so its work does not land between the timed calls), so a
 * reservation costs a real round trip.
 *
 * The generator has a fixed step and the consumer takes IDs at a steady rate, in short bursts
 * between 1 ms sleeps (so replies get read). One bench iteration takes one segment's worth of
 * IDs, so it crosses one boundary; deno bench's time/iter is then just the pacing (step / rate)
 * plus any stall. The figures are the printed percentiles: every call is timed with
 * `performance.now()` (itself ~0.1 µs, included), the first 3 iterations (deno's warm-up and the
 * cold start) are left out. Stalls = calls that found no ID buffered and waited for a
 * reservation (`stats().stalls`). A control runs the same loop on a bare async counter, to show
 * what the machine and the clock add to the tail without any KvId or network.
 *
 * The default step is sized for the rate: prefetch starts with 20% of a segment left, which at
 * 200,000 IDs/s is 10 ms of IDs, more than the ~4 ms round trip.
 *
 * Settings (environment): `KVID_BENCH_DELAY_MS` (delay each way, default 2),
 * `KVID_BENCH_BOUNDARY_STEP` (default 10,000), `KVID_BENCH_BOUNDARY_RATE` (IDs/s, default
 * 200,000), `KVID_BENCH_BOUNDARIES` (measured boundaries per mode, default 100).
 *
 *     deno bench -A bench/boundaries_bench.ts
 *
 * @module
 */

import { KvId, type RedisClient } from "../mod.ts";
import {
  BENCH_KEY,
  benchClient,
  benchServer,
  field,
  metric,
  quantile,
  sleep,
  warmUpBench,
} from "./_server.ts";

/** Start the delay proxy in a Worker; it is terminated when this file unloads. */
async function startProxyWorker(host: string, port: number, delayMs: number): Promise<string> {
  const worker = new Worker(new URL("./_proxy_worker.ts", import.meta.url), { type: "module" });
  addEventListener("unload", () => worker.terminate());
  const ready = new Promise<{ port: number }>((resolve, reject) => {
    worker.onmessage = (e) => resolve(e.data);
    worker.onerror = (e) => reject(e.error ?? new Error(e.message));
  });
  worker.postMessage({ host, port, delayMs });
  return `redis://127.0.0.1:${(await ready).port}`;
}

function envNumber(name: string, fallback: number): number {
  const raw = Deno.env.get(name);
  if (raw === undefined || raw === "") return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < 0) throw new TypeError(`${name} must be a number >= 0`);
  return value;
}

const DELAY_MS = envNumber("KVID_BENCH_DELAY_MS", 2);
const STEP = envNumber("KVID_BENCH_BOUNDARY_STEP", 10_000);
const RATE = envNumber("KVID_BENCH_BOUNDARY_RATE", 200_000);
const BOUNDARIES = envNumber("KVID_BENCH_BOUNDARIES", 100);
const SKIP = 3; // deno's warm-up iteration, the cold start, one more to settle

const server = await benchServer();
const proxyUrl = await startProxyWorker(server.host, server.port, DELAY_MS);
const { redis } = await benchClient(proxyUrl);

const GROUP = `boundaries, ${DELAY_MS} ms each way, step ${STEP.toLocaleString("en-US")} at ${
  RATE.toLocaleString("en-US")
} IDs/s (1 boundary per iteration)`;

interface Run {
  latencies: Float64Array[];
  stalls: number;
  fetchMs: number[];
}

/** `client` with the time of each reservation (script or HINCRBY) passed to `record`. */
function timed(client: RedisClient, record: (ms: number) => void): RedisClient {
  const time = async <T>(p: () => Promise<T>): Promise<T> => {
    const t0 = performance.now();
    try {
      return await p();
    } finally {
      record(performance.now() - t0);
    }
  };
  return {
    hincrby: (k, f, n) => time(() => client.hincrby(k, f, n)),
    eval: (s, k, a) => time(() => client.eval(s, k, a)),
    evalsha: (s, k, a) => time(() => client.evalsha(s, k, a)),
  };
}

let controlCount = 0;
const control = {
  // The same loop, timing and pacing without KvId: what the environment and the clock add.
  // deno-lint-ignore require-await
  async next(): Promise<number> {
    return ++controlCount;
  },
  stats: () => ({ stalls: 0 }),
};

warmUpBench(async () => {
  for (let i = 0; i < STEP; i++) await control.next();
  await sleep(1);
}, 100);

for (const mode of ["on", "off", "control"] as const) {
  const name = mode === "control"
    ? "await bare async counter (control, no network)"
    : `next() with prefetch ${mode}`;
  const run: Run = { latencies: [], stalls: 0, fetchMs: [] };
  let iteration = 0;
  const id = mode === "control" ? control : new KvId(field("boundaries", mode), {
    redis: timed(redis, (ms) => iteration >= SKIP && run.fetchMs.push(ms)),
    key: BENCH_KEY,
    minStep: STEP,
    maxStep: STEP,
    prefetchAt: mode === "on" ? 0.2 : 0,
  });
  const prefetch = mode === "on";

  Deno.bench(name, {
    group: GROUP,
    baseline: mode === "control",
    n: BOUNDARIES,
    warmup: 0,
  }, async () => {
    const lat = new Float64Array(STEP);
    const stallsBefore = id.stats().stalls;
    const start = performance.now();
    let taken = 0;
    while (taken < STEP) {
      const due = Math.min(STEP, Math.floor((performance.now() - start) * RATE / 1000));
      while (taken < due) {
        const t0 = performance.now();
        await id.next();
        lat[taken++] = performance.now() - t0;
      }
      if (taken < STEP) await sleep(1);
    }
    if (++iteration > SKIP) {
      run.latencies.push(lat);
      run.stalls += id.stats().stalls - stallsBefore;
    }
  });

  addEventListener("unload", () => {
    if (run.latencies.length === 0) return;
    const all = new Float64Array(run.latencies.length * STEP);
    run.latencies.forEach((l, i) => all.set(l, i * STEP));
    all.sort();
    const us = (v: number) => Math.round(v * 1000 * 100) / 100;
    const ms = (v: number) => Math.round(v * 100) / 100;
    const p50 = quantile(all, 0.5);
    const p999 = quantile(all, 0.999);
    let waits = 0;
    for (const v of all) if (v >= 1) waits++;
    // Iterations start on a segment's first ID: index 0 crosses the boundary; with prefetch the
    // call that starts the next reservation is the one at the 20% mark.
    const at = (i: number) => {
      const v = run.latencies.map((l) => l[i]).sort((a, b) => a - b);
      return `${us(quantile(v, 0.5))} / ${us(v[v.length - 1])}`;
    };
    const mark = STEP - 1 - Math.floor(0.2 * STEP);
    const fetch = [...run.fetchMs].sort((a, b) => a - b);
    metric("boundaries", name, {
      boundaries: run.latencies.length,
      calls: all.length,
      "p50 µs": us(p50),
      "p99 µs": us(quantile(all, 0.99)),
      "p99.9 µs": us(p999),
      "max µs": us(all[all.length - 1]),
      "p99.9 / p50": Math.round(p999 / p50 * 100) / 100,
      stalls: run.stalls,
      "calls >= 1 ms": waits,
      "boundary call µs (median / max)": mode === "control" ? "-" : at(0),
      "prefetch-start call µs (median / max)": prefetch ? at(mark) : "-",
      "reservation round trip ms (median / max)": fetch.length === 0
        ? "-"
        : `${ms(quantile(fetch, 0.5))} / ${ms(fetch[fetch.length - 1])}`,
    });
  });
}
