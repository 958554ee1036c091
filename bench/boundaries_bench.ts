/**
 * Suite 3, segment boundaries: the latency of every `next()` call across many segment
 * boundaries, with prefetch on and off, through a loopback proxy that adds a delay each way
 * (`tests/proxy.ts`), so a reservation costs a real round trip.
 *
 * The generator has a fixed step and the consumer takes IDs at a steady rate, in short bursts
 * between 1 ms sleeps (so replies get read). One bench iteration takes one segment's worth of
 * IDs, so it crosses one boundary; deno bench's time/iter is then just the pacing (step / rate)
 * plus any stall. The figures are the printed percentiles: every call is timed with
 * `performance.now()` (itself ~0.1 µs, included), the first 3 iterations (deno's warm-up and the
 * cold start) are left out. Stalls = calls that found no ID buffered and waited for a
 * reservation (`stats().stalls`).
 *
 * The default step is sized for the rate: prefetch starts with 20% of a segment left, which at
 * 200,000 IDs/s is 10 ms of IDs, more than the ~4 ms round trip.
 *
 * Settings (environment): `KVID_BENCH_DELAY_MS` (delay each way, default 2),
 * `KVID_BENCH_BOUNDARY_STEP` (default 10,000), `KVID_BENCH_BOUNDARY_RATE` (IDs/s, default
 * 200,000), `KVID_BENCH_BOUNDARIES` (measured boundaries per mode, default 50).
 *
 *     deno bench -A bench/boundaries_bench.ts
 *
 * @module
 */

import { KvId } from "../mod.ts";
import { startProxy } from "../tests/proxy.ts";
import { BENCH_KEY, benchClient, benchServer, field, metric, quantile, sleep } from "./_server.ts";

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
const BOUNDARIES = envNumber("KVID_BENCH_BOUNDARIES", 50);
const SKIP = 3; // deno's warm-up iteration, the cold start, one more to settle

const server = await benchServer();
const proxy = await startProxy({ host: server.host, port: server.port }, { delayMs: DELAY_MS });
addEventListener("unload", () => void proxy.close());
const { redis } = await benchClient(proxy.url);

const GROUP = `boundaries, ${DELAY_MS} ms each way, step ${STEP.toLocaleString("en-US")} at ${
  RATE.toLocaleString("en-US")
} IDs/s (1 boundary per iteration)`;

interface Run {
  latencies: Float64Array[];
  stalls: number;
  fetchMs: number[];
}

for (const prefetch of [true, false]) {
  const name = `next() with prefetch ${prefetch ? "on" : "off"}`;
  const id = new KvId(field("boundaries", prefetch ? "on" : "off"), {
    redis,
    key: BENCH_KEY,
    minStep: STEP,
    maxStep: STEP,
    prefetchAt: prefetch ? 0.2 : 0,
  });
  const run: Run = { latencies: [], stalls: 0, fetchMs: [] };
  let iteration = 0;

  Deno.bench(name, { group: GROUP, baseline: prefetch, n: BOUNDARIES, warmup: 0 }, async () => {
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
      const fetch = id.stats().lastFetchMs;
      if (fetch !== undefined) run.fetchMs.push(fetch);
    }
  });

  addEventListener("unload", () => {
    if (run.latencies.length === 0) return;
    const all = new Float64Array(run.latencies.length * STEP);
    run.latencies.forEach((l, i) => all.set(l, i * STEP));
    all.sort();
    const us = (ms: number) => Math.round(ms * 1000 * 100) / 100;
    const p50 = quantile(all, 0.5);
    const p999 = quantile(all, 0.999);
    let waits = 0;
    for (const v of all) if (v >= 1) waits++;
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
      "reservation round trip ms (median)": Math.round(quantile(fetch, 0.5) * 100) / 100,
    });
  });
}
