/**
 * Interleaved timing: several subjects measured in the same process and run, in short chunks taken
 * in turn, so that another process's load lands on all of them alike and ratios stay meaningful
 * on a shared machine. Between rounds of chunks the event loop gets a turn (a `setTimeout(0)`),
 * as a service's loop does between requests: prefetch timers fire and replies are read.
 *
 * A subject is a function taking `n` IDs. Give each subject its own function literal: V8 keeps
 * type feedback per literal, and a loop shared by two subjects measures neither.
 *
 * @module
 */

/** Takes `n` IDs (or makes `n` calls); returns the last, which is kept so nothing is elided. */
export type Loop = (n: number) => unknown;

/** Records each call's time of a subject into `out` (ns), for `out.length` calls from `from`. */
export type TimedLoop = (out: Float64Array, from: number, n: number) => unknown;

/** How an interleaved measurement runs. */
export interface InterleaveOptions {
  /** Separate runs; the report takes medians over them. */
  runs: number;
  /** IDs each subject takes per run. */
  idsPerRun: number;
  /** IDs per chunk: one subject's turn. */
  chunk: number;
}

let sink: unknown;

/** A macrotask turn of the event loop. */
export function turn(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, 0));
}

/** One subject's figures of one run, in ns per ID. */
export interface RunFigures {
  /** The run's time over its IDs: every chunk counts, a segment switch's and a preempted one's. */
  mean: number;
  /** The median chunk: robust against another process taking the CPU for a while. */
  median: number;
}

/** Per subject, the figures of each run. */
export async function interleave(
  loops: Record<string, Loop>,
  options: InterleaveOptions,
): Promise<Record<string, RunFigures[]>> {
  const names = Object.keys(loops);
  const perRun: Record<string, RunFigures[]> = Object.fromEntries(names.map((n) => [n, []]));
  const chunks = Math.ceil(options.idsPerRun / options.chunk);
  for (let run = 0; run < options.runs; run++) {
    const times = names.map(() => new Float64Array(chunks));
    for (let c = 0; c < chunks; c++) {
      // Rotate who goes first after the turn: the first chunk may find colder caches.
      for (let k = 0; k < names.length; k++) {
        const j = (c + k) % names.length;
        const t0 = performance.now();
        sink = await loops[names[j]](options.chunk);
        times[j][c] = performance.now() - t0;
      }
      await turn();
    }
    names.forEach((n, j) => {
      const perId = 1e6 / options.chunk;
      const sum = times[j].reduce((a, b) => a + b, 0);
      perRun[n].push({ mean: sum * perId / chunks, median: median([...times[j]]) * perId });
    });
  }
  void sink;
  return perRun;
}

/**
 * Per subject, every call's time in ns (`calls` each), taken in interleaved chunks with a turn
 * of the event loop between rounds.
 */
export async function timeEachCall(
  loops: Record<string, TimedLoop>,
  calls: number,
  chunk: number,
): Promise<Record<string, Float64Array>> {
  const names = Object.keys(loops);
  const out: Record<string, Float64Array> = Object.fromEntries(
    names.map((n) => [n, new Float64Array(calls)]),
  );
  for (let from = 0, c = 0; from < calls; from += chunk, c++) {
    const n = Math.min(chunk, calls - from);
    for (let k = 0; k < names.length; k++) {
      const name = names[(c + k) % names.length];
      sink = await loops[name](out[name], from, n);
    }
    await turn();
  }
  void sink;
  return out;
}

/** The median of some numbers. */
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}
