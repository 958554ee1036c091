/**
 * The partition harness: a private network namespace per scenario, nodes on their own loopback
 * addresses, partitions as `nft` rules dropping traffic between address sets, a seeded nemesis
 * and a checker over every ID every generator got.
 *
 * A scenario runs in a worker process (`partition_worker.ts`) started through
 * `unshare --net --pid --fork --kill-child`: the worker is the first process of a new PID and
 * network namespace, so when it ends (or the test kills `unshare`), the kernel kills every server
 * it started and the namespace goes with its last process. Nothing is left behind, even when the
 * test fails or times out. Inside, the loopback interface carries 127.0.0.0/8, so every node
 * binds an address of its own on the default port, and the `nft` table belongs to the namespace.
 *
 * @module
 */

import { redisBinary } from "./redis_server.ts";

/** Why partitions cannot be staged here, or undefined when they can. */
export function partitionsMissing(): string | undefined {
  if (Deno.build.os !== "linux") return "network namespaces need Linux";
  if (Deno.uid() !== 0) return "network namespaces and nft need root";
  if (!runs("nft", ["--version"])) return "nft is not on PATH (apt-get install nftables)";
  if (!runs("ip", ["-V"])) return "ip is not on PATH (apt-get install iproute2)";
  if (!runs("unshare", ["--net", "--pid", "--fork", "true"])) {
    return "unshare --net --pid fails here (no namespaces in this container)";
  }
  return undefined;
}

function runs(bin: string, args: string[]): boolean {
  try {
    return new Deno.Command(bin, { args, stdout: "null", stderr: "null" }).outputSync().success;
  } catch {
    return false;
  }
}

/** A deterministic PRNG (mulberry32): the nemesis' schedule is a function of its seed. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** What one generator got: its IDs as runs `[first, count]`, in the order served. */
export interface GeneratorLog {
  /** The client and generator, e.g. `A1`. */
  readonly name: string;
  readonly runs: [number, number][];
  /** Each error a call got, as `code: message`, counted. */
  readonly errors: Record<string, number>;
}

/** What a scenario's worker reports. */
export interface Outcome {
  readonly generators: GeneratorLog[];
  /** Lines describing what happened (promotions, splits), for the failure message. */
  readonly events: string[];
}

/** The checker's findings over an outcome. */
export interface Verdict {
  /** IDs handed out more than once across all generators (each counted once). */
  readonly reissued: number;
  /** The first few of them. */
  readonly sample: number[];
  /** Generators whose IDs did not strictly increase. */
  readonly notIncreasing: string[];
  readonly ids: number;
  /** Errors by code over all generators. */
  readonly errors: Record<string, number>;
}

/** Check every ID of every generator: unique across them all, increasing per generator. */
export function check(outcome: Outcome): Verdict {
  let n = 0;
  for (const g of outcome.generators) for (const [, c] of g.runs) n += c;
  const all = new Float64Array(n);
  let at = 0;
  const notIncreasing: string[] = [];
  const errors: Record<string, number> = {};
  for (const g of outcome.generators) {
    let last = -Infinity;
    for (const [first, count] of g.runs) {
      if (first <= last && !notIncreasing.includes(g.name)) notIncreasing.push(g.name);
      for (let i = 0; i < count; i++) all[at++] = first + i;
      last = first + count - 1;
    }
    for (const [code, k] of Object.entries(g.errors)) {
      const c = code.split(":")[0];
      errors[c] = (errors[c] ?? 0) + k;
    }
  }
  all.sort();
  let reissued = 0;
  const sample: number[] = [];
  for (let i = 1; i < all.length; i++) {
    if (all[i] === all[i - 1] && (i < 2 || all[i] !== all[i - 2])) {
      reissued++;
      if (sample.length < 5) sample.push(all[i]);
    }
  }
  return { reissued, sample, notIncreasing, ids: n, errors };
}

/** A scenario for the worker; see `partition_worker.ts`. */
export interface Scenario {
  /**
   * `split-live`: {P, R1, A} | {R2, Sentinels, B} with A live through the heal;
   * `split-closed`: the same, A closed before the heal; `nemesis`: random splits and heals;
   * `resent-wait`: P cut from both replicas, A's connection killed while its WAIT is pending;
   * `http-nemesis`: HttpStore clients, the service and its Redis split at random; `pg-split`:
   * a PostgreSQL standby cut off and promoted while A commits on the old primary.
   */
  readonly kind:
    | "split-live"
    | "split-closed"
    | "nemesis"
    | "resent-wait"
    | "http-nemesis"
    | "pg-split";
  /** The generators' `replicas`. */
  readonly replicas: number;
  /** The nemesis' seed. */
  readonly seed: number;
  /** `resent-wait` only: A's client cannot name its connection, so nothing checks it. */
  readonly unchecked?: boolean;
  /** Extra generator options, e.g. `{ durability: "best-effort" }`. */
  readonly options?: Record<string, unknown>;
}

/**
 * Run `scenario` in a fresh network and PID namespace and return what its generators got. The
 * worker is killed (and every server with it) after `ms`.
 */
export async function runScenario(scenario: Scenario, ms = 55_000): Promise<Outcome> {
  const worker = new URL("./partition_worker.ts", import.meta.url).pathname;
  const child = new Deno.Command("unshare", {
    args: [
      "--net",
      "--pid",
      "--fork",
      "--kill-child",
      Deno.execPath(),
      "run",
      "-A",
      worker,
      JSON.stringify(scenario),
    ],
    env: { KVID_TEST_SERVER: redisBinary() },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const timer = setTimeout(() => {
    try {
      child.kill("SIGKILL");
    } catch { /* exited */ }
  }, ms);
  try {
    const { code, stdout, stderr } = await child.output();
    const out = new TextDecoder().decode(stdout);
    const err = new TextDecoder().decode(stderr);
    const last = out.trim().split("\n").at(-1) ?? "";
    if (code !== 0 || !last.startsWith("{")) {
      throw new Error(
        `the ${scenario.kind} worker (seed ${scenario.seed}) exited ${code}` +
          (code === 137 ? ` (killed after ${ms} ms)` : "") +
          `:\n${out.slice(-3000)}\n${err.slice(-3000)}`,
      );
    }
    return JSON.parse(last) as Outcome;
  } finally {
    clearTimeout(timer);
  }
}
