/**
 * Deploy time (issue 27): what a deployment feels, each figure a ratio measured in one run.
 *
 * - **Density with rolling restarts**: 4 processes (subprocesses, bench/_rolling_worker.ts) on
 *   one counter, each taking 50,000 IDs/s with default options and restarted in turn (staggered
 *   by a quarter period) every `KVID_BENCH_RESTART_MS` (default 5,000) ms, 3 cycles; once with a
 *   clean `close()`, once with `SIGKILL`. Density = IDs handed out / the counter's rise (less the
 *   IDs left in the counter's pool of given-back ranges at the end, which the next reservation
 *   takes first); server
 *   commands (from `INFO commandstats`, scripts' inner commands included) per restart.
 * - **Cold start**: `new KvId()` to its first ID against one raw `HINCRBY` on the same client,
 *   interleaved (A B C rotating), median of 30 rounds each; the same right after another
 *   generator's first ID (the path warm); after `SCRIPT FLUSH` (a restarted
 *   server) on the same client, and on a client object not used before (a new process: its
 *   first generator reads the server's durability, later ones share that read), with and
 *   without `SCRIPT FLUSH`.
 * - **Ramp-up**: 10,000 names from cold in one process (a multi-tenant service), one call per
 *   name every 20 ms for 3 s: reservations, calls that waited (`stats().stalls`), and calls that
 *   waited after the first second.
 *
 * The handler against a hello-world `new Response()` is in service_handler_bench.ts.
 *
 *     deno bench -A bench/deploy_bench.ts
 *     KVID_BENCH_DEPLOY=cold,ramp deno bench -A bench/deploy_bench.ts   # some parts only
 *
 * @module
 */

import { fromNodeRedis, KvId } from "../mod.ts";
import { command } from "../tests/support/redis_server.ts";
import {
  BENCH_KEY,
  benchClient,
  benchServer,
  commandCalls,
  commandDelta,
  field,
  metric,
} from "./_server.ts";

/** The parts to run, e.g. `KVID_BENCH_DEPLOY=cold,ramp` (default all: cold, ramp, density). */
const PARTS = new Set((Deno.env.get("KVID_BENCH_DEPLOY") ?? "cold,ramp,density").split(","));
const server = await benchServer();
const { raw, redis } = await benchClient(server.url);

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? NaN : s[Math.floor(s.length / 2)];
};
const round = (x: number, digits = 3) => Number(x.toFixed(digits));

// --- Cold start --------------------------------------------------------------------------------

const COLD_ROUNDS = 30;
Deno.bench("cold start: first ID vs one raw HINCRBY", {
  group: "deploy: cold start",
  n: 1,
  warmup: 0,
}, async () => {
  if (coldOnce || !PARTS.has("cold")) return;
  coldOnce = true;
  await coldStart();
});

let coldOnce: boolean | undefined;
async function coldStart(): Promise<void> {
  // Each returns the generator it made (closed after the timing) and, when it did work before
  // the timed part (SCRIPT FLUSH), its own time.
  type Timed = { ms?: number; gen?: KvId };
  const subjects: Record<string, (i: number) => Promise<Timed>> = {
    "raw HINCRBY": async (i) => {
      await redis.hincrby(BENCH_KEY, field("cold-raw", String(i)), 1);
      return {};
    },
    "new KvId().next()": async (i) => {
      const gen = new KvId(field("cold-kvid", String(i)), { redis, key: BENCH_KEY });
      await gen.next();
      return { gen };
    },
    // The same right after another generator's first ID (untimed, still open): the path has
    // just run, so its code and data are warm (and the deadline timer is kept, see
    // src/runtime/deadline_timer.ts). Against the row above: what running the path cold costs.
    "new KvId().next() right after another's": async (i) => {
      const other = new KvId(field("cold-other", String(i)), { redis, key: BENCH_KEY });
      await other.next();
      const t0 = performance.now();
      const gen = new KvId(field("cold-open", String(i)), { redis, key: BENCH_KEY });
      await gen.next();
      const ms = performance.now() - t0;
      await other.close();
      return { ms, gen };
    },
    "after SCRIPT FLUSH": async (i) => {
      await command(server.url, "SCRIPT", "FLUSH");
      const t0 = performance.now();
      const gen = new KvId(field("cold-flush", String(i)), { redis, key: BENCH_KEY });
      await gen.next();
      return { ms: performance.now() - t0, gen };
    },
    // A process's first generator: the durability read is its own (it is shared per client).
    "new client": async (i) => {
      const fresh = fromNodeRedis(raw); // a client object not used before, on a live connection
      const gen = new KvId(field("cold-first", String(i)), { redis: fresh, key: BENCH_KEY });
      await gen.next();
      return { gen };
    },
    "new client, after SCRIPT FLUSH": async (i) => {
      await command(server.url, "SCRIPT", "FLUSH");
      const fresh = fromNodeRedis(raw); // a client object not used before, on a live connection
      const t0 = performance.now();
      const gen = new KvId(field("cold-new", String(i)), { redis: fresh, key: BENCH_KEY });
      await gen.next();
      return { ms: performance.now() - t0, gen };
    },
  };
  const names = Object.keys(subjects);
  const times: Record<string, number[]> = Object.fromEntries(names.map((n) => [n, []]));
  for (let r = 0; r < COLD_ROUNDS + 3; r++) {
    for (let k = 0; k < names.length; k++) {
      const name = names[(r + k) % names.length];
      const t0 = performance.now();
      const { ms = performance.now() - t0, gen } = await subjects[name](r);
      // Closed outside the timing: a give-back must not overlap the next subject.
      await gen?.close();
      if (r >= 3) times[name].push(ms); // 3 rounds of warm-up
    }
  }
  const base = median(times["raw HINCRBY"]);
  for (const name of names) {
    const m = median(times[name]);
    metric("deploy", `cold start: ${name}`, {
      "median µs": Math.round(m * 1000),
      "x raw HINCRBY": round(m / base, 2),
    });
  }
}

// --- Ramp-up of 10,000 names -----------------------------------------------------------------

const NAMES = 10_000;
const RAMP_TICK_MS = 20;
const RAMP_TICKS = 20;
Deno.bench("ramp-up: 10,000 names from cold", {
  group: "deploy: ramp-up",
  n: 1,
  warmup: 0,
}, async () => {
  if (rampDone || !PARTS.has("ramp")) return;
  rampDone = true;
  await rampUp();
});

let rampDone: boolean | undefined;
/**
 * 20 rounds of one call per name, 20 ms apart (the rounds stretch when the machine is slow:
 * counted in rounds, not seconds, the figures do not depend on its speed).
 */
async function rampUp(): Promise<void> {
  const gens = Array.from(
    { length: NAMES },
    (_, i) => new KvId(field("ramp", String(i)), { redis, key: BENCH_KEY }),
  );
  const start = performance.now();
  let stallsAt1s: number | undefined;
  let stallsAfterRound1: number | undefined;
  let calls: Promise<unknown>[] = [];
  let issued = 0;
  let failed = 0;
  const sum = (f: (g: KvId) => number) => gens.reduce((n, g) => n + f(g), 0);
  // Per name, the calls that had waited when its first reservation landed (seen at a round's
  // start): the waits after it are what a slow ramp-up costs.
  const atFirst = new Array<number | undefined>(NAMES);
  const markFirst = () => {
    gens.forEach((g, i) => {
      if (atFirst[i] === undefined && g.stats().segments > 0) atFirst[i] = g.stats().stalls;
    });
  };
  for (let tick = 0; tick < RAMP_TICKS; tick++) {
    markFirst();
    for (const g of gens) calls.push(g.next().catch(() => failed++));
    issued += gens.length;
    if (tick === 0) stallsAfterRound1 = sum((g) => g.stats().stalls);
    if (stallsAt1s === undefined && performance.now() - start >= 1_000) {
      stallsAt1s = sum((g) => g.stats().stalls);
    }
    if (calls.length >= 5 * NAMES) {
      await Promise.all(calls);
      calls = [];
    }
    await new Promise((r) => setTimeout(r, RAMP_TICK_MS));
  }
  await Promise.all(calls);
  markFirst();
  const afterFirst = gens.reduce((n, g, i) => n + g.stats().stalls - (atFirst[i] ?? 0), 0);
  const seconds = (performance.now() - start) / 1000;
  const stalls = sum((g) => g.stats().stalls);
  const segments = sum((g) => g.stats().segments);
  const maxSegments = gens.reduce((n, g) => Math.max(n, g.stats().segments), 0);
  const held = sum((g) => g.stats().remaining);
  await Promise.all(gens.map((g) => g.close()));
  metric("deploy", "ramp-up: 10,000 names, 20 rounds", {
    calls: issued,
    seconds: round(seconds, 1),
    reservations: segments,
    "most per name": maxSegments,
    "calls that waited": stalls,
    "waited after round 1": stalls - (stallsAfterRound1 ?? 0),
    "waited after 1 s": stalls - (stallsAt1s ?? stalls),
    "waited after the name's first reservation": afterFirst,
    "IDs held at the end": held,
    "calls failed": failed,
  });
}

// --- Density with 4 rolling processes ----------------------------------------------------------

const PROCESSES = 4;
const CYCLES = 3;
const RATE = 50_000;
const PERIOD_MS = Number(Deno.env.get("KVID_BENCH_RESTART_MS") ?? 5_000);
const WORKER = new URL("./_rolling_worker.ts", import.meta.url).pathname;

class Worker {
  readonly child: Deno.ChildProcess;
  readonly #writer: WritableStreamDefaultWriter<Uint8Array>;
  readonly #reader: ReadableStreamDefaultReader<string>;
  #buffered = "";
  constructor(name: string) {
    this.child = new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", WORKER, server.url, name, String(RATE)],
      stdin: "piped",
      stdout: "piped",
      stderr: "inherit",
    }).spawn();
    this.#writer = this.child.stdin.getWriter();
    this.#reader = this.child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  }
  async line(): Promise<string> {
    for (;;) {
      const i = this.#buffered.indexOf("\n");
      if (i >= 0) {
        const line = this.#buffered.slice(0, i);
        this.#buffered = this.#buffered.slice(i + 1);
        return line;
      }
      const { value, done } = await this.#reader.read();
      if (done) throw new Error("worker exited early");
      this.#buffered += value;
    }
  }
  async say(line: string): Promise<void> {
    await this.#writer.write(new TextEncoder().encode(line + "\n"));
  }
  /** Stop the load; the IDs it took; then a clean close or SIGKILL. */
  async stop(kill: boolean): Promise<number> {
    await this.say("stop");
    const [, taken] = (await this.line()).split(" ");
    if (kill) this.child.kill("SIGKILL");
    else {
      await this.say("close");
      await this.line();
    }
    await this.#writer.close().catch(() => {});
    await this.#reader.cancel().catch(() => {});
    await this.child.status;
    return Number(taken);
  }
}

async function start(name: string): Promise<Worker> {
  const w = new Worker(name);
  if (await w.line() !== "ready") throw new Error("worker did not start");
  return w;
}

async function rolling(kill: boolean): Promise<void> {
  if (!PARTS.has("density")) return;
  const name = field("rolling", kill ? "kill" : "clean");
  // The workers' hash is "kvid" (default options).
  const counterOf = async () =>
    BigInt((await command(server.url, "HGET", "kvid", name) as string | null) ?? "0");
  const before = await counterOf();
  const pooledBefore = 0; // a new counter
  const commandsBefore = await commandCalls(server.url);
  const workers = await Promise.all(Array.from({ length: PROCESSES }, () => start(name)));
  const t0 = performance.now();
  let taken = 0;
  let restarts = 0;
  // Slot i restarts at i/4 of a period, then every period, CYCLES times.
  const events: { at: number; slot: number }[] = [];
  for (let c = 1; c <= CYCLES; c++) {
    for (let i = 0; i < PROCESSES; i++) {
      events.push({ at: (c - 1 + (i + 1) / PROCESSES) * PERIOD_MS, slot: i });
    }
  }
  for (const e of events) {
    const wait = e.at - (performance.now() - t0);
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    taken += await workers[e.slot].stop(kill);
    restarts++;
    workers[e.slot] = await start(name);
  }
  for (const w of workers) taken += await w.stop(kill);
  // IDs in the counter's pool (given back, taken by the next reservation first) are not lost.
  const pooled = async () => {
    const pool = await command(server.url, "HGET", "kvid", `\0pool:${name}`) as string | null;
    let n = 0;
    for (const m of (pool ?? "").matchAll(/(\d+)-(\d+)/g)) n += Number(m[2]) - Number(m[1]) + 1;
    return n;
  };
  const rise = Number((await counterOf()) - before) - (await pooled() - pooledBefore);
  const commands = commandDelta(commandsBefore, await commandCalls(server.url));
  metric("deploy", `density, ${PROCESSES} rolling processes, ${kill ? "SIGKILL" : "close()"}`, {
    "handed out": taken,
    "counter rise less pooled": rise,
    density: round(taken / rise),
    restarts,
    "commands per restart": round(commands / (restarts + PROCESSES), 1),
  });
}

Deno.bench("density: 4 rolling processes, clean close()", {
  group: "deploy: density",
  n: 1,
  warmup: 0,
}, async () => {
  if (cleanOnce) return;
  cleanOnce = true;
  await rolling(false);
});
Deno.bench("density: 4 rolling processes, SIGKILL", {
  group: "deploy: density",
  n: 1,
  warmup: 0,
}, async () => {
  if (killOnce) return;
  killOnce = true;
  await rolling(true);
});
let cleanOnce: boolean | undefined;
let killOnce: boolean | undefined;
