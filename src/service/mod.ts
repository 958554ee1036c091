/**
 * The ID service: IDs over HTTP for any language, on the same engine as `KvId` and `DailyId`.
 *
 * Run it as a program (configured from the environment, see {@linkcode optionsFromEnv}; host,
 * port and connection limits from flags or `KVID_HOST`/`KVID_PORT`, see `@kvid/core/serve`):
 *
 * ```sh
 * export TOKEN="$(openssl rand -hex 24)"   # the clients' token: keep it
 * KVID_TOKENS="$TOKEN:*" KVID_KV_PATH=./ids.sqlite3 \
 *   deno run -A --unstable-kv jsr:@kvid/core/serve --host 127.0.0.1 --port 8000 &
 * sleep 2   # until it says "listening on http://127.0.0.1:8000/"
 * curl -X POST -H "Authorization: Bearer $TOKEN" http://127.0.0.1:8000/v1/ids/order
 * ```
 *
 * (`deno task serve --host 127.0.0.1 --port 8000` in this repository), or embed it in an app
 * with {@linkcode createHandler}. `deno serve -A --unstable-kv jsr:@kvid/core/server` serves the
 * same handler through `Deno.serve`, which has no header or idle timeout and exits when file
 * descriptors run out (see `@kvid/core/serve`): fine behind a proxy that has them (and on Deno
 * Deploy), not facing the network.
 *
 * (This file is the entry point: its documentation, {@linkcode createHandler} composing the
 * parts, and the `deno serve` default export. The parts are apart, in `src/service/`: the
 * options and their defaults, their checks, auth, the live generators, readiness, each endpoint,
 * the routing, the metrics, the status page, the OpenAPI document, the configuration from the
 * environment, and the listener of `@kvid/core/serve`. It runs on any store that passes the
 * shared Store spec; only the configuration from the environment names stores.)
 *
 * Endpoints: `POST|GET /v1/ids/{name}` and `/v1/daily/{name}` (`?count=1..10000`; text, or
 * JSON with `Accept: application/json`), `GET /healthz`, `GET /readyz`, `GET /metrics`
 * (Prometheus), `GET /` (status page, signed in through a form that sets a session cookie).
 *
 * ## Service
 *
 * IDs over HTTP for any language, on the same engine: `jsr:@kvid/core/server` is a ready service for
 * `deno serve`, with token auth, Prometheus metrics and a live status page.
 *
 * ```sh
 * export TOKEN="$(openssl rand -hex 24)"
 * # Deno KV (a local file, no Redis needed):
 * KVID_TOKENS="$TOKEN:*" KVID_KV_PATH=./ids.sqlite3 deno run -A --unstable-kv jsr:@kvid/core/serve
 * # Redis or Kvrocks, two tokens:
 * export ORDERS_TOKEN="$(openssl rand -hex 24)"
 * KVID_TOKENS="$ORDERS_TOKEN:order|invoice,$TOKEN:*" KVID_REDIS_URL=redis://127.0.0.1:6379 \
 *   deno run -A --unstable-kv jsr:@kvid/core/serve --port 8000
 * deno task serve --port 8000        # in this repository (same flags and variables)
 * ```
 *
 * | variable              | meaning                                                                                                    |
 * | --------------------- | ---------------------------------------------------------------------------------------------------------- |
 * | `KVID_TOKENS`         | `<token>:<names>,...`, names `*` or `a\|b\|c` (`admin=*`, `admin=a\|b`: administrative, see docs/security.md); tokens: 16+ printable ASCII characters. Required, unless... |
 * | `KVID_AUTH=none`      | ...this is set: the service runs open, and says so loudly in its log                                       |
 * | `KVID_STORE_URL`      | the store, by scheme: `redis://[user:password@]host:port[/db]`, `rediss://`, `postgres://`, `mysql://`     |
 * | `KVID_REDIS_URL`      | the same for a Redis URL (before `KVID_STORE_URL`); neither set: Deno KV                                  |
 * | `KVID_KV_PATH`        | the Deno KV database; default Deno's own (on Deno Deploy: the project's KV)                                |
 * | `KVID_TIME_ZONE`      | the zone of `/v1/daily` serials; default `UTC`                                                             |
 * | `KVID_MAX_GENERATORS` | live generators at most (a new name past it answers 429); default 1,000                                    |
 * | `KVID_TIMEOUT_MS`     | how long a request waits for a reservation before a 503; default 5,000                                     |
 * | `KVID_NAMES`          | per-name generator options as JSON: `{"order": {"minStep": 1000}, "ticket": {"digits": 8}, "*": {"maxStep": 100000}}` (`minStep`, `maxStep`, `initialStep`, `segmentDuration`; `digits`, `timeZone` for `/v1/daily`); checked at start |
 * | `KVID_BASE_PATH`      | a prefix to serve under, e.g. `/ids` (every path below it; 404 outside); default none                     |
 * | `KVID_HOST`, `KVID_PORT` | where `@kvid/core/serve` listens (or `--host`, `--port`); default `0.0.0.0:8000`, `127.0.0.1` with `KVID_AUTH=none` |
 * | `KVID_FORMATS`        | public forms by name (`@kvid/core/codec`): `order=decimal:12:encrypted,share=base62:7:encrypted`           |
 * | `KVID_ID_KEY`         | the key(s) of the `encrypted` forms, hex (`<hex>`, or `2:<hex>,1:<hex>`); never logged                     |
 *
 * | endpoint                                   | answer                                                                                       |
 * | ------------------------------------------ | -------------------------------------------------------------------------------------------- |
 * | `POST` (or `GET`) `/v1/ids/{name}?count=N` | N (1..10,000, default 1) increasing IDs, one a line, `text/plain`; `Cache-Control: no-store` |
 * | the same with `Accept: application/json`   | `{"name": "order", "ids": ["1", "2"]}`: IDs as strings, exact to 2^63-1                      |
 * | a name with a form (`KVID_FORMATS`)        | `<id>\t<public form>` a line; JSON: `"encoded": [...]` beside `"ids"`                        |
 * | `POST` (or `GET`) `/v1/daily/{name}`       | `DailyId` serials, `yyyymmdd` + 6-digit seq (`20261201000001`), same formats                 |
 * | `GET /healthz`                             | `200 ok` (liveness, no token)                                                                |
 * | `GET /readyz`                              | 200 when the store answers (PING, or a KV read, within 1 s) and, under `KVID_DURABILITY=strict` (the default), says it cannot lose reservations; else 503 saying whether the store does not answer, refuses the configuration, or can lose reservations (no token) |
 * | `GET /metrics`                             | Prometheus text, a token of any scope (which sees its own names only)                        |
 * | `POST /v1/segments/{name}`                 | `{"count": 1000, "floor": "0", "raiseTo": "0"}`: reserves a whole range of the counter for a client that serves it itself (`HttpStore` of `@kvid/core/client`, TinyID's client model): `{"name", "ranges": [{"first": "1", "last": "1000"}], "raised": false, "receipt"}`, exact decimal strings; `count` at most `maxSegment` (1,000,000); a raise (`floor`, `raiseTo`) past the counter plus `maxSegment` only with an administrative token (else 403); 64 at once at most (503 `unavailable` past it) |
 * | `POST /v1/segments/{name}/release`         | `{"first", "last", "receipts"}`: give back the unused top of this token's segments, shown by their receipts, if nobody reserved since: `{"released": true}`; else 409 `release_refused` saying why |
 * | `GET`/`PUT /v1/segments/{name}/step`       | the step remembered next to the counter: `{"step": 4096}` (or `null`); above `maxSegment` only with an administrative token |
 * | `GET /openapi.json`                        | the OpenAPI 3.1 document of all of these (no token)                                          |
 * | `GET /`                                    | the status page (below)                                                                      |
 *
 * Errors are `{"error": {"code", "message"}}` with a status: 400 `bad_name` (the rules of `KvId`:
 * non-empty, well-formed Unicode, at most 4,096 UTF-8 bytes, one path segment, percent-encoded UTF-8,
 * not `.` or `..`; Deno KV keys stop at 2 KiB) or `bad_count`; 401 `unauthorized` with
 * `WWW-Authenticate: Bearer`; 403 `forbidden` (a name outside the token's names); 404; 405 with
 * `Allow`; 414 `request_too_large` (a URL over 16 KiB) and 413 (a body over 64 KiB; ID requests
 * never read their body); 429 `too_many_generators` (a generator unused for a minute is closed to
 * make room first; its unused IDs are skipped); 503 `unavailable` with `Retry-After` when no ID is
 * buffered and the store fails or hangs for the timeout (and `shutting_down` while stopping); 500
 * `store_config` when the store refuses the service's configuration (a wrong password, a user
 * without the permissions, a command renamed away: waiting does not fix it); 409 `overflow` (a
 * counter at 2^63-1) or `domain` (past the largest ID of the name's public form); 500 `internal`
 * otherwise, logged, never with a stack. Tokens are compared in constant time and never logged or echoed. On
 * SIGTERM (or SIGINT) the service turns new requests away with 503, answers those in flight, closes
 * its generators and its client, and exits 0.
 *
 * ```sh
 * curl -X POST -H "Authorization: Bearer $TOKEN" http://127.0.0.1:8000/v1/ids/order
 * curl -X POST -H "Authorization: Bearer $TOKEN" -H "Accept: application/json" \
 *   "http://127.0.0.1:8000/v1/ids/order?count=3"
 * ```
 *
 * ```python
 * # Python, standard library only
 * import json, urllib.request
 *
 * req = urllib.request.Request("http://127.0.0.1:8000/v1/ids/order?count=100", method="POST",
 *     headers={"Authorization": f"Bearer {TOKEN}", "Accept": "application/json"})
 * ids = [int(i) for i in json.load(urllib.request.urlopen(req))["ids"]]
 * ```
 *
 * **Embedded** in an app, with options instead of the environment (the client stays yours):
 *
 * ```ts ignore
 * import { createClient } from "npm:redis@5";
 * import { fromNodeRedis } from "@kvid/core";
 * import { createHandler } from "@kvid/core/server";
 *
 * const client = await createClient({ url: "redis://127.0.0.1:6379" }).connect();
 * const ids = createHandler({ redis: fromNodeRedis(client), tokens: Deno.env.get("KVID_TOKENS") });
 * const server = Deno.serve((req) =>
 *   new URL(req.url).pathname.startsWith("/v1/") ? ids.fetch(req) : app(req)
 * );
 * // on shutdown: await server.shutdown(); await ids.close(); client.destroy();
 * ```
 *
 * Under a prefix of an existing app (Hono, Oak, a plain `Deno.serve`), give `basePath`: with
 * `createHandler({ ..., basePath: "/ids" })` and `app.all("/ids/*", (c) => ids.fetch(c.req.raw))`
 * the IDs are at `/ids/v1/ids/{name}`, the status page at `/ids/` (its cookie scoped to `/ids`).
 *
 * **Deno Deploy**: an entry file `main.ts` with `export { default } from "jsr:@kvid/core/server";`,
 * `KVID_TOKENS` set in the project's environment variables, and no `KVID_REDIS_URL`: the IDs come from
 * the project's KV (set `KVID_REDIS_URL` to a `rediss://` URL to use Redis instead). Each isolate
 * reserves its own segments, so IDs stay unique and trend upwards, not strictly increasing across
 * isolates. (Not tried on Deploy from this repository's CI.)
 *
 * **Metrics** (`kind` and `name` labels per generator, only the names the token may see):
 * `kvid_ids_issued_total`, `kvid_reservations_total`, `kvid_reservation_failures_total` (failed,
 * or unanswered within the timeout), `kvid_request_failures_total` (requests answered 5xx for want
 * of the store: alert on this one), `kvid_stalls_total`, `kvid_rollbacks_total`, `kvid_step`,
 * `kvid_remaining`, the histogram `kvid_reservation_duration_seconds`; and `kvid_store_up`,
 * `kvid_store_config_error`, `kvid_generators`, `kvid_http_requests_in_flight`,
 * `kvid_http_responses_total{code}`, `kvid_build_info{version,runtime,runtime_version}`,
 * `process_start_time_seconds`, `process_cpu_seconds_total`, `process_resident_memory_bytes`,
 * `process_heap_bytes`, `process_open_fds`, `process_max_fds` (where the runtime offers them);
 * behind `@kvid/core/serve` also `kvid_http_connections`, `kvid_http_connections_max`,
 * `kvid_http_connections_accepted_total`, `kvid_http_connections_closed_total{reason}` and
 * `kvid_http_accept_errors_total`.
 *
 * **Status page**: `/` asks for a token in a form (a POST, so it never sits in a URL or a log) and
 * then keeps only a random session id in an `HttpOnly; SameSite=Strict` cookie (`Secure` over https,
 * 12 hours); forms posted from another site are refused. It lists the live generators the token may
 * see (step, remaining, IDs/s, issued, last reservation and its latency, failures, stalls, rollbacks,
 * last error) and charts IDs/s over the last 5 minutes in inline SVG; plain HTML, no script, no
 * external asset, under a strict `Content-Security-Policy`; it refreshes every 5 s.
 *
 * ![The status page: IDs per second over the last 5 minutes and the live generators](docs/service-status.png)
 *
 * **Throughput** (`deno bench -A bench/service_bench.ts`, 2026-12-01 03:46 UTC, Deno 2.9.6, Redis 7.0,
 * 2 shared cores with a 1-minute load average of 3.3 to 5.8 from other work during the run; the load
 * generator, autocannon, runs on the same 2 cores; 50 connections, 3 interleaved rounds of 5 s,
 * median):
 *
 * | target                                     |  req/s | each round           | p50 / p99 ms | Redis commands per 1,000 requests |
 * | ------------------------------------------ | -----: | -------------------- | -----------: | --------------------------------: |
 * | bare `Deno.serve` hello-world              | 62,656 | 82,781 57,824 62,656 |        0 / 3 |                                 0 |
 * | ID service, `count=1` (token auth)         | 64,387 | 87,494 61,744 64,387 |        0 / 2 |                                 0 |
 * | ID service, `count=100` (3.6M IDs/s)       | 35,814 | 30,221 35,814 42,346 |        1 / 3 |                               0.5 |
 * | `INCR` per request (node-redis, hand-made) | 47,811 | 42,410 47,811 58,938 |        0 / 4 |                             1,000 |
 *
 * The ID service runs at the hello-world's rate: on this machine the load generator sharing 2 busy
 * cores is the ceiling, and rounds vary by a third with the other work. The ID part's own cost,
 * in process without HTTP (`deno bench -A bench/service_handler_bench.ts`: default options and a
 * token, against a hello-world handler that builds the same `Request` and awaits a
 * `new Response("hello\n")`, subjects interleaved request by request in one process, 20,000
 * requests each; 2026-12-01 15:29 UTC, Deno 2.9.6, 2 shared cores at a 1-minute load of 1.1,
 * three runs): `count=1` 1.31x to 1.42x at the 10th, 25th and 50th percentiles on Deno KV and on
 * Redis, `count=100` 1.68x to 1.74x, within issue 27's goals (1.5x, 2x; the code before
 * measured 1.61x to 1.66x and 2.11x to 2.16x, and 1.57x to 1.66x and 2.12x to 2.22x interleaved
 * with this code in one process). IDs the generator holds are taken as a run and answered at once:
 * no promise of the handler's own, no array of IDs. What is left over the hello-world: the token
 * check (the `Authorization` header and the constant-time compare), the URL read (~0.3 µs), the
 * `Cache-Control` header (~0.4 µs: a header given to a `Response` costs that in Deno 2.9, and an
 * init with headers ~3 µs, so text answers keep the standard `text/plain;charset=UTF-8` of a
 * string body), the `Content-Length` and `Accept` reads, the clock, and for `count=100` the text
 * of 100 IDs (~1.5 µs). Over HTTP (`KVID_SERVICE_BENCH_ONLY=count100`, 8 interleaved rounds of
 * 3 s per run, 15:30-15:36 UTC, load 1 to 2.8), `count=100` against a `Deno.serve` service doing
 * one `INCRBY` of 100 per request: the median of the rounds' ratios 1.10, 1.55 and 1.19 in three
 * runs (single rounds 0.76 to 1.66), 1.28 and 1.23 in two runs with autocannon pinned to one core
 * and the servers and Redis to the other (rounds 0.92 to 1.60); per request the service's process
 * used 0.79x to 0.85x the CPU of the INCRBY service and Redis together, in all five (the code
 * before, served beside in the same runs: 0.99x to 1.23x the INCRBY service by the req/s medians,
 * 1.03x to 1.17x this code's CPU per request: most of the lead is the runs'). Autocannon
 * costs about as much CPU per request as either server (27 to 34 µs), so on 2 shared cores it
 * takes half the machine and single rounds move with the other work. `INCR` per request sends
 * every request to Redis (node-redis pipelines the 50 concurrent ones, which is why it keeps up at
 * all here) and is bounded by the Redis server and a round trip per request; the service sends one
 * command per segment.
 * For scale, Leaf publishes about 50,000 QPS on a 4-core machine. These figures are of
 * `deno serve` (`Deno.serve`); behind its own listener (`deno task serve`, which survives the
 * attacks `Deno.serve` does not) `count=1` measured 0.43x of `Deno.serve` in a later run of the
 * same bench at load 11 (5,362 against 12,425 req/s; see `@kvid/core/serve`).
 *
 * @module
 */

import type { RedisClient, RedisSource } from "../contract/redis_client.ts";
import type { IdRange, Reservation, ReserveOptions, Store } from "../contract/store.ts";
import { holderOf, scopeOf, Sessions } from "./auth.ts";
import { serviceConfig } from "./config.ts";
// env.ts also installs the resolver of the `redis` option (the one file naming stores).
import { type EnvConfig, optionsFromEnv } from "./env.ts";
import { Generators, type NameOptions } from "./generators.ts";
import { idsEndpoint, MAX_COUNT } from "./ids_endpoint.ts";
import type { HttpCounters } from "./metrics.ts";
import type { ServiceOptions } from "./options.ts";
import { pageRoutes } from "./page_routes.ts";
import { probes } from "./probes.ts";
import { readiness } from "./readiness.ts";
import { errorResponse } from "./respond.ts";
import { router } from "./router.ts";
import { SegmentRoutes } from "./segments.ts";
import { exitOnSignals } from "./signals.ts";

// Re-exported so this entry point documents itself (the same types as from "@kvid/core").
export type { IdRange, RedisClient, RedisSource, Reservation, ReserveOptions, Store };
export { type EnvConfig, MAX_COUNT, type NameOptions, optionsFromEnv, type ServiceOptions };
// The answers as types, the same as from "@kvid/core/client" (which a client imports alone).
export type {
  IdsResponse,
  ReleaseResponse,
  SegmentRange,
  SegmentRequest,
  SegmentResponse,
  ServiceError,
  ServiceErrorCode,
  StepBody,
} from "../client/types.ts";

/**
 * The service made by {@linkcode createHandler}: a `fetch` handler and a graceful `close`.
 *
 * @example Serve it, then stop it
 * ```ts
 * import { createHandler, type IdService } from "@kvid/core/server";
 * import { DenoKvStore } from "@kvid/core/deno-kv";
 * import assert from "node:assert/strict";
 *
 * using store = new DenoKvStore(":memory:");
 * const service: IdService = createHandler({ store, auth: "none", log: () => {} });
 * const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen() {} }, service.fetch);
 * const res = await fetch(`http://127.0.0.1:${server.addr.port}/v1/ids/order?count=3`);
 * assert.ok((await res.text()) === "1\n2\n3\n");
 * await server.shutdown(); // stop accepting, answer in-flight requests
 * await service.close(); // then close the generators
 * ```
 */
export interface IdService extends AsyncDisposable {
  /** Answer one request. */
  fetch(req: Request): Promise<Response>;
  /**
   * Stop: later requests answer 503; waits for requests in flight, then closes the generators.
   * A client or store given in the options stays the caller's to close.
   */
  close(): Promise<void>;
}

/**
 * Make the ID service as a `fetch` handler, for `Deno.serve` or any framework that speaks
 * `Request`/`Response`. Throws a TypeError on bad options, and without `tokens` unless
 * `auth: "none"`.
 *
 * @example Embedded under an existing app's routes
 * ```ts
 * import { createHandler } from "@kvid/core/server";
 * import { DenoKvStore } from "@kvid/core/deno-kv";
 * import assert from "node:assert/strict";
 *
 * using store = new DenoKvStore(":memory:");
 * await using ids = createHandler({ store, tokens: "app-secret-0123456789:*", log: () => {} });
 * const app = (req: Request) =>
 *   new URL(req.url).pathname.startsWith("/v1/") ? ids.fetch(req) : new Response("app");
 * const res = await app(new Request("http://localhost/v1/ids/order?count=2", {
 *   method: "POST",
 *   headers: { authorization: "Bearer app-secret-0123456789", accept: "application/json" },
 * }));
 * assert.deepEqual(await res.json(), { name: "order", ids: ["1", "2"] });
 * ```
 *
 * @param options See {@linkcode ServiceOptions}.
 * @returns The service.
 */
export function createHandler(options: ServiceOptions): IdService {
  const config = serviceConfig(options);
  const { store, timeout, durability, basePath, log } = config;
  const generators = new Generators({
    store,
    durability,
    max: config.maxGenerators,
    idleMs: config.idleMs,
    timeout,
    timeZone: config.timeZone,
    names: config.names,
  });
  const scope = scopeOf(config.auth);
  const segments = new SegmentRoutes({
    store,
    timeout,
    maxSegment: config.maxSegment,
    log,
    holderOf: holderOf(config.auth),
  });
  const ready = readiness({ store, durability, probe: config.ready, generators });
  const http: HttpCounters = { responses: new Map(), inFlight: 0 };
  const route = router({
    basePath,
    ids: idsEndpoint({ generators, scopeOf: scope, codecs: config.codecs, log }),
    segments: (req, rest) => segments.route(req, rest),
    probes: probes({ ready, scopeOf: scope, generators, http, segments, metrics: config.metrics }),
    page: pageRoutes({
      auth: config.auth,
      sessions: new Sessions(basePath || "/"),
      generators,
      ready,
      storeLabel: config.storeLabel,
      basePath,
    }),
  });
  let closing: Promise<void> | undefined;
  let drained: (() => void) | undefined;

  // Not async: a promise only where the answer waits (the IDs), one layer fewer per request.
  function fetch(req: Request): Promise<Response> {
    if (closing !== undefined) {
      return Promise.resolve(
        errorResponse(503, "shutting_down", "the service is shutting down", {
          "retry-after": "1",
          connection: "close",
        }),
      );
    }
    http.inFlight++;
    let res: Response | Promise<Response>;
    try {
      res = route(req);
    } catch (err) {
      res = unexpected(err);
    }
    return res instanceof Promise
      ? res.then(answered, (err) => answered(unexpected(err)))
      : Promise.resolve(answered(res));
  }

  function answered(res: Response): Response {
    if (--http.inFlight === 0) drained?.();
    http.responses.set(res.status, (http.responses.get(res.status) ?? 0) + 1);
    return res;
  }

  function unexpected(err: unknown): Response {
    log(
      `kvid service: unexpected ${err instanceof Error ? err.name : "error"} answering a request`,
    );
    return errorResponse(500, "internal", "internal error; see the service log");
  }

  function close(): Promise<void> {
    closing ??= (async () => {
      if (http.inFlight > 0) await new Promise<void>((resolve) => drained = resolve);
      await generators.close();
    })();
    return closing;
  }

  log(
    `kvid service: store ${config.storeLabel}, ${
      config.auth === undefined ? "NO AUTH" : "token auth"
    }, daily serials in ${config.timeZone}`,
  );
  return { fetch, close, [Symbol.asyncDispose]: close };
}

let envService: { service: IdService; config: EnvConfig } | undefined;
function fromEnv() {
  if (envService === undefined) {
    const config = optionsFromEnv();
    envService = { service: createHandler(config.options), config };
  }
  return envService;
}

if (import.meta.main) {
  try {
    fromEnv(); // refuse to start now, not at the first request, when misconfigured
  } catch (err) {
    // One line, no stack: the mistake and the fix are in the message.
    console.error(
      `kvid service: ${
        (err instanceof Error ? err.message : String(err)).replace(/^kvid service: /, "")
      }`,
    );
    Deno.exit(78);
  }
  const host = serveHost();
  if (host !== undefined && !openOnPurpose(host)) refuseOpen(host); // before it binds
  // Stop: answer what is in flight, close generators and client, exit 0.
  exitOnSignals(async () => {
    const { service, config } = fromEnv();
    await service.close();
    await config.close();
  });
}

/**
 * The address `deno serve` is about to bind, read from this process's command line (Linux'
 * /proc, where it may be read): `--host`'s value, else its default `0.0.0.0`; undefined when
 * it cannot be known (then `onListen` checks, once bound).
 */
function serveHost(): string | undefined {
  let args: string[];
  try {
    if (Deno.permissions.querySync({ name: "read", path: "/proc/self" }).state !== "granted") {
      return undefined;
    }
    args = Deno.readTextFileSync("/proc/self/cmdline").split("\0");
  } catch {
    return undefined;
  }
  const serve = args.indexOf("serve");
  if (serve < 0) return undefined;
  for (let i = serve + 1; i < args.length; i++) {
    if (args[i] === "--host") return args[i + 1];
    if (args[i].startsWith("--host=")) return args[i].slice(7);
  }
  return "0.0.0.0";
}

/** Whether listening on `hostname` is fine: with tokens, on loopback, or opened on purpose. */
function openOnPurpose(hostname: string): boolean {
  return fromEnv().config.options.auth !== "none" ||
    /^(127\.|::1$|\[::1\]$|localhost$)/.test(hostname) ||
    /^(1|true|yes)$/i.test(Deno.env.get("KVID_OPEN_NETWORK") ?? "");
}

function refuseOpen(hostname: string): never {
  console.error(
    `kvid service: KVID_AUTH=none listens on loopback only, not ${hostname}: pass ` +
      "--host 127.0.0.1, set tokens (KVID_TOKENS), or KVID_OPEN_NETWORK=1 on purpose",
  );
  Deno.exit(78);
}

/**
 * The service for `deno serve`, configured from the environment ({@linkcode optionsFromEnv}).
 *
 * @example `deno serve -A --unstable-kv jsr:@kvid/core/server`
 * ```ts
 * import service from "@kvid/core/server";
 * import assert from "node:assert/strict";
 *
 * assert.ok(typeof service.fetch === "function");
 * ```
 */
const server: Deno.ServeDefaultExport = {
  fetch: (req) => fromEnv().service.fetch(req),
  onListen: (addr) => {
    const { hostname, port } = addr as Deno.NetAddr;
    // `deno serve` binds 0.0.0.0 unless told otherwise: where its command line could not be
    // read before, an open service stops here, before it answers anything.
    if (!openOnPurpose(hostname)) refuseOpen(hostname);
    console.error(`kvid service: listening on http://${hostname}:${port}/`);
  },
};
export default server;
