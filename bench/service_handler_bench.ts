/**
 * The ID service's handler in process (no HTTP, no network) against a hello-world handler,
 * request by request, subjects interleaved in one run: issue 27's row "count=1 <= 1.5x,
 * count=100 <= 2x a hello-world `new Response()`".
 *
 * Subjects, each built as users build them (`createHandler` with a token, default options):
 *
 * - the hello-world: `new Response("hello\n")` for the same `Request` (the baseline),
 * - the service on Deno KV in memory, `POST /v1/ids/{name}` with `count=1` and `count=100`,
 * - the service on Redis (started by the bench, bench/_server.ts), the same two requests.
 *
 * Every request of a subject is timed on its own (`performance.now()` around building the
 * `Request`, the handler and reading the body); one round is one request of each subject, the
 * order rotating from round to round, with a turn of the event loop every few rounds (as a
 * service's loop gives between requests: replies are read, prefetch timers fire). So another
 * process's load lands on all subjects alike, and each ratio (p10, p25, p50 of a subject over
 * the same quantile of the hello-world) comes from one run. The load average (`/proc/loadavg`)
 * before and after and the date are printed with the figures.
 *
 *     deno bench -A bench/service_handler_bench.ts
 *     KVID_HANDLER_BENCH_REQUESTS=30000 deno bench -A bench/service_handler_bench.ts
 *     KVID_HANDLER_BENCH_STORES=kv deno bench -A bench/service_handler_bench.ts   # one store
 *
 * (`deno bench`'s own time for this file is not a result: the figures are printed.)
 *
 * node-redis, loaded for the Redis subject, is in the process for every subject, as in a service
 * on Redis: its `class VerbatimString extends String`, never instantiated, makes V8 stop
 * inlining `text.charCodeAt(i)` (~13 ns a call then), which code that reads strings a character
 * at a time pays (the service's token compare reads the builtin as a constant for that reason).
 * Measured on 2026-12-01 with the code of that morning: its handler 1.46x a hello-world without
 * node-redis in the process, 1.64x with a bare `import "npm:@redis/client"`.
 *
 * @module
 */

import { DenoKvStore } from "../src/stores/deno_kv/deno_kv_store.ts";
import { createHandler, type IdService } from "../src/service/mod.ts";
import { benchClient, benchServer, field, log, metric, quantile } from "./_server.ts";
import { turn } from "./_interleaved.ts";

/** Requests per subject (the warm-up is a tenth of it, not counted). */
const REQUESTS = Number(Deno.env.get("KVID_HANDLER_BENCH_REQUESTS") ?? "20000");
/** Rounds between two turns of the event loop. */
const ROUNDS_PER_TURN = 50;
/** The stores to measure: `kv`, `redis` or both (default). */
const STORES = new Set((Deno.env.get("KVID_HANDLER_BENCH_STORES") ?? "kv,redis").split(","));
const TOKEN = "bench-token-0123456789abcdef";
const QUANTILES = [0.1, 0.25, 0.5] as const;

/** The load average over 1, 5 and 15 minutes, as `/proc/loadavg` says. */
function loadAverage(): string {
  try {
    return Deno.readTextFileSync("/proc/loadavg").split(" ").slice(0, 3).join(" ");
  } catch {
    return "n/a";
  }
}

/** One request of a subject, from building the `Request` to the body read. */
type Subject = () => Promise<unknown>;

function idRequest(name: string, count: number): Request {
  return new Request(`http://127.0.0.1/v1/ids/${name}?count=${count}`, {
    method: "POST",
    headers: { authorization: `Bearer ${TOKEN}` },
  });
}

/** Times each request of every subject, `requests` each, interleaved; ns per request, sorted. */
async function timeInterleaved(
  subjects: Record<string, Subject>,
  requests: number,
): Promise<Record<string, Float64Array>> {
  const names = Object.keys(subjects);
  const fns = names.map((n) => subjects[n]);
  const times = names.map(() => new Float64Array(requests));
  for (let i = 0; i < requests; i++) {
    for (let k = 0; k < fns.length; k++) {
      const j = (i + k) % fns.length;
      const t0 = performance.now();
      await fns[j]();
      times[j][i] = (performance.now() - t0) * 1e6;
    }
    if (i % ROUNDS_PER_TURN === ROUNDS_PER_TURN - 1) await turn();
  }
  return Object.fromEntries(names.map((n, j) => [n, times[j].sort()]));
}

const server = await benchServer();
const { redis } = await benchClient(server.url);
const kv = new DenoKvStore(":memory:");
const services: IdService[] = [
  createHandler({ store: kv, tokens: `${TOKEN}:*`, log: () => {} }),
  createHandler({ redis, tokens: `${TOKEN}:*`, log: () => {} }),
];
const [onKv, onRedis] = services;
const kvName = field("handler", "kv");
const redisName = field("handler", "redis");
const hello = (_req: Request) => new Response("hello\n");

// Each subject its own function literal: V8 keeps type feedback per literal. Each awaits its
// handler's answer, as `Deno.serve` does (the service's `fetch` answers IDs it holds with a
// promise already resolved, the hello-world with a `Response`).
const subjects: Record<string, Subject> = {
  "hello-world": async () => (await hello(idRequest(kvName, 1))).text(),
  ...STORES.has("kv") && {
    "Deno KV count=1": async () => (await onKv.fetch(idRequest(kvName, 1))).text(),
    "Deno KV count=100": async () => (await onKv.fetch(idRequest(kvName, 100))).text(),
  },
  ...STORES.has("redis") && {
    "Redis count=1": async () => (await onRedis.fetch(idRequest(redisName, 1))).text(),
    "Redis count=100": async () => (await onRedis.fetch(idRequest(redisName, 100))).text(),
  },
};

let ran = false;
Deno.bench({
  name: `handler in process vs hello-world, ${
    REQUESTS.toLocaleString("en-US")
  } requests each, interleaved (figures printed; the time is not a result)`,
  group: "service handler, in process",
  n: 1,
  warmup: 0,
  async fn() {
    if (ran) return; // deno bench may call it more than once even with n: 1: measure once
    ran = true;
    try {
      // Warm: the JIT, and the generators' steps past their first few IDs.
      for (
        const res of await Promise.all(
          [onKv, onRedis].map((s, i) => s.fetch(idRequest(i === 0 ? kvName : redisName, 10_000))),
        )
      ) {
        if (res.status !== 200) throw new Error(`the service answered ${res.status}`);
        await res.text();
      }
      await timeInterleaved(subjects, Math.ceil(REQUESTS / 10));
      const before = loadAverage();
      const started = new Date().toISOString().slice(0, 16).replace("T", " ") + " UTC";
      const t0 = performance.now();
      const times = await timeInterleaved(subjects, REQUESTS);
      const seconds = (performance.now() - t0) / 1000;
      const after = loadAverage();
      const base = times["hello-world"];
      log(
        `  service handler, ${started}, ${REQUESTS} requests per subject, ${
          seconds.toFixed(1)
        } s, load avg 1/5/15 min before ${before}, after ${after}`,
      );
      for (const [name, sorted] of Object.entries(times)) {
        const values: Record<string, number | string> = {};
        for (const q of QUANTILES) {
          const p = `p${q * 100}`;
          values[`${p} µs`] = Math.round(quantile(sorted, q) / 10) / 100;
          if (sorted !== base) {
            values[`${p} / hello-world`] =
              Math.round(quantile(sorted, q) / quantile(base, q) * 100) /
              100;
          }
        }
        values["load before / after"] = `${before} / ${after}`;
        values.date = started;
        metric("service handler", name, values);
      }
    } finally {
      for (const s of services) await s[Symbol.asyncDispose]();
      kv.close();
    }
  },
});
