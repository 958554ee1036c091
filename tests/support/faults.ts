/**
 * Shared helpers of the fault suite: ID checks, subprocess producers, fail-fast clients and a
 * recording client wrapper.
 *
 * @module
 */

import assert from "node:assert/strict";
import type { RedisClient } from "../../mod.ts";
import {
  type ClientKind,
  isFirstReservation,
  type OpenClient,
  openClient,
} from "./redis_clients.ts";
import { command, redisBinary } from "./redis_server.ts";
export { assertIncreasing, rejectsWith } from "./assert.ts";

/** Every ID of every list, sorted, to look for duplicates. */
export function sortedUnion(lists: ArrayLike<number>[]): Float64Array {
  let n = 0;
  for (const l of lists) n += l.length;
  const all = new Float64Array(n);
  let at = 0;
  for (const l of lists) {
    all.set(l, at);
    at += l.length;
  }
  return all.sort();
}

/** The IDs that appear more than once across `lists`. */
export function duplicates(lists: ArrayLike<number>[]): number[] {
  const all = sortedUnion(lists);
  const dup: number[] = [];
  for (let i = 1; i < all.length; i++) {
    if (all[i] === all[i - 1] && all[i] !== dup.at(-1)) dup.push(all[i]);
  }
  return dup;
}

/** Fail if any ID appears twice across `lists`. */
export function assertNoDuplicates(lists: ArrayLike<number>[], what = "ids"): void {
  const dup = duplicates(lists);
  if (dup.length > 0) {
    assert.fail(`${what}: ${dup.length} duplicate IDs, first ${dup.slice(0, 5).join(", ")}`);
  }
}

/**
 * Wait until `check` returns a truthy value, polling every few ms, at most `ms`. Only for state
 * outside this process (a server's counter) that no event announces.
 */
export async function waitUntil<T>(
  check: () => T | Promise<T>,
  what: string,
  ms = 30_000,
): Promise<T> {
  const deadline = performance.now() + ms;
  while (true) {
    const value = await check();
    if (value) return value;
    if (performance.now() > deadline) assert.fail(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** Read a producer's output file: one decimal ID a line; a torn last line is ignored. */
export async function readIds(path: string): Promise<Float64Array> {
  const text = await Deno.readTextFile(path);
  const end = text.lastIndexOf("\n");
  if (end < 0) return new Float64Array(0);
  const lines = text.slice(0, end).split("\n");
  const ids = new Float64Array(lines.length);
  for (let i = 0; i < lines.length; i++) ids[i] = Number(lines[i]);
  return ids;
}

/** Options of {@linkcode spawnProducer}; see `fault_producer.ts`. */
export interface ProducerOptions {
  /** The server. */
  url: string;
  /** The counter. */
  name: string;
  /** IDs to produce; 0: until killed. */
  count: number;
  /** The file the IDs are written to. */
  out: string;
  /** The npm client to use. Default node-redis. */
  client?: ClientKind;
  /** The generator's `minStep`. */
  minStep?: number;
  /** The generator's `maxStep`. */
  maxStep?: number;
  /** The generator's `guard`. */
  guard?: boolean;
  /** The generator's `giveBack`. */
  giveBack?: boolean;
  /** IDs per write (and per progress line). */
  flush?: number;
}

/** A running producer subprocess. */
export interface Producer extends AsyncDisposable {
  readonly pid: number;
  /** IDs written so far, as last reported. */
  readonly written: number;
  /** Resolves once the producer has reported at least `n` IDs written. */
  progress(n: number): Promise<void>;
  /** SIGKILL it and wait for it to exit. */
  kill(): Promise<Deno.CommandStatus>;
  /** Resolves when it exits, with its status, its last stdout line and its stderr. */
  readonly done: Promise<{ status: Deno.CommandStatus; last: string; stderr: string }>;
}

const PRODUCER = new URL("./fault_producer.ts", import.meta.url).pathname;
const CONFIG = new URL("../../deno.json", import.meta.url).pathname;

/** Start `fault_producer.ts` in a new Deno process. */
export function spawnProducer(o: ProducerOptions): Producer {
  const args = [
    "run",
    "-A",
    "--config",
    CONFIG,
    PRODUCER,
    `--url=${o.url}`,
    `--name=${o.name}`,
    `--count=${o.count}`,
    `--out=${o.out}`,
    `--client=${o.client ?? "node-redis"}`,
    `--flush=${o.flush ?? 10_000}`,
  ];
  if (o.minStep !== undefined) args.push(`--min-step=${o.minStep}`);
  if (o.maxStep !== undefined) args.push(`--max-step=${o.maxStep}`);
  if (o.guard !== undefined) args.push(`--guard=${o.guard}`);
  if (o.giveBack !== undefined) args.push(`--give-back=${o.giveBack}`);
  const child = new Deno.Command(Deno.execPath(), {
    args,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();

  let written = 0;
  let last = "";
  const watchers: { n: number; resolve: () => void; reject: (e: Error) => void }[] = [];
  const notify = () => {
    for (let i = watchers.length - 1; i >= 0; i--) {
      if (written >= watchers[i].n) watchers.splice(i, 1)[0].resolve();
    }
  };
  const stdout = (async () => {
    let rest = "";
    for await (const chunk of child.stdout.pipeThrough(new TextDecoderStream())) {
      const lines = (rest + chunk).split("\n");
      rest = lines.pop()!;
      for (const line of lines) {
        last = line;
        const m = /^written (\d+)/.exec(line);
        if (m) written = Number(m[1]);
      }
      notify();
    }
  })();
  const stderr = new Response(child.stderr).text();
  const done = (async () => {
    const [status, , err] = await Promise.all([child.status, stdout, stderr]);
    for (const w of watchers.splice(0)) {
      w.reject(new Error(`producer exited (code ${status.code}) before ${w.n} IDs: ${err}`));
    }
    return { status, last, stderr: err };
  })();

  return {
    pid: child.pid,
    get written() {
      return written;
    },
    progress(n) {
      if (written >= n) return Promise.resolve();
      return new Promise((resolve, reject) => watchers.push({ n, resolve, reject }));
    },
    async kill() {
      try {
        child.kill("SIGKILL");
      } catch { /* exited already */ }
      return (await done).status;
    },
    done,
    async [Symbol.asyncDispose]() {
      try {
        child.kill("SIGKILL");
      } catch { /* exited already */ }
      await done;
    },
  };
}

/**
 * A real client whose commands fail at once while the server is unreachable (no offline
 * queue), so the generator's own retries and backoff are what is seen.
 */
export function openFailFastClient(kind: ClientKind, url: string): Promise<OpenClient> {
  return openClient(kind, url, { failFast: true });
}

/**
 * A client with no library under it: one fresh connection per command (tests/support/redis_server.ts'
 * `command`). Refused at once while the server is down, and it leaves no timer or socket behind.
 */
export function rawClient(url: string): RedisClient {
  return {
    hincrby: (key, field, n) => command(url, "HINCRBY", key, field, String(n)),
    eval: (script, keys, args) =>
      command(url, "EVAL", script, String(keys.length), ...keys, ...args),
    evalsha: (sha, keys, args) =>
      command(url, "EVALSHA", sha, String(keys.length), ...keys, ...args),
  };
}

/** One reservation command as seen by {@linkcode Recorder}. */
export interface Call {
  /** `hincrby`, `eval` or `evalsha`. */
  command: string;
  /** The script (eval) or sha (evalsha); undefined for hincrby. */
  script: string | undefined;
  key: string;
  /** The field and the rest of the arguments. */
  args: string[];
  /** The increment asked for. */
  count: number;
  start: number;
  end: number | undefined;
  /** The counter value replied (the last ID of the range), if any. */
  value: bigint | undefined;
  error: unknown;
  /** Settles when the command does, never rejects. */
  settled: Promise<void>;
}

/** Wraps a client and records every command with its timing and reply. */
export class Recorder implements RedisClient {
  /** Every command sent, in order. */
  readonly calls: Call[] = [];
  readonly #inner: RedisClient;
  readonly #probes: boolean;

  /**
   * @param inner The client that really sends the commands.
   * @param options `probes`: record the durability probe script too (a generator's first use,
   *   or a re-read after a failure, may be what meets a server state).
   */
  constructor(inner: RedisClient, options: { probes?: boolean } = {}) {
    this.#inner = inner;
    this.#probes = options.probes ?? false;
  }

  /** Records, then sends, `HINCRBY`. */
  hincrby(key: string, field: string, n: number): Promise<unknown> {
    return this.#track(
      "hincrby",
      undefined,
      key,
      [field, String(n)],
      Number(n),
      () => this.#inner.hincrby(key, field, n),
    );
  }

  /** Records, then sends, `EVAL`. */
  eval(script: string, keys: string[], args: string[]): Promise<unknown> {
    // Only the reserve script (7 arguments; a client's first, with the durability read) reserves;
    // the step and give-back scripts do not.
    const reserves = args.length === 7 || isFirstReservation(script);
    if (!reserves && !(this.#probes && args.length === 0)) {
      return this.#inner.eval(script, keys, args);
    }
    return this.#track(
      "eval",
      script,
      keys[0],
      args,
      Number(args[1]),
      () => this.#inner.eval(script, keys, args),
    );
  }

  /** Records, then sends, `EVALSHA`. */
  evalsha(sha: string, keys: string[], args: string[]): Promise<unknown> {
    if (args.length !== 7 && !(this.#probes && args.length === 0)) {
      return this.#inner.evalsha(sha, keys, args);
    }
    return this.#track(
      "evalsha",
      sha,
      keys[0],
      args,
      Number(args[1]),
      () => this.#inner.evalsha(sha, keys, args),
    );
  }

  /** Calls that replied with a value, with the range they reserved. */
  ranges(): { first: bigint; last: bigint; latency: number }[] {
    return this.calls.filter((c) => c.value !== undefined && c.end !== undefined).map((c) => ({
      first: c.value! - BigInt(c.count) + 1n,
      last: c.value!,
      latency: c.end! - c.start,
    }));
  }

  #track(
    command: string,
    script: string | undefined,
    key: string,
    args: string[],
    count: number,
    run: () => Promise<unknown>,
  ): Promise<unknown> {
    const call: Call = {
      command,
      script,
      key,
      args,
      count,
      start: performance.now(),
      end: undefined,
      value: undefined,
      error: undefined,
      settled: Promise.resolve(),
    };
    this.calls.push(call);
    const p = run();
    call.settled = p.then((reply) => {
      call.end = performance.now();
      const v = Array.isArray(reply) ? reply[0] : reply;
      if (v !== null && v !== undefined && /^-?\d+$/.test(String(v))) {
        call.value = BigInt(String(v));
      }
      // The reserve script's reply: {last, raised, count used (0: from the pool), first or nil}.
      if (Array.isArray(reply) && reply.length >= 4 && call.value !== undefined) {
        const first = /^\d+$/.test(String(reply[3])) ? BigInt(String(reply[3])) : undefined;
        call.count = first !== undefined
          ? Number(call.value - first + 1n)
          : Number(String(reply[2]));
      }
    }, (err) => {
      call.end = performance.now();
      call.error = err;
    });
    return p;
  }
}

/** Let timers and I/O run once. */
export function tick(ms = 0): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/**
 * A redis-server (valkey-server with `KVID_TEST_SERVER=valkey-server`) with AOF on and extra
 * arguments (later ones win) on a free loopback port, stopped by its own PID.
 */
export async function spawnRedis(extra: string[] = [], dir?: string) {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  const own = dir === undefined;
  dir ??= await Deno.makeTempDir({ prefix: "kvid-states-" });
  const child = new Deno.Command(redisBinary(), {
    args: ["--port", String(port), "--bind", "127.0.0.1", "--dir", dir, "--save", ""].concat(
      ["--appendonly", "yes", "--protected-mode", "no", ...extra],
    ),
    stdin: "null",
    stdout: "null",
    stderr: "null",
  }).spawn();
  const url = `redis://127.0.0.1:${port}`;
  // The port accepts connections before the data is loaded: wait for the listener only.
  await waitUntil(
    async () => {
      try {
        (await Deno.connect({ hostname: "127.0.0.1", port })).close();
        return true;
      } catch {
        return false;
      }
    },
    `redis-server on port ${port}`,
    10_000,
  );
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    try {
      child.kill("SIGKILL");
    } catch { /* exited */ }
    await child.status;
  };
  return {
    url,
    port,
    dir,
    stop,
    async [Symbol.asyncDispose]() {
      await stop();
      if (own) await Deno.remove(dir, { recursive: true }).catch(() => {});
    },
  };
}
