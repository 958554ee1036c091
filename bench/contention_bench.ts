/**
 * Suite 4, contention.
 *
 * 1. 1,000 callers awaiting at a boundary: each iteration fires 1,000 `next()` calls at once at
 *    a generator with nothing buffered (prefetch off), so all of them wait for the single
 *    reservation in flight; compared with 1,000 concurrent `INCR`s. Checked: 1,000 distinct IDs,
 *    increasing in call order; reported: round trips per burst (1 expected, also from a step of
 *    10, as queued callers size the reservation; the first burst also loads the script).
 * 2. 2 processes on one counter: two child processes (`_contention_worker.ts`) take IDs as fast
 *    as they can from the same counter with a small fixed step (1,000, so the counter is hit
 *    often), against one process taking as many alone. Each iteration takes the same total, so
 *    deno bench's comparison is the aggregate rate. Checked at the end: no ID was handed out
 *    twice across processes and iterations.
 *
 *     deno bench -A bench/contention_bench.ts
 *
 * @module
 */

import { KvId } from "../mod.ts";
import {
  BENCH_KEY,
  benchClient,
  benchServer,
  CountingClient,
  field,
  lines,
  log,
  metric,
  RUN_ID,
} from "./_server.ts";

const CALLERS = 1_000;
const server = await benchServer();
const { raw, redis } = await benchClient(server.url);

// --- 1,000 callers at a boundary -----------------------------------------------------------

const BURST = `${CALLERS.toLocaleString("en-US")} callers awaiting at a boundary (${
  CALLERS.toLocaleString("en-US")
} IDs per iteration)`;
const incrKey = `${BENCH_KEY}:burst-incr:${RUN_ID}`;

Deno.bench(
  `${CALLERS} concurrent INCR`,
  { group: BURST, baseline: true, n: 20, warmup: 2 },
  async () => {
    const ids = await Promise.all(Array.from({ length: CALLERS }, () => raw.incr(incrKey)));
    if (new Set(ids).size !== CALLERS) throw new Error("INCR handed out a duplicate");
  },
);

// A fixed step of 1,000, and a step of 10 that the queued callers raise to 1,000 (maxStep): a
// burst is one segment either way, so each starts at a boundary.
for (const minStep of [CALLERS, 10]) {
  const counting = new CountingClient(redis);
  const id = new KvId(field("contention", `burst-${minStep}`), {
    redis: counting,
    key: BENCH_KEY,
    minStep,
    maxStep: CALLERS,
    prefetchAt: 0, // every burst starts with nothing buffered
  });
  const name = minStep === CALLERS
    ? `KvId, step ${CALLERS.toLocaleString("en-US")}, prefetch off`
    : `KvId, step ${minStep}..${CALLERS.toLocaleString("en-US")}, prefetch off`;
  const tally = { bursts: 0, reservations: 0 };
  Deno.bench(name, { group: BURST, n: 20, warmup: 2 }, async () => {
    const sent = counting.sent;
    const ids = await Promise.all(Array.from({ length: CALLERS }, () => id.next()));
    for (let i = 1; i < ids.length; i++) {
      if (!(ids[i] > ids[i - 1])) throw new Error(`not increasing in call order at ${i}`);
    }
    tally.bursts++;
    tally.reservations += counting.sent - sent;
  });
  addEventListener("unload", () => {
    if (tally.bursts === 0) return;
    metric("contention", `${CALLERS} callers at a boundary: ${name}`, {
      bursts: tally.bursts,
      "round trips per burst": tally.reservations / tally.bursts,
      "distinct and in call order": true,
    });
  });
}

// --- 2 processes on one counter ------------------------------------------------------------

const TOTAL = 2_000_000; // IDs per iteration, over all processes
const STEP = 1_000;
const PROCS = `processes on one counter, step ${STEP.toLocaleString("en-US")} (${
  TOTAL.toLocaleString("en-US")
} IDs per iteration in total)`;
const WORKER = new URL("./_contention_worker.ts", import.meta.url).pathname;
const CONFIG = new URL("../deno.json", import.meta.url).pathname;

interface Worker {
  child: Deno.ChildProcess;
  out: AsyncGenerator<string>;
  send(line: string): Promise<void>;
}

async function spawnWorker(name: string): Promise<Worker> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--config", CONFIG, WORKER, server.url, BENCH_KEY, name, String(STEP)],
    stdin: "piped",
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  addEventListener("unload", () => {
    try {
      child.kill("SIGTERM");
    } catch { /* exited */ }
  });
  const out = lines(child.stdout);
  const writer = child.stdin.getWriter();
  const enc = new TextEncoder();
  const worker = { child, out, send: (line: string) => writer.write(enc.encode(line + "\n")) };
  const ready = await out.next();
  if (ready.done || !JSON.parse(ready.value).ready) throw new Error("worker did not start");
  return worker;
}

interface RunReport {
  ms: number;
  ranges: [number, number][];
  reservations: number;
}

for (const procs of [1, 2]) {
  const counter = field("contention", `procs-${procs}`);
  let workers: Worker[] | undefined;
  const tally = { iterations: 0, reservations: 0, expected: 0 };
  const ranges: [number, number][] = [];
  const name = procs === 1 ? "1 process" : `${procs} processes`;
  Deno.bench(name, { group: PROCS, baseline: procs === 1, n: 3, warmup: 0 }, async (b) => {
    // Started once (outside the timed part) and reused: a run is one "go".
    workers ??= await Promise.all(Array.from({ length: procs }, () => spawnWorker(counter)));
    const each = TOTAL / procs;
    b.start();
    await Promise.all(workers.map((w) => w.send(`go ${each}`)));
    const reports = await Promise.all(workers.map(async (w) => {
      const line = await w.out.next();
      if (line.done) throw new Error("worker exited");
      return JSON.parse(line.value) as RunReport;
    }));
    b.end();
    for (const r of reports) {
      ranges.push(...r.ranges);
      tally.expected += each + 1; // each run also reports the ID taken before it
      tally.reservations += r.reservations;
    }
    tally.iterations++;
  });
  addEventListener("unload", () => {
    if (tally.iterations === 0) return;
    const { total, overlaps } = checkRanges(ranges);
    metric("contention", `${name} on one counter`, {
      iterations: tally.iterations,
      "reservations per iteration": tally.reservations / tally.iterations,
      "IDs checked": total,
      "overlapping ranges": overlaps,
      unique: overlaps === 0 && total === tally.expected,
    });
    if (overlaps !== 0 || total !== tally.expected) {
      log(`  ERROR: ${name}: ${overlaps} overlaps, ${total} IDs of ${tally.expected} expected`);
    }
  });
}

/** Sort the runs of IDs one counter handed out; count the IDs and the runs that overlap. */
function checkRanges(ranges: [number, number][]): { total: number; overlaps: number } {
  ranges.sort((a, b) => a[0] - b[0]);
  let total = 0;
  let overlaps = 0;
  for (let i = 0; i < ranges.length; i++) {
    total += ranges[i][1] - ranges[i][0] + 1;
    if (i > 0 && ranges[i][0] <= ranges[i - 1][1]) overlaps++;
  }
  return { total, overlaps };
}
