/**
 * Shared setup of the benches: the live server (`KVID_BENCH_URL`, else a throwaway server from
 * `tests/support/redis_server.ts`: the one `KVID_TEST_SERVER` names, `redis-server`, `valkey-server` or
 * `kvrocks`, else `kvrocks` when on PATH, else `redis-server`), a node-redis client,
 * `INFO commandstats`, percentiles, and the metrics file `bench/report.ts` collects.
 *
 * Deno.bench has no per-file setup hook, so a bench file awaits {@linkcode benchServer} at top
 * level; a server started here is stopped when the file's worker unloads.
 *
 * @module
 */

export { lines } from "../tests/support/lines.ts";
import { createClient } from "redis";
import { fromNodeRedis, type RedisClient } from "../mod.ts";
import { command, startServer } from "../tests/support/redis_server.ts";

/** The server the benches run against. */
export interface BenchServer {
  /** `redis://host:port`, with the password if any. */
  url: string;
  /** Host of the server. */
  host: string;
  /** Port of the server. */
  port: number;
  /** What `INFO server` says it is. */
  kind: "redis" | "valkey" | "kvrocks";
  /** Its version. */
  version: string;
  /** True when taken from `KVID_BENCH_URL` rather than started here. */
  external: boolean;
  /** E.g. `redis 7.0.15 (started on 127.0.0.1:40123)`, printed once per bench file. */
  label: string;
}

/** The hash every bench counter lives in (fields are per suite and per run). */
export const BENCH_KEY = "kvid-bench";

/** A suffix that keeps this run's counters apart from earlier runs on an external server. */
export const RUN_ID: string = Date.now().toString(36);

/** A counter name unique to this run: `<suite>:<variant>:<run>`. */
export function field(suite: string, variant: string): string {
  return `${suite}:${variant}:${RUN_ID}`;
}

let serverPromise: Promise<BenchServer> | undefined;

/** Start (or find) the bench server once per bench file and print what it is. */
export function benchServer(): Promise<BenchServer> {
  serverPromise ??= start();
  return serverPromise;
}

async function start(): Promise<BenchServer> {
  const server = await startServer({ urlEnv: "KVID_BENCH_URL" });
  const external = server.kind === "external";
  if (!external) {
    // Unload handlers cannot await: stop() sends SIGTERM synchronously, the rest is dropped,
    // so the data directory is removed here.
    addEventListener("unload", () => {
      void server.stop();
      try {
        if (server.dataDir) Deno.removeSync(server.dataDir, { recursive: true });
      } catch { /* already gone */ }
    });
  }
  const kind = await serverKind(server.url);
  const label = serverLabel(kind, server.version, server.host, server.port, external);
  log(`server: ${label}`);
  return {
    url: server.url,
    host: server.host,
    port: server.port,
    kind,
    version: server.version,
    external,
    label,
  };
}

/** What `INFO server` says the server at `url` is. */
export async function serverKind(url: string): Promise<"redis" | "valkey" | "kvrocks"> {
  const info = String(await command(url, "INFO", "server"));
  return /^kvrocks_version:/m.test(info)
    ? "kvrocks"
    : /^valkey_version:/m.test(info)
    ? "valkey"
    : "redis";
}

/** E.g. `redis 7.0.15 (started on 127.0.0.1:40123)`. */
export function serverLabel(
  kind: string,
  version: string,
  host: string,
  port: number,
  external: boolean,
): string {
  const where = `${host}:${port}`;
  return `${kind} ${version} ${
    external ? `at ${where} ($KVID_BENCH_URL)` : `(started on ${where})`
  }`;
}

/** A connected node-redis client, raw and through the adapter. */
export interface BenchClient {
  /** The node-redis client, for the per-ID peers (INCR, HINCRBY, EVALSHA). */
  raw: ReturnType<typeof createClient>;
  /** The same connection through `fromNodeRedis`, for KvId. */
  redis: RedisClient;
}

/** Connect a node-redis client to `url`; it is destroyed when the bench file unloads. */
export async function benchClient(url: string): Promise<BenchClient> {
  const raw = createClient({ url });
  raw.on("error", () => {}); // the proxy benches cut connections on purpose at the end
  await raw.connect();
  addEventListener("unload", () => raw.destroy());
  return { raw, redis: fromNodeRedis(raw) };
}

/** Wraps a client to count the round trips a generator makes (reservations). */
export class CountingClient implements RedisClient {
  /** Commands sent through this wrapper. */
  sent = 0;
  readonly #inner: RedisClient;

  /**
   * Wrap a client.
   *
   * @param inner The client to forward to.
   */
  constructor(inner: RedisClient) {
    this.#inner = inner;
  }
  /** Counted `HINCRBY`. */
  hincrby(key: string, field: string, increment: number): Promise<unknown> {
    this.sent++;
    return this.#inner.hincrby(key, field, increment);
  }
  /** Counted `EVAL`. */
  eval(script: string, keys: string[], args: string[]): Promise<unknown> {
    this.sent++;
    return this.#inner.eval(script, keys, args);
  }
  /** Counted `EVALSHA`. */
  evalsha(sha1: string, keys: string[], args: string[]): Promise<unknown> {
    this.sent++;
    return this.#inner.evalsha(sha1, keys, args);
  }
}

// Connection and introspection commands, not the work being measured.
const ADMIN = /^(info|hello|ping|select|auth|client|command|config|script|quit|reset)(\||$)/;

/** Calls per command from `INFO commandstats` (commands run inside scripts included). */
export async function commandCalls(url: string): Promise<Map<string, number>> {
  const text = String(await command(url, "INFO", "commandstats"));
  const calls = new Map<string, number>();
  for (const m of text.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) calls.set(m[1], Number(m[2]));
  return calls;
}

/** Commands executed between two {@linkcode commandCalls} snapshots, admin commands excluded. */
export function commandDelta(before: Map<string, number>, after: Map<string, number>): number {
  let n = 0;
  for (const [name, calls] of after) {
    if (!ADMIN.test(name)) n += calls - (before.get(name) ?? 0);
  }
  return n;
}

/** The value at quantile `q` (0..1) of an ascending-sorted array (nearest rank). */
export function quantile(sorted: ArrayLike<number>, q: number): number {
  if (sorted.length === 0) return NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[i];
}

/** One measured figure of a suite that `deno bench` does not report itself. */
export interface Metric {
  /** The suite, e.g. `"boundaries"`. */
  suite: string;
  /** What was measured, e.g. `"prefetch on"`. */
  name: string;
  /** The figures, by column name. */
  values: Record<string, number | string | boolean>;
}

/** Where metrics go when `bench/report.ts` runs the benches (a JSON line each). */
const METRICS_FILE = Deno.env.get("KVID_BENCH_METRICS");

/** Record a metric for the report (when running under it) and print it. */
export function metric(suite: string, name: string, values: Metric["values"]): void {
  if (METRICS_FILE) {
    const line = JSON.stringify({ suite, name, values } satisfies Metric) + "\n";
    Deno.writeTextFileSync(METRICS_FILE, line, { append: true });
  }
  const parts = Object.entries(values).map(([k, v]) => `${k}=${format(v)}`);
  log(`  [${suite}] ${name}: ${parts.join(", ")}`);
}

function format(v: number | string | boolean): string {
  if (typeof v !== "number") return String(v);
  if (Number.isInteger(v)) return v.toLocaleString("en-US");
  return v.toLocaleString("en-US", { maximumSignificantDigits: 4 });
}

/** Print a line for humans; on stderr under the report, whose stdout is `deno bench --json`. */
export function log(line: string): void {
  if (METRICS_FILE) console.error(line);
  else console.log(line);
}

/** The group of {@linkcode warmUpBench}, left out of the report. */
export const WARM_UP_GROUP = "warm-up (not a result)";

/**
 * Register a first bench that only warms up. The runtime's first major GC (deno bench's own
 * sample buffer is large) otherwise lands in whichever allocating bench of the file runs first
 * and inflates its average several times over.
 */
export function warmUpBench(fn: () => Promise<void>, n = 40): void {
  Deno.bench("warm-up", { group: WARM_UP_GROUP, n, warmup: 5 }, fn);
}

/** Resolve after `ms` milliseconds (pacing a consumer, not synchronisation). */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
