/**
 * The ID service as a program: `deno run -A --unstable-kv jsr:@kvid/core/serve --port 8000`
 * (in this repository `deno task serve --host 127.0.0.1 --port 8000`). The handler of
 * `@kvid/core/server`, configured from the environment, behind a listener of its own that stays
 * up under attack (see {@linkcode listen}).
 *
 * ```sh
 * export TOKEN="$(openssl rand -hex 24)"   # keep it: clients send it
 * KVID_TOKENS="$TOKEN:*" KVID_KV_PATH=./ids.sqlite3 deno task serve --host 127.0.0.1 --port 8000 &
 * sleep 2   # until it says "listening on http://127.0.0.1:8000/"
 * curl -X POST -H "Authorization: Bearer $TOKEN" http://127.0.0.1:8000/v1/ids/order
 * ```
 *
 * | flag                   | variable                  | meaning                                                                               |
 * | ---------------------- | ------------------------- | ------------------------------------------------------------------------------------- |
 * | `--host H`             | `KVID_HOST`               | the address to listen on; default `0.0.0.0`, and `127.0.0.1` with `KVID_AUTH=none`     |
 * | `--port P`             | `KVID_PORT`               | the port; default 8000                                                                |
 * | `--open-network`       | `KVID_OPEN_NETWORK=1`     | allow `KVID_AUTH=none` on an address beyond loopback (refused otherwise)               |
 * | `--max-connections N`  | `KVID_MAX_CONNECTIONS`    | open connections at most; default the file-descriptor limit minus 64                  |
 * | `--headers-timeout MS` | `KVID_HEADERS_TIMEOUT_MS` | a request head must arrive within this; default 10,000                                |
 * | `--idle-timeout MS`    | `KVID_IDLE_TIMEOUT_MS`    | a kept-alive connection without a request is closed after this; default 30,000        |
 *
 * A flag wins over its variable. The other variables (`KVID_TOKENS`, `KVID_REDIS_URL`, ...)
 * are those of `optionsFromEnv` in `@kvid/core/server`. A configuration mistake prints one
 * line, `kvid service: <what is wrong>`, and exits with code 78 (`EX_CONFIG`); SIGTERM or
 * SIGINT stops it (answering what is in flight) with code 0.
 *
 * Limits (the listener's own, since `Deno.serve` has none of them and exits when file
 * descriptors run out; see {@linkcode listen} for the reproduction, denoland/deno#3515 for the
 * missing timeouts): a connection's first request head within 10 s of its opening, later
 * ones within 10 s of their first byte; 30 s idle between requests; a request body read
 * and a response written within 10 s each (a trickle buys no time); heads up to 32 KiB, bodies up to 64 KiB; at most
 * `maxConnections` open, the oldest one waiting for a request closed to make room for a new
 * one; an `accept` failing for want of file descriptors sheds a waiting connection and goes on.
 * Each is counted in `/metrics` (`kvid_http_connections_closed_total{reason}`,
 * `kvid_http_accept_errors_total`).
 *
 * `bench/attack.ts` floods both with idle connections and half-sent request heads: `deno serve`
 * exits when its file descriptors run out, this listener stays up and keeps serving. The price:
 * JavaScript parses each request head (`Deno.serve` parses in Rust); its figures are the service
 * rows of bench/RESULTS.md. Behind a proxy that has these limits (nginx, a cloud load balancer),
 * `deno serve -A --unstable-kv jsr:@kvid/core/server` is the faster choice. The whole service:
 * [docs/service.md](docs/service.md).
 *
 * @module
 */

import { createHandler, type IdService, optionsFromEnv } from "./mod.ts";
import type { EnvConfig } from "./env.ts";
import { exitOnSignals } from "./signals.ts";
import type {
  ConnectionStats,
  Listener,
  ListenerLimits,
  ListenerOptions,
} from "./listener_options.ts";
import { listen } from "./listener.ts";

export { type ConnectionStats, listen, type Listener, type ListenerLimits, type ListenerOptions };

/** Where and how {@linkcode serveFromEnv} listens, from flags and the environment. */
export interface ListenConfig {
  /** The address. */
  hostname: string;
  /** The port. */
  port: number;
  /** The listener's limits given (the others default). */
  limits: Pick<ListenerOptions, "maxConnections" | "headersTimeoutMs" | "idleTimeoutMs">;
}

const LOOPBACK = /^(127\.\d+\.\d+\.\d+|::1|\[::1\]|localhost)$/;

/**
 * Read `--host`, `--port`, `--open-network`, `--max-connections`, `--headers-timeout`,
 * `--idle-timeout` (as `--flag value` or `--flag=value`) and their variables. Throws a
 * TypeError naming the mistake, e.g. `KVID_AUTH=none` on a non-loopback address without
 * `--open-network`.
 *
 * @example
 * ```ts
 * import { listenConfig } from "@kvid/core/serve";
 * import assert from "node:assert/strict";
 *
 * const env = new Map([["KVID_PORT", "9000"], ["KVID_AUTH", "none"]]);
 * const c = listenConfig(["--port=18001"], (n) => env.get(n));
 * assert.ok(c.port === 18001 && c.hostname === "127.0.0.1"); // the flag wins; no auth: loopback
 * assert.throws(() => listenConfig(["--host", "0.0.0.0"], (n) => env.get(n)), TypeError);
 * ```
 *
 * @param args The program's arguments.
 * @param get Reads one environment variable.
 * @returns Where to listen and the limits.
 */
export function listenConfig(
  args: readonly string[],
  get: (name: string) => string | undefined,
): ListenConfig {
  const flags = new Map<string, string>();
  const known = new Set([
    "host",
    "hostname",
    "port",
    "open-network",
    "max-connections",
    "headers-timeout",
    "idle-timeout",
  ]);
  for (let i = 0; i < args.length; i++) {
    const m = /^--([a-z-]+)(?:=(.*))?$/.exec(args[i]);
    if (m === null || !known.has(m[1])) {
      throw new TypeError(
        `unknown argument ${JSON.stringify(args[i])} (flags: ${
          [...known].map((k) => `--${k}`).join(", ")
        })`,
      );
    }
    const name = m[1] === "hostname" ? "host" : m[1];
    if (name === "open-network") {
      flags.set(name, m[2] ?? "1");
      continue;
    }
    const value = m[2] ?? args[++i];
    if (value === undefined) throw new TypeError(`--${m[1]} needs a value`);
    flags.set(name, value);
  }
  const pick = (flag: string, variable: string) => flags.get(flag) ?? (get(variable) || undefined);
  const int = (flag: string, variable: string, min: number, max: number) => {
    const v = pick(flag, variable);
    if (v === undefined) return undefined;
    if (!/^[0-9]{1,9}$/.test(v) || Number(v) < min || Number(v) > max) {
      throw new TypeError(
        `--${flag} (${variable}) must be an integer from ${min} to ${max}, got ${v}`,
      );
    }
    return Number(v);
  };
  const open = get("KVID_AUTH") === "none";
  const hostname = pick("host", "KVID_HOST") ?? (open ? "127.0.0.1" : "0.0.0.0");
  const openNetwork = /^(1|true|yes)$/i.test(pick("open-network", "KVID_OPEN_NETWORK") ?? "");
  if (open && !LOOPBACK.test(hostname) && !openNetwork) {
    throw new TypeError(
      `KVID_AUTH=none listens on loopback only, not ${hostname}: anyone who reaches it gets IDs. ` +
        "Set tokens (KVID_TOKENS), or pass --open-network (KVID_OPEN_NETWORK=1) on purpose",
    );
  }
  return {
    hostname: hostname.replace(/^\[(.*)\]$/, "$1"),
    port: int("port", "KVID_PORT", 0, 65_535) ?? 8000,
    limits: {
      maxConnections: int("max-connections", "KVID_MAX_CONNECTIONS", 1, 1_000_000),
      headersTimeoutMs: int("headers-timeout", "KVID_HEADERS_TIMEOUT_MS", 1, 3_600_000),
      idleTimeoutMs: int("idle-timeout", "KVID_IDLE_TIMEOUT_MS", 1, 3_600_000),
    },
  };
}

/** The service started by {@linkcode serveFromEnv}. */
export interface RunningService {
  /** The listener. */
  readonly listener: Listener;
  /** The handler. */
  readonly service: IdService;
  /** Stop listening (answering what is in flight), close the generators, then the store. */
  stop(): Promise<void>;
}

/**
 * Start the service from flags and the environment: the handler of `optionsFromEnv` behind
 * {@linkcode listen}. Throws a TypeError or RangeError on a configuration mistake.
 *
 * @example Deno KV in memory, on a free loopback port
 * ```ts
 * import { serveFromEnv } from "@kvid/core/serve";
 * import assert from "node:assert/strict";
 *
 * const env = new Map([["KVID_KV_PATH", ":memory:"], ["KVID_AUTH", "none"]]);
 * const s = serveFromEnv(["--port", "0"], (n) => env.get(n), () => {});
 * const url = `http://127.0.0.1:${s.listener.addr.port}/v1/ids/order?count=2`;
 * const res = await fetch(url, { method: "POST" }); // without tokens: POST only
 * assert.ok((await res.text()) === "1\n2\n");
 * await s.stop();
 * ```
 *
 * @param args The program's arguments (flags above).
 * @param get Reads one environment variable; default `Deno.env.get`.
 * @param log Where to log; default `console.error`.
 * @returns The running service.
 */
export function serveFromEnv(
  args: readonly string[],
  get: (name: string) => string | undefined = (name) => Deno.env.get(name),
  log: (line: string) => void = (line) => console.error(line),
): RunningService {
  const where = listenConfig(args, get);
  const config: EnvConfig = optionsFromEnv(get);
  // The handler's /metrics shows the listener's counters; the listener is made after it.
  const late: { listener?: Listener } = {};
  let service: IdService;
  try {
    // The address it listens on, named so (not a wildcard nor loopback), is a host of its own.
    const own = /^(0\.0\.0\.0|::|\[::\])$/.test(where.hostname) || where.hostname.includes(":")
      ? []
      : [where.hostname.toLowerCase()];
    service = createHandler({
      ...config.options,
      allowedHosts: [...(config.options.allowedHosts ?? []), ...own],
      log,
      metrics: () => late.listener?.metrics() ?? [],
    });
  } catch (err) {
    void config.close();
    throw err;
  }
  const l = late.listener = listen({
    hostname: where.hostname,
    port: where.port,
    handler: service.fetch,
    ...Object.fromEntries(Object.entries(where.limits).filter(([, v]) => v !== undefined)),
    log,
    onListen: ({ hostname, port }) => {
      const shown = hostname.includes(":") ? `[${hostname}]` : hostname;
      log(`kvid service: listening on http://${shown}:${port}/`);
    },
  });
  // The store's driver loaded and its connection opened now, not at the first request: on an
  // empty cache node-redis is fetched while the service starts (/readyz says "starting").
  config.options.ready?.().catch(() => {});
  let stopped: Promise<void> | undefined;
  return {
    listener: l,
    service,
    stop: () =>
      stopped ??= (async () => {
        await l.shutdown();
        await service.close();
        await config.close();
      })(),
  };
}

if (import.meta.main) {
  let running: RunningService;
  try {
    running = serveFromEnv(Deno.args);
  } catch (err) {
    // One line, no stack: the mistake and the fix are in the message.
    console.error(`kvid service: ${
      (err instanceof Error ? err.message : String(err))
        .replace(/^kvid service: /, "")
    }`);
    Deno.exit(78);
  }
  exitOnSignals(() => running.stop());
}
