/**
 * The ID service over HTTP (src/service/mod.ts): requests/s and p50/p99 latency at 50 connections
 * with `npm:autocannon`, in one run against
 *
 * - a bare `Deno.serve` hello-world (the ceiling of an HTTP service on this machine),
 * - the service, `POST /v1/ids/{name}` with `count=1` and with `count=100` (Redis, token auth),
 * - the service behind its own listener (`deno task serve`, `@kvid/core/serve`), `count=1`,
 * - an INCR-per-request service (one Redis round trip per ID, what one writes by hand),
 * - an INCRBY-per-request service: one `INCRBY` of 100 per request, printing the 100 IDs (the
 *   hand-written form of `count=100`; issue 27: the service's `count=100` never slower).
 *
 * All behind `Deno.serve` on loopback (the service through `deno serve`), on the same Redis;
 * each round runs every scenario in turn, so the machine's load changes hit all of them alike.
 * `KVID_SERVICE_BENCH_ONLY=count100` runs `count=100` and INCRBY-per-request alone.
 *
 * Each server runs in its own process; the load generator runs in this one, on the same
 * machine, so every figure is of a machine shared by both sides (and here by other work: the
 * load average is recorded with every figure). Leaf's published figure, for scale: ~50,000
 * QPS on a 4-core machine (its segment mode, Meituan's 2017 article).
 *
 *     deno bench -A bench/service_bench.ts
 *     KVID_SERVICE_BENCH_SECONDS=10 deno bench -A bench/service_bench.ts
 *     KVID_SERVICE_BENCH_ONLY=count100 KVID_SERVICE_BENCH_SECONDS=3 deno bench -A bench/service_bench.ts
 *
 * Each round also records the CPU time each side spent per request: the server process's
 * (`/proc/<pid>/stat`) plus Redis's (`INFO cpu`), and the load generator's (this process): the
 * cost of a request whoever the bottleneck is. When autocannon's own CPU per request decides the
 * rate on 2 shared cores, every scenario runs at about its rate and the req/s ratio says little;
 * the CPU per request still says which server does less work.
 * `KVID_SERVICE_BENCH_CONNECTIONS` (default 50) sets autocannon's connections;
 * `KVID_SERVICE_BENCH_BASELINE=<dir>` serves `<dir>/src/service/mod.ts` too (a checkout of
 * the code before, e.g. from `git archive`), as "ID service count=100, baseline", interleaved
 * with the rest.
 *
 *     KVID_SERVICE_BENCH_ONLY=count100 KVID_SERVICE_BENCH_BASELINE=/tmp/before \
 *       deno bench -A bench/service_bench.ts
 *
 * `KVID_SERVICE_BENCH_PIN=<load generator's CPUs>/<servers' CPUs>` (e.g. `0/1`, Linux, through
 * `taskset`) keeps autocannon off the servers' cores: this process on the first set, every server
 * and the Redis server on the second, so a scenario's rate is its server side's, not what the
 * load generator left it.
 *
 * The handler's own cost in process, against a hello-world handler, is in
 * service_handler_bench.ts.
 *
 * @module
 */

import autocannon from "autocannon";
import {
  type ServeProcess,
  startServeProcess,
  startServiceProcess,
} from "../tests/support/service.ts";
import { command } from "../tests/support/redis_server.ts";
import { benchServer, commandCalls, commandDelta, lines, metric } from "./_server.ts";

const CONNECTIONS = Number(Deno.env.get("KVID_SERVICE_BENCH_CONNECTIONS") ?? "50");
const SECONDS = Number(Deno.env.get("KVID_SERVICE_BENCH_SECONDS") ?? "5");
const TOKEN = "bench-token-0123456789abcdef";
const GROUP = `HTTP service, ${CONNECTIONS} connections, ${SECONDS} s each (autocannon)`;

interface Run {
  requestsPerSecond: number;
  /** Requests answered in the round. */
  total: number;
  p50Ms: number;
  p99Ms: number;
  non2xx: number;
  errors: number;
}

async function load(
  url: string,
  init: { method?: string; headers?: Record<string, string> } = {},
  seconds = SECONDS,
): Promise<Run> {
  const r = await autocannon({
    url,
    connections: CONNECTIONS,
    duration: seconds,
    method: (init.method ?? "GET") as "GET",
    headers: init.headers,
  });
  return {
    requestsPerSecond: r.requests.average,
    total: r.requests.total,
    p50Ms: r.latency.p50,
    p99Ms: r.latency.p99,
    non2xx: r.non2xx,
    errors: r.errors,
  };
}

function loadAverage(): string {
  try {
    return Deno.readTextFileSync("/proc/loadavg").split(" ").slice(0, 3).join(" ");
  } catch {
    return "n/a";
  }
}

/** CPU seconds (user + system) process `pid` has used, from `/proc/<pid>/stat`. */
function cpuSeconds(pid: number | "self"): number {
  const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
  // Fields after the command name (which may hold spaces), from the 3rd: utime, stime are 14, 15.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) / 100; // USER_HZ: 100 on Linux
}

/** CPU seconds the Redis server has used (`INFO cpu`). */
async function redisCpuSeconds(url: string): Promise<number> {
  const text = String(await command(url, "INFO", "cpu"));
  const of = (name: string) => Number(new RegExp(`^${name}:([0-9.]+)`, "m").exec(text)?.[1] ?? 0);
  return of("used_cpu_user") + of("used_cpu_sys");
}

async function target(
  args: string[],
): Promise<{ url: string; pid: number; stop(): Promise<void> }> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", new URL("./_http_target.ts", import.meta.url).pathname, ...args],
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const out = lines(child.stdout);
  let port: string | undefined;
  for (let r = await out.next(); !r.done; r = await out.next()) {
    const m = /^listening (\d+)$/.exec(r.value);
    if (m) {
      port = m[1];
      break;
    }
  }
  if (port === undefined) throw new Error(`_http_target.ts ${args[0]} did not start`);
  (async () => {
    for (let r = await out.next(); !r.done; r = await out.next());
  })();
  return {
    url: `http://127.0.0.1:${port}`,
    pid: child.pid,
    async stop() {
      child.kill("SIGTERM");
      await child.status;
    },
  };
}

const ROUNDS = Number(Deno.env.get("KVID_SERVICE_BENCH_ROUNDS") ?? "3");
/** `count100`: only the service's `count=100` and the INCRBY-per-request service. */
const ONLY = Deno.env.get("KVID_SERVICE_BENCH_ONLY");
/** A checkout of the code before, served beside (see the module doc). */
const BASELINE = Deno.env.get("KVID_SERVICE_BENCH_BASELINE");
/** `<load generator's CPUs>/<servers' CPUs>`, e.g. `0/1` (see the module doc). */
const PIN = Deno.env.get("KVID_SERVICE_BENCH_PIN")?.split("/");

/** Every thread of process `pid` onto `cpus` (`taskset` syntax), when pinning is asked for. */
async function pin(pid: number, cpus: string | undefined): Promise<void> {
  if (cpus === undefined) return;
  const { success } = await new Deno.Command("taskset", {
    args: ["-a", "-p", "-c", cpus, String(pid)],
    stdout: "null",
  }).output();
  if (!success) throw new Error(`taskset could not pin process ${pid} to CPUs ${cpus}`);
}

/** What a round cost beside its rate. */
interface RoundCost {
  commands: number;
  /** CPU µs per request of the server process and the Redis server together. */
  serverCpuUs: number;
  /** CPU µs per request of the load generator (this process). */
  loadGeneratorCpuUs: number;
  load: string;
}

function median(values: number[]): number {
  const sorted = values.toSorted((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

const server = await benchServer();
let ran = false;

Deno.bench({
  name:
    `hello-world, ID service count=1 and count=100, INCR and INCRBY per request: ${ROUNDS} rounds (figures printed; the time is not a result)`,
  group: GROUP,
  n: 1,
  warmup: 0,
  async fn() {
    if (ran) return; // deno bench calls it more than once even with n: 1: measure once
    ran = true;
    const hello = await target(["hello"]);
    const incr = await target(["incr", server.url]);
    const incrby = await target(["incrby100", server.url]);
    await using service = await startServeProcess({
      KVID_REDIS_URL: server.url,
      KVID_TOKENS: `${TOKEN}:*`,
      KVID_AUTH: "",
    });
    // The same service behind its own listener (`deno task serve`), which has the connection
    // limits `Deno.serve` lacks.
    await using own = await startServiceProcess({
      KVID_REDIS_URL: server.url,
      KVID_TOKENS: `${TOKEN}:*`,
      KVID_AUTH: "",
    });
    let baseline: ServeProcess | undefined;
    try {
      // The code before, served the same way, when a checkout of it is given.
      baseline = BASELINE === undefined ? undefined : await startServeProcess(
        { KVID_REDIS_URL: server.url, KVID_TOKENS: `${TOKEN}:*`, KVID_AUTH: "" },
        `${BASELINE}/src/service/mod.ts`,
      );
      const auth = { method: "POST", headers: { authorization: `Bearer ${TOKEN}` } };
      const name = `bench-${Date.now().toString(36)}`;
      type Scenario = [string, string, typeof auth | undefined, number];
      const scenarios: Scenario[] = ([
        ["bare Deno.serve hello-world", hello.url, undefined, hello.pid],
        ["ID service count=1", `${service.url}/v1/ids/${name}`, auth, service.child.pid],
        [
          "ID service count=100",
          `${service.url}/v1/ids/${name}?count=100`,
          auth,
          service.child.pid,
        ],
        ["ID service count=1, own listener", `${own.url}/v1/ids/${name}`, auth, own.child.pid],
        ["INCR per request", incr.url, undefined, incr.pid],
        ["INCRBY 100 per request", incrby.url, undefined, incrby.pid],
        ...baseline === undefined ? [] : [[
          "ID service count=100, baseline",
          `${baseline.url}/v1/ids/${name}-baseline?count=100`,
          auth,
          baseline.child.pid,
        ]],
      ] as Scenario[]).filter(([label]) =>
        ONLY !== "count100" || label.startsWith("ID service count=100") ||
        label === "INCRBY 100 per request"
      );
      if (PIN !== undefined) {
        await pin(Deno.pid, PIN[0]);
        const info = String(await command(server.url, "INFO", "server"));
        await pin(Number(/^process_id:(\d+)/m.exec(info)![1]), PIN[1]);
        for (const pid of new Set(scenarios.map(([, , , pid]) => pid))) await pin(pid, PIN[1]);
      }
      // Warm-up (JIT, connections, the generator's step), then rounds that interleave the
      // scenarios so a change of the machine's load hits all of them alike.
      for (const [, url, init] of scenarios) await load(url, init, 1);
      const runs = new Map<string, (Run & RoundCost)[]>();
      for (let round = 0; round < ROUNDS; round++) {
        // A B C, then C B A: neither goes first every time.
        for (const [label, url, init, pid] of round % 2 ? scenarios.toReversed() : scenarios) {
          const before = loadAverage();
          const calls = await commandCalls(server.url);
          const cpu = [cpuSeconds(pid), await redisCpuSeconds(server.url), cpuSeconds("self")];
          const r = await load(url, init);
          const spent = [
            cpuSeconds(pid) - cpu[0],
            await redisCpuSeconds(server.url) - cpu[1],
            cpuSeconds("self") - cpu[2],
          ];
          const commands = commandDelta(calls, await commandCalls(server.url));
          runs.set(label, [...(runs.get(label) ?? []), {
            ...r,
            commands,
            serverCpuUs: (spent[0] + spent[1]) / r.total * 1e6,
            loadGeneratorCpuUs: spent[2] / r.total * 1e6,
            load: `${before} / ${loadAverage()}`,
          }]);
        }
      }
      const rps = new Map<string, number>();
      for (const [label, list] of runs) {
        const m = median(list.map((r) => r.requestsPerSecond));
        rps.set(label, m);
        metric("service", label, {
          "req/s (median)": Math.round(m),
          "req/s (each round)": list.map((r) => Math.round(r.requestsPerSecond)).join(" "),
          "p50 ms (median)": median(list.map((r) => r.p50Ms)),
          "p99 ms (median)": median(list.map((r) => r.p99Ms)),
          "Redis commands per 1,000 requests": Math.round(
            list.reduce((n, r) => n + r.commands, 0) /
              list.reduce((n, r) => n + r.requestsPerSecond * SECONDS, 0) * 1000 * 10,
          ) / 10,
          "server + Redis CPU µs per request (median)": Math.round(
            median(list.map((r) => r.serverCpuUs)) * 10,
          ) / 10,
          "autocannon CPU µs per request (median)": Math.round(
            median(list.map((r) => r.loadGeneratorCpuUs)) * 10,
          ) / 10,
          "non-2xx": list.reduce((n, r) => n + r.non2xx, 0),
          errors: list.reduce((n, r) => n + r.errors, 0),
          "load avg 1/5/15 min, before / after each round": list.map((r) => r.load).join("; "),
        });
      }
      // count=100 against INCRBY per request, round by round (each ratio from one round, the two
      // measured one after the other) and of the medians.
      const hundred = runs.get("ID service count=100")!;
      const byIncrby = runs.get("INCRBY 100 per request")!;
      metric("service", "count=100 / INCRBY 100 per request", {
        "each round": hundred.map((r, i) =>
          (r.requestsPerSecond / byIncrby[i].requestsPerSecond).toFixed(2)
        ).join(" "),
        "median of the rounds' ratios": Math.round(
          median(hundred.map((r, i) => r.requestsPerSecond / byIncrby[i].requestsPerSecond)) * 100,
        ) / 100,
        "of the medians": Math.round(
          median(hundred.map((r) => r.requestsPerSecond)) /
            median(byIncrby.map((r) => r.requestsPerSecond)) * 100,
        ) / 100,
        "server + Redis CPU per request, INCRBY / count=100 (median of the rounds)": Math.round(
          median(hundred.map((r, i) => byIncrby[i].serverCpuUs / r.serverCpuUs)) * 100,
        ) / 100,
        rounds: ROUNDS,
        "seconds each": SECONDS,
        connections: CONNECTIONS,
        "CPUs, load generator / servers": PIN === undefined ? "shared" : PIN.join(" / "),
      });
      const before = runs.get("ID service count=100, baseline");
      if (before !== undefined) {
        metric("service", "count=100 / the same of the code before (baseline)", {
          "each round": hundred.map((r, i) =>
            (r.requestsPerSecond / before[i].requestsPerSecond).toFixed(2)
          ).join(" "),
          "median of the rounds' ratios": Math.round(
            median(hundred.map((r, i) => r.requestsPerSecond / before[i].requestsPerSecond)) *
              100,
          ) / 100,
          "server + Redis CPU per request, baseline / now (median of the rounds)": Math.round(
            median(hundred.map((r, i) => before[i].serverCpuUs / r.serverCpuUs)) * 100,
          ) / 100,
        });
      }
      if (ONLY === "count100") return;
      const base = rps.get("bare Deno.serve hello-world")!;
      const one = rps.get("ID service count=1")!;
      const perIncr = rps.get("INCR per request")!;
      metric("service", "targets", {
        "count=1 / hello-world": Math.round((one / base) * 1000) / 1000,
        "within 20% of hello-world": one >= 0.8 * base,
        "count=1 / INCR per request": Math.round((one / perIncr) * 1000) / 1000,
        "ahead of INCR per request": one > perIncr,
        "IDs/s at count=100": Math.round(rps.get("ID service count=100")! * 100),
        "Leaf (published, 4 cores)": "~50,000 QPS",
      });
      service.child.kill("SIGTERM");
      await service.status;
    } finally {
      if (baseline !== undefined) {
        baseline.child.kill("SIGTERM");
        await baseline.status;
      }
      await hello.stop();
      await incr.stop();
      await incrby.stop();
    }
  },
});
