/**
 * Suite 5, step adaptation, simulated (no server): from a cold start at a steady consumption
 * rate, how many reservations until the step settles, with both rules of `src/engine/step.ts` (the
 * `stepRule` option) and an unbounded rate rule prototyped here for comparison.
 *
 * The simulator follows KvId's reservation logic: single flight, a reservation starts when a
 * call waits or when `prefetchAt` of the last reservation is left, asks for
 * `min(max(step, waiting), maxStep)` IDs, completes one round trip later, and then the sizer is
 * told. Requests arrive as a Poisson process (seeded, so runs are reproducible).
 *
 * "Reached" = the first reservation within a factor of two of the target
 * `clamp(rate * segmentDuration, minStep, maxStep)`; "settled" = the first from which every later
 * one stays within that band until the end of the simulation (30 segment durations). The doubling
 * rule decides each step on the segment before last (prefetch starts the next reservation before
 * the current segment is used up), so it cycles instead of settling: the "band" columns give the
 * smallest and largest step over the second half of the run, relative to the target.
 *
 * The deno bench time is the simulator's own cost; the figures are the printed metrics.
 *
 *     deno bench -A bench/step_bench.ts
 *
 * @module
 */

import { type StepRule, StepSizer } from "../src/engine/step.ts";
import { metric } from "./_server.ts";

/** What the simulator asks of a step rule. */
export interface Sizer {
  /** The step the next reservation asks for. */
  readonly step: number;
  /**
   * A reservation completed at `now` (ms); `consumed` IDs were asked for (handed out or still
   * waiting) since the previous one completed. Returns the next step.
   */
  reserved(now: number, consumed: number): number;
}

/** Step rule bounds and target, as KvId's options. */
export interface Bounds {
  /** Smallest and first step. */
  minStep: number;
  /** Largest step. */
  maxStep: number;
  /** Target lifetime of a segment, ms. */
  segmentDuration: number;
}

/** A rule of `src/engine/step.ts` (what KvId runs), as is: it takes the running total of IDs taken. */
export function engine(b: Bounds, rule: StepRule): Sizer {
  const s = new StepSizer(b.minStep, b.maxStep, b.segmentDuration, rule);
  let taken = 0;
  return {
    get step() {
      return s.step;
    },
    reserved: (now, consumed) => s.reserved(now, taken += consumed),
  };
}

/**
 * The rate rule: measure the rate of demand between two completed reservations and size the
 * next step so that a segment lasts `segmentDuration` at that rate:
 *
 *     rate   = consumed / (now - previousCompletion)            (IDs per ms)
 *     wanted = ceil(rate * segmentDuration)
 *     step   = clamp(wanted, max(minStep, step / shrink), min(maxStep, step * growth))
 *
 * `growth` caps how much one reservation may grow the step, so that a burst or a lucky sample
 * right after a cold start cannot buy a huge segment; `shrink` caps how much it may shrink, so
 * that an interval of one round trip with nothing consumed (a cold start's first segments are
 * used up at once) does not throw the estimate back to `minStep`. Both default to unlimited.
 * KvId can count `consumed` without touching the hot path: IDs added by reservations, minus
 * `remaining`, plus the demand of queued calls, taken at each completion.
 */
export function rateRule(b: Bounds, growth = Infinity, shrink = Infinity): Sizer {
  let step = b.minStep;
  let lastAt: number | undefined;
  return {
    get step() {
      return step;
    },
    reserved(now, consumed) {
      const last = lastAt;
      lastAt = now;
      if (last === undefined || now <= last) return step;
      const wanted = Math.ceil(consumed / (now - last) * b.segmentDuration);
      const low = Math.max(b.minStep, Math.floor(step / shrink));
      step = Math.max(low, Math.min(b.maxStep, step * growth, wanted));
      return step;
    },
  };
}

/** One simulated scenario. */
export interface Scenario extends Bounds {
  /** Steady demand, IDs per second. */
  rate: number;
  /** Round trip of a reservation, ms. */
  rttMs: number;
  /** Fraction left when the next reservation starts; 0: off. */
  prefetchAt: number;
  /** IDs asked for all at once at time 0, before the steady rate (a start-up burst). */
  burst?: number;
  /** PRNG seed. */
  seed?: number;
}

/** What a simulation found. */
export interface SimResult {
  /** The target step, `clamp(rate * segmentDuration)`. */
  target: number;
  /** 1-based index of the first step within 2x of the target; 0: never. */
  reachedAt: number;
  /** 1-based index of the step from which all stay within 2x of the target; 0: never. */
  settledAt: number;
  /** Simulated ms from the start to that reservation. */
  settleMs: number;
  /** Reservations made. */
  reservations: number;
  /** Largest step / target (the rule's step, not a reservation sized by queued demand). */
  maxOvershoot: number;
  /** Smallest and largest step / target over the second half of the reservations. */
  band: [number, number];
  /** IDs whose call had to wait for a reservation (the cold start included). */
  stalledIds: number;
  /** IDs that waited after the step settled. */
  stalledAfterSettle: number;
}

/** Run one scenario with one rule for 30 segment durations of simulated time. */
export function simulate(sc: Scenario, sizer: Sizer): SimResult {
  const rand = mulberry32(sc.seed ?? 1);
  const perMs = sc.rate / 1000;
  const horizon = 30 * sc.segmentDuration;
  const target = Math.max(sc.minStep, Math.min(sc.maxStep, Math.ceil(perMs * sc.segmentDuration)));
  const sizes: number[] = []; // the rule's step at each reservation
  const starts: number[] = [];
  const stalledBy: number[] = []; // IDs served from each reservation to waiting calls

  let t = 0;
  let buffered = 0;
  let waiting = sc.burst ?? 0;
  let mark = -1; // a reservation is wanted when buffered <= mark (prefetch)
  let inflight: { doneAt: number; count: number } | undefined;
  let consumed = waiting; // asked for since the last completion

  // `n` arrivals: take them from the buffer, the rest wait.
  const arrive = (n: number) => {
    consumed += n;
    const served = Math.min(n, buffered);
    buffered -= served;
    waiting += n - served;
  };

  while (t < horizon) {
    if (inflight === undefined) {
      if (waiting > 0 || buffered <= mark) {
        const count = Math.min(Math.max(sizer.step, waiting), sc.maxStep);
        inflight = { doneAt: t + sc.rttMs, count };
        sizes.push(sizer.step);
        starts.push(t);
        continue;
      }
      // Nothing to do until enough arrivals reach the prefetch mark, or one finds nothing.
      const need = mark >= 0 ? buffered - mark : buffered + 1;
      t += gamma(rand, need, perMs);
      arrive(need);
      continue;
    }
    arrive(poisson(rand, perMs * (inflight.doneAt - t)));
    t = inflight.doneAt;
    const { count } = inflight;
    inflight = undefined;
    sizer.reserved(t, consumed);
    consumed = 0;
    const served = Math.min(waiting, count);
    waiting -= served;
    buffered += count - served;
    stalledBy.push(served);
    mark = sc.prefetchAt > 0 ? Math.floor(sc.prefetchAt * count) : -1;
  }

  const inBand = (s: number) => s >= target / 2 && s <= target * 2;
  let settled = sizes.length;
  while (settled > 0 && inBand(sizes[settled - 1])) settled--;
  // In the band only for the last half of the run is a cycle caught at a good moment, not settled.
  if (settled > sizes.length / 2) settled = sizes.length;
  const stalledIds = stalledBy.reduce((a, b) => a + b, 0);
  const tail = sizes.slice(Math.floor(sizes.length / 2));
  return {
    target,
    reachedAt: sizes.findIndex(inBand) + 1,
    settledAt: settled < sizes.length ? settled + 1 : 0,
    settleMs: settled < sizes.length ? starts[settled] : NaN,
    reservations: sizes.length,
    maxOvershoot: sizes.reduce((a, b) => Math.max(a, b), 0) / target,
    band: [
      tail.reduce((a, b) => Math.min(a, b), Infinity) / target,
      tail.reduce((a, b) => Math.max(a, b), 0) / target,
    ],
    stalledIds,
    stalledAfterSettle: stalledBy.slice(settled + 1).reduce((a, b) => a + b, 0),
  };
}

// Seeded PRNG (mulberry32): the same figures on every run.
function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function normal(rand: () => number): number {
  return Math.sqrt(-2 * Math.log(1 - rand())) * Math.cos(2 * Math.PI * rand());
}

/** Arrivals in an interval with mean `mean` (Poisson; normal approximation when large). */
function poisson(rand: () => number, mean: number): number {
  if (mean > 50) return Math.max(0, Math.round(mean + Math.sqrt(mean) * normal(rand)));
  const limit = Math.exp(-mean);
  let k = 0;
  for (let p = rand(); p > limit; p *= rand()) k++;
  return k;
}

/** Time until `k` arrivals at `perMs` (Erlang; normal approximation when large). */
function gamma(rand: () => number, k: number, perMs: number): number {
  if (k > 50) return Math.max(0, (k + Math.sqrt(k) * normal(rand)) / perMs);
  let sum = 0;
  for (let i = 0; i < k; i++) sum -= Math.log(1 - rand());
  return sum / perMs;
}

/** The KvId defaults. */
const DEFAULTS: Bounds = { minStep: 1, maxStep: 1_000_000, segmentDuration: 600_000 };

const RULES: Record<string, (b: Bounds) => Sizer> = {
  'stepRule "doubling" (default)': (b) => engine(b, "doubling"),
  'stepRule "rate" (x16 up, /2 down)': (b) => engine(b, "rate"),
  "rate, unbounded (prototype)": (b) => rateRule(b),
};

const SCENARIOS: Record<string, Scenario> = {};
for (const rate of [1, 100, 10_000, 1_000_000]) {
  SCENARIOS[`${rate.toLocaleString("en-US")} ID${rate === 1 ? "" : "s"}/s`] = {
    ...DEFAULTS,
    rate,
    rttMs: 1,
    prefetchAt: 0.2,
  };
}
SCENARIOS["burst of 10,000 then 1 ID/s"] = {
  ...DEFAULTS,
  rate: 1,
  rttMs: 1,
  prefetchAt: 0.2,
  burst: 10_000,
};

const results = new Map<string, SimResult>();
for (const [rule, make] of Object.entries(RULES)) {
  Deno.bench(rule, {
    group: "step adaptation (simulated, all scenarios per iteration)",
    n: 1,
    warmup: 0,
  }, () => {
    // Seeded: every iteration finds the same, the last one is kept.
    for (const [name, sc] of Object.entries(SCENARIOS)) {
      results.set(`${name}: ${rule}`, simulate(sc, make(sc)));
    }
  });
}

// Printed once at the end, not in the middle of deno bench's table.
addEventListener("unload", () => {
  const ratio = (x: number) => Math.round(x * 100) / 100;
  for (const [name, r] of results) {
    metric("step", name, {
      target: r.target,
      "reached 2x band at": r.reachedAt || "never",
      "settled (stays in 2x band) at": r.settledAt || "never",
      "time to settle (s)": Number.isNaN(r.settleMs)
        ? "-"
        : Number((r.settleMs / 1000).toPrecision(3)),
      "max step / target": ratio(r.maxOvershoot),
      "steady band / target": `${ratio(r.band[0])}..${ratio(r.band[1])}`,
      "stalled IDs": r.stalledIds,
      reservations: r.reservations,
    });
  }
});
