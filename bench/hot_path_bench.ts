/**
 * Suite 1, the hot path: IDs handed out from memory, no network once warm.
 *
 * Part 1, as users run it (the figures the targets and the README use). Module-level generators
 * with default options, warmed up until the step reaches `maxStep` (1M), are measured in the same
 * process and run as a bare awaited counter: every subject takes its IDs in chunks of 10,000 in
 * turn, with a turn of the event loop (`setTimeout(0)`) after each round, as a service gives one
 * between requests, over 5 runs of 2M IDs per subject. So segments switch during the measurement
 * (every 1M IDs) and the prefetch runs in the background as in production. Per run and subject:
 * the median chunk (robust against another process taking the CPU) and the mean over all chunks
 * (segment switches included); the report takes medians over the runs of each, and of each
 * ratio to the control of the same run. Subjects: `next()` in number and bigint mode (bigint
 * mode's control is a bare awaited counter returning a fresh bigint, written the cheapest way
 * found; both are also compared with the number control), a shared call site (four generators
 * in a `Map`, one `get(name).next()` site, as an HTTP service has; its control is the same site
 * over four bare counters), the floor of any awaited source that can run dry (the bare counter
 * with a limit and a waiting path), `crypto.randomUUID()`. Then the tail: every call of `next()`
 * and of the control timed with `performance.now()`, interleaved the same way, 2M calls each.
 * Last, a long-lived counter (past 2^30, where every number ID is a heap object for V8) beside a
 * bare counter of the same magnitude. Part 1 runs when the file loads, before any bench (also
 * under `--filter`), in about 15 s; its figures are printed and go to the report as metrics.
 *
 * Part 2, `Deno.bench`: the same calls on generators with a fixed 100M step reserved before the
 * measurement (no segment switch, checked at the end), batches and the other ID libraries. Every
 * bench takes 100,000 IDs per iteration, so time/iter divided by 100,000 is the cost of one ID.
 * `deno bench` runs one bench after the other, so on a shared machine their ratios are less
 * reliable than part 1's.
 *
 * Baseline: `await` of a bare async counter, the floor of any awaited API. The peers are called
 * as their users call them, synchronously.
 *
 *     deno bench -A bench/hot_path_bench.ts
 *
 * @module
 */

import { Snowflake } from "@sapphire/snowflake";
import { monotonicFactory } from "ulid";
import { uuidv7 } from "uuidv7";
import { KvId } from "../mod.ts";
import {
  BENCH_KEY,
  benchClient,
  benchServer,
  field,
  log,
  metric,
  quantile,
  warmUpBench,
} from "./_server.ts";
import { interleave, median, type RunFigures, timeEachCall, turn } from "./_interleaved.ts";

/** IDs per bench iteration. */
const LOOP = 100_000;
const GROUP = `hot path, fixed 100M step (${LOOP.toLocaleString("en-US")} IDs per iteration)`;
// One reservation of 100M IDs covers a whole bench (the batches take up to ~20M), far from the
// 80M prefetch mark, so nothing is reserved during the measurement.
const STEP = 100_000_000;
const ITER = { n: 40, warmup: 5 };
// The slow peers: fewer iterations, so each bench takes about a second.
const SLOW = { n: 5, warmup: 1 };
/** Part 1: runs, IDs per subject and run, IDs per chunk, calls timed one by one for the tail. */
const AS_RUN = { runs: 5, idsPerRun: 2_000_000, chunk: 10_000 };
const TAIL_CALLS = 2_000_000;
const DEFAULT_MAX_STEP = 1_000_000;

const server = await benchServer();
const client = await benchClient(server.url);
const fixed = { redis: client.redis, key: BENCH_KEY, minStep: STEP, maxStep: STEP };

const numbers = new KvId(field("hot", "number"), fixed);
const bigints = new KvId(field("hot", "bigint"), { ...fixed, bigint: true });
const batch100 = new KvId(field("hot", "batch100"), fixed);
const batch10k = new KvId(field("hot", "batch10k"), fixed);
// Reserve now, so no bench iteration waits for the network.
await Promise.all([numbers.next(), bigints.next(), batch100.next(), batch10k.next()]);

let sink: unknown;
let bareCount = 0;
const bare = {
  // The cheapest awaited ID source possible: what KvId.next() is compared with. An async
  // function on purpose: next() returns a promise too.
  // deno-lint-ignore require-await
  async next(): Promise<number> {
    return ++bareCount;
  },
};
const ulid = monotonicFactory();
const snowflake = new Snowflake(new Date("2024-01-01T00:00:00Z"));

// Part 1's subjects, declared at module level as a user declares them.
const defaults = { redis: client.redis, key: BENCH_KEY }; // as a user writes it
const ID = new KvId(field("as-run", "number"), defaults);
// A long-lived counter: past 2^30 a number is no longer a small integer for V8 but a heap object,
// allocated per ID, by next() and by a bare counter alike (1.07 billion IDs: 3 hours at 100k/s).
const LARGE = 1_000_000_000_000;
await client.raw.hIncrBy(BENCH_KEY, field("as-run", "large"), LARGE);
const LARGE_ID = new KvId(field("as-run", "large"), defaults);
const BIG_ID = new KvId(field("as-run", "bigint"), { ...defaults, bigint: true });
// The controls: the same cheapest counter as `bare` (part 2), one object each.
let count = 0;
const control = {
  // deno-lint-ignore require-await
  async next(): Promise<number> {
    return ++count;
  },
};
let largeCount = LARGE;
const largeControl = {
  // deno-lint-ignore require-await
  async next(): Promise<number> {
    return ++largeCount;
  },
};
const bigControl = {
  // A fresh bigint per call, the cheapest way found: under asIntN(64), with a bigint operand, V8
  // converts and adds in registers and allocates only the result. `++n` on a bigint variable,
  // or BigInt(++n) alone, costs about twice as much.
  base: 1n << 40n,
  n: 0,
  // deno-lint-ignore require-await
  async next(): Promise<bigint> {
    return BigInt.asIntN(64, this.base + BigInt(this.n++));
  },
};
// The floor of any awaited source that can run dry: a counter with a limit and a path that
// waits for more, taken once (the first call). V8 elides the promise of the bare counter's
// next() in the calling loop, not of one with a second path, so this pays it as KvId does.
const bounded = {
  n: 0,
  limit: 0,
  // deno-lint-ignore require-await
  async next(): Promise<number> {
    return this.n < this.limit ? ++this.n : this.refill();
  },
  refill(): Promise<number> {
    this.limit += 1_000_000_000;
    return Promise.resolve(++this.n);
  },
};
// The shared call site: three number generators and a bigint one, as a service's map of
// counters; its control is the same map shape over bare counters.
const names = ["order", "invoice", "event", "trace"];
const gens = new Map<string, KvId<number | bigint>>(
  names.map((n, i) => [n, new KvId(field("as-run", n), { ...defaults, bigint: i === 3 })]),
);
const bares = new Map<string, { next(): Promise<number | bigint> }>(
  names.map((n, i) => [n, i === 3 ? bareCounter(0n) : bareCounter(0)]),
);

await measureAsRun();

// Warm every subject before the first bench: without this, JIT compilation and the collection of
// the setup's garbage (npm modules, the client) run in the background during whichever bench
// comes first and inflate its average several times over.
for (let round = 0; round < 5; round++) {
  for (let i = 0; i < LOOP; i++) {
    await bare.next();
    await numbers.next();
    await bigints.next();
  }
  for (let i = 0; i < LOOP / 100; i++) await batch100.nextBatch(100);
  for (let i = 0; i < LOOP / 10_000; i++) await batch10k.nextBatch(10_000);
  for (let i = 0; i < LOOP / 50; i++) {
    sink = [crypto.randomUUID(), uuidv7(), ulid(), snowflake.generate()];
  }
}

warmUpBench(async () => {
  let last = 0;
  for (let i = 0; i < LOOP; i++) last = await bare.next();
  sink = last;
});

Deno.bench("await bare async counter", { group: GROUP, baseline: true, ...ITER }, async () => {
  let last = 0;
  for (let i = 0; i < LOOP; i++) last = await bare.next();
  sink = last;
});

Deno.bench("await kvid.next() (number)", { group: GROUP, ...ITER }, async () => {
  let last = 0;
  for (let i = 0; i < LOOP; i++) last = await numbers.next();
  sink = last;
});

Deno.bench("await kvid.next() (bigint)", { group: GROUP, ...ITER }, async () => {
  let last = 0n;
  for (let i = 0; i < LOOP; i++) last = await bigints.next();
  sink = last;
});

Deno.bench("await kvid.nextBatch(100)", { group: GROUP, ...ITER }, async () => {
  let last: number[] = [];
  for (let i = 0; i < LOOP / 100; i++) last = await batch100.nextBatch(100);
  sink = last;
});

Deno.bench("await kvid.nextBatch(10_000)", { group: GROUP, ...ITER }, async () => {
  let last: number[] = [];
  for (let i = 0; i < LOOP / 10_000; i++) last = await batch10k.nextBatch(10_000);
  sink = last;
});

Deno.bench("crypto.randomUUID()", { group: GROUP, ...ITER }, () => {
  let last = "";
  for (let i = 0; i < LOOP; i++) last = crypto.randomUUID();
  sink = last;
});

Deno.bench("npm:uuidv7 uuidv7()", { group: GROUP, ...SLOW }, () => {
  let last = "";
  for (let i = 0; i < LOOP; i++) last = uuidv7();
  sink = last;
});

Deno.bench("npm:ulid monotonicFactory()()", { group: GROUP, ...SLOW }, () => {
  let last = "";
  for (let i = 0; i < LOOP; i++) last = ulid();
  sink = last;
});

Deno.bench("npm:@sapphire/snowflake generate()", { group: GROUP, n: 20, warmup: 2 }, () => {
  let last = 0n;
  for (let i = 0; i < LOOP; i++) last = snowflake.generate();
  sink = last;
});

addEventListener("unload", () => {
  // A reservation inside the measurement would make the figures meaningless: say so.
  for (const [name, gen] of Object.entries({ numbers, bigints, batch100, batch10k })) {
    const s = gen.stats();
    metric("hot path", `generator ${name}`, {
      reservations: s.segments,
      stalls: s.stalls,
      clean: s.segments === 1 && s.stalls <= 1,
    });
    if (s.segments !== 1) log(`  WARNING: ${name} reserved ${s.segments} times during the bench`);
  }
  void sink;
});

/** Part 1: default options, segments switching, the control in the same run (see the top). */
async function measureAsRun(): Promise<void> {
  const loadBefore = await loadAverage();
  const generators: Record<string, KvId<number | bigint>> = {
    ID,
    BIG_ID,
    ...Object.fromEntries(gens),
  };

  // Warm up: the step doubles per reservation up to maxStep; take IDs, giving the event loop a
  // turn, until every generator reserves maxStep IDs at a time.
  const started = performance.now();
  for (const gen of Object.values(generators)) {
    while (gen.stats().step < DEFAULT_MAX_STEP && performance.now() - started < 120_000) {
      for (let i = 0; i < AS_RUN.chunk; i++) sink = await gen.next();
      await turn();
    }
  }
  const at = (g: KvId<number | bigint>) => ({
    segments: g.stats().segments,
    stalls: g.stats().stalls,
  });
  const subjects = {
    "await bare async counter (control)": async (n: number) => {
      let last = 0;
      for (let i = 0; i < n; i++) last = await control.next();
      return last;
    },
    "await kvid.next() (number)": async (n: number) => {
      let last = 0;
      for (let i = 0; i < n; i++) last = await ID.next();
      return last;
    },
    "await bounded async counter (floor: a limit and a waiting path)": async (n: number) => {
      let last = 0;
      for (let i = 0; i < n; i++) last = await bounded.next();
      return last;
    },
    "await kvid.next() (bigint)": async (n: number) => {
      let last = 0n;
      for (let i = 0; i < n; i++) last = await BIG_ID.next();
      return last;
    },
    "await bare async bigint counter (bigint control)": async (n: number) => {
      let last = 0n;
      for (let i = 0; i < n; i++) last = await bigControl.next();
      return last;
    },
    "shared site: map.get(name).next() on bare counters (control)": async (n: number) => {
      let last: number | bigint = 0;
      for (let i = 0; i < n; i++) last = await bares.get(names[i & 3])!.next();
      return last;
    },
    "shared site: map.get(name).next() on 4 generators": async (n: number) => {
      let last: number | bigint = 0;
      for (let i = 0; i < n; i++) last = await gens.get(names[i & 3])!.next();
      return last;
    },
    "crypto.randomUUID()": (n: number) => {
      let last = "";
      for (let i = 0; i < n; i++) last = crypto.randomUUID();
      return last;
    },
  };
  // One run to compile every loop, then the measured runs.
  await interleave(subjects, { ...AS_RUN, runs: 1, idsPerRun: AS_RUN.idsPerRun / 4 });
  const before = Object.fromEntries(Object.entries(generators).map(([k, g]) => [k, at(g)]));
  const runs = await interleave(subjects, AS_RUN);
  const switched = (keys: string[]) => {
    let segments = 0, stalls = 0;
    for (const k of keys) {
      segments += generators[k].stats().segments - before[k].segments;
      stalls += generators[k].stats().stalls - before[k].stalls;
    }
    return { segments, stalls };
  };
  const used: Record<string, { segments: number; stalls: number } | undefined> = {
    "await kvid.next() (number)": switched(["ID"]),
    "await kvid.next() (bigint)": switched(["BIG_ID"]),
    "shared site: map.get(name).next() on 4 generators": switched(names),
  };
  // Each subject's control returns what it returns: bigint mode pays for a fresh bigint per ID,
  // as any awaited bigint source does; "x bare await" compares everything with the number one.
  const controlOf = (name: string) =>
    name.startsWith("shared site")
      ? "shared site: map.get(name).next() on bare counters (control)"
      : name === "await kvid.next() (bigint)"
      ? "await bare async bigint counter (bigint control)"
      : "await bare async counter (control)";
  const ratio = (a: RunFigures[], b: RunFigures[], k: keyof RunFigures) =>
    median(a.map((r, i) => r[k] / b[i][k]));
  const plain = runs["await bare async counter (control)"];
  const loadAfter = await loadAverage();
  for (const [name, figures] of Object.entries(runs)) {
    const ctl = runs[controlOf(name)];
    metric("hot path, as run", name, {
      "ns/ID (median chunk)": median(figures.map((r) => r.median)),
      "ns/ID (mean)": median(figures.map((r) => r.mean)),
      "x control (median chunk)": ratio(figures, ctl, "median"),
      "x control (mean)": ratio(figures, ctl, "mean"),
      "x bare await (median chunk)": ratio(figures, plain, "median"),
      "segments switched": used[name]?.segments ?? "",
      stalls: used[name]?.stalls ?? "",
      "load before / after": `${loadBefore} / ${loadAfter}`,
    });
  }

  // The tail: every call timed, the control the same way, interleaved.
  const tailLoad = await loadAverage();
  const before2 = at(ID);
  const times = await timeEachCall(
    {
      "await bare async counter (control)": async (out, from, n) => {
        let last = 0;
        for (let i = from; i < from + n; i++) {
          const t0 = performance.now();
          last = await control.next();
          out[i] = performance.now() - t0;
        }
        return last;
      },
      "await kvid.next() (number)": async (out, from, n) => {
        let last = 0;
        for (let i = from; i < from + n; i++) {
          const t0 = performance.now();
          last = await ID.next();
          out[i] = performance.now() - t0;
        }
        return last;
      },
    },
    TAIL_CALLS,
    AS_RUN.chunk,
  );
  const tail = (t: Float64Array) => {
    const sorted = t.sort();
    return {
      p50: quantile(sorted, 0.5) * 1e6,
      p99: quantile(sorted, 0.99) * 1e6,
      p999: quantile(sorted, 0.999) * 1e6,
      max: sorted[sorted.length - 1] * 1e6,
    };
  };
  const ctlTail = tail(times["await bare async counter (control)"]);
  const after2 = at(ID);
  for (const [name, t] of Object.entries(times)) {
    const q = tail(t);
    const own = name.includes("kvid");
    metric("hot path, tail", name, {
      calls: t.length,
      "p50 ns": q.p50,
      "p99 ns": q.p99,
      "p99.9 ns": q.p999,
      "max ns": q.max,
      "p99.9 / control p99.9": q.p999 / ctlTail.p999,
      "segments switched": own ? after2.segments - before2.segments : "",
      stalls: own ? after2.stalls - before2.stalls : "",
      "load before / after": `${tailLoad} / ${await loadAverage()}`,
    });
  }
  await measurePast2to30();
  for (const gen of Object.values(generators)) await gen.close();
  log(`  [hot path, as run] measured in ${((performance.now() - started) / 1000).toFixed(1)} s`);
}

/**
 * Part 1, last: a long-lived counter (past 2^30, a number ID is a heap object for V8, allocated per
 * call by next() and by a bare counter alike). Measured after the rest because V8 then widens the
 * buffer's `firstNumber` field for every generator of the process: `next()` on the small counter
 * is measured again beside it, as in a process where one counter is past 2^30.
 */
async function measurePast2to30(): Promise<void> {
  const loadBefore = await loadAverage();
  const started = performance.now();
  while (LARGE_ID.stats().step < DEFAULT_MAX_STEP && performance.now() - started < 120_000) {
    for (let i = 0; i < AS_RUN.chunk; i++) sink = await LARGE_ID.next();
    await turn();
  }
  const subjects = {
    "await bare async counter (control)": async (n: number) => {
      let last = 0;
      for (let i = 0; i < n; i++) last = await control.next();
      return last;
    },
    "await bare async counter past 10^12": async (n: number) => {
      let last = 0;
      for (let i = 0; i < n; i++) last = await largeControl.next();
      return last;
    },
    "await kvid.next() (number, counter past 10^12)": async (n: number) => {
      let last = 0;
      for (let i = 0; i < n; i++) last = await LARGE_ID.next();
      return last;
    },
    "await kvid.next() (number, small counter, same process)": async (n: number) => {
      let last = 0;
      for (let i = 0; i < n; i++) last = await ID.next();
      return last;
    },
  };
  await interleave(subjects, { ...AS_RUN, runs: 1, idsPerRun: AS_RUN.idsPerRun / 4 });
  const before = LARGE_ID.stats();
  const runs = await interleave(subjects, AS_RUN);
  const loadAfter = await loadAverage();
  const small = runs["await bare async counter (control)"];
  const large = runs["await bare async counter past 10^12"];
  const ratio = (a: RunFigures[], b: RunFigures[]) =>
    median(a.map((r, i) => r.median / b[i].median));
  for (const [name, figures] of Object.entries(runs)) {
    const own = name.includes("past 10^12)");
    metric("hot path, past 2^30", name, {
      "ns/ID (median chunk)": median(figures.map((r) => r.median)),
      "ns/ID (mean)": median(figures.map((r) => r.mean)),
      "x control past 10^12 (median chunk)": ratio(figures, large),
      "x bare await (median chunk)": ratio(figures, small),
      "segments switched": own ? LARGE_ID.stats().segments - before.segments : "",
      stalls: own ? LARGE_ID.stats().stalls - before.stalls : "",
      "load before / after": `${loadBefore} / ${loadAfter}`,
    });
  }
  await LARGE_ID.close();
}

/** A bare awaited counter of its own, for the shared call site's control. */
function bareCounter<T extends number | bigint>(zero: T): { next(): Promise<T> } {
  let n = zero as number;
  return {
    // deno-lint-ignore require-await
    async next(): Promise<T> {
      return ++n as T;
    },
  };
}

/** The 1-, 5- and 15-minute load averages, as `uptime` prints them. */
async function loadAverage(): Promise<string> {
  try {
    return (await Deno.readTextFile("/proc/loadavg")).split(" ").slice(0, 3).join(" ");
  } catch {
    return "unknown";
  }
}
