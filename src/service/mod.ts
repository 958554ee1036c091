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
 * (Over 900 lines with the documentation below; the code is one handler, a closure over one
 * service's state. Configuration from the environment, request reading, responses, auth,
 * metrics, the segment endpoints, the OpenAPI document, the status page and the listener of
 * `@kvid/core/serve` are apart, in `src/service/`.)
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
 * | `KVID_TOKENS`         | `<token>:<names>,...`, names `*` or `a\|b\|c`; tokens: 16+ printable ASCII characters. Required, unless... |
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
 * | `POST /v1/segments/{name}`                 | `{"count": 1000, "floor": "0", "raiseTo": "0"}`: reserves a whole range of the counter for a client that serves it itself (`HttpStore` of `@kvid/core/client`, TinyID's client model): `{"name", "ranges": [{"first": "1", "last": "1000"}], "raised": false}`, exact decimal strings; `count` at most `maxSegment` (1,000,000); 64 at once at most (503 `unavailable` past it) |
 * | `POST /v1/segments/{name}/release`         | `{"first", "last"}`: give back the unused tail if nobody reserved since: `{"released": true}` |
 * | `GET`/`PUT /v1/segments/{name}/step`       | the step remembered next to the counter: `{"step": 4096}` (or `null`)                        |
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
 * without the permissions, a command renamed away: waiting does not fix it); 500 `internal`
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
 * measured in process without HTTP in the same bench: 3.8 µs per `count=1` request against 2.4 µs for
 * a hello-world handler (fastest; averages 6.7 and 3.2 µs), so about 1.5 µs for the token check, the
 * name, the ID and the headers; 7.4 µs for `count=100`. `INCR` per request sends every request to
 * Redis (node-redis pipelines the 50 concurrent ones, which is why it keeps up at all here) and is
 * bounded by the Redis server and a round trip per request; the service sends one command per segment.
 * For scale, Leaf publishes about 50,000 QPS on a 4-core machine. These figures are of
 * `deno serve` (`Deno.serve`); behind its own listener (`deno task serve`, which survives the
 * attacks `Deno.serve` does not) `count=1` measured 0.43x of `Deno.serve` in a later run of the
 * same bench at load 11 (5,362 against 12,425 req/s; see `@kvid/core/serve`).
 *
 * @module
 */

import "../stores/redis/redis_option.ts"; // installs the `redis` option's resolver
import { deadlineTimer } from "../contract/deadline_timer.ts";
import { KvIdError } from "../contract/errors.ts";
import {
  type RedisClient,
  type RedisSource,
  RedisStore,
  resolveRedis,
} from "../stores/redis/redis_store.ts";
import { durabilityRefusal } from "../contract/durability.ts";
import type { IdRange, Reservation, ReserveOptions, Store } from "../contract/store.ts";
import { inScope, parseTokens, type Scope, Sessions, TokenAuth } from "./auth.ts";
import {
  type Entry,
  Generators,
  type Kind,
  NAME_OPTION_KEYS,
  type NameOptions,
} from "./generators.ts";
import { DailyId } from "../daily/daily.ts";
import { KvId } from "../engine/kvid.ts";
import { type HttpCounters, renderMetrics } from "./metrics.ts";
import { processMetrics } from "./process_metrics.ts";
import { toKvIdError } from "../contract/store_errors.ts";
import { loginPage, PAGE_CSP, statusPage } from "./page.ts";
import { errorResponse, text } from "./respond.ts";
import { idLines } from "./id_lines.ts";
import { readLimited, sameOrigin } from "./request.ts";
import { type EnvConfig, optionsFromEnv } from "./env.ts";
import type { ServiceOptions } from "./options.ts";
import { checkName } from "../contract/validate.ts";
import { SegmentRoutes } from "./segments.ts";
import { allowOf, openApiDocument } from "./openapi.ts";
import { exitOnSignals } from "./signals.ts";

// Re-exported so this entry point documents itself (the same types as from "@kvid/core").
export type { IdRange, RedisClient, RedisSource, Reservation, ReserveOptions, Store };
export { type EnvConfig, type NameOptions, optionsFromEnv, type ServiceOptions };
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

/** Most IDs one request may ask for. */
export const MAX_COUNT = 10_000;
const MAX_URL_LENGTH = 16_384;
const MAX_BODY_BYTES = 65_536;
const MAX_FORM_BYTES = 4_096;
const READY_TIMEOUT_MS = 1_000;
const TEXT_TYPE = "text/plain; charset=utf-8";
const JSON_TYPE = "application/json; charset=utf-8";
const ID_METHODS = "GET, POST";
/** A query that is `count=<digits>` and nothing else: what URLSearchParams would read too. */
const SIMPLE_COUNT = /^count=[0-9]{1,6}$/;

/**
 * What the readiness probe found: the store answers, does not, or refuses the configuration (its
 * credentials or permissions, or under `"strict"` a store that can lose reservations), and why.
 */
type Readiness = { state: "up" } | { state: "down" } | { state: "config"; why: string };
const CONFIG_REFUSED =
  "the store refuses this service's configuration (credentials, permissions or a command it needs): fix it, see the service log";
const RETRY: ReadonlySet<string> = new Set([
  "timeout",
  "connection",
  "unavailable",
  "conflict",
  "closed",
]);

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
  if (options === null || typeof options !== "object") {
    throw new TypeError("createHandler() takes an options object");
  }
  const log = options.log ?? ((line: string) => console.error(line));
  if ((options.redis === undefined) === (options.store === undefined)) {
    throw new TypeError("createHandler() needs exactly one of the options redis and store");
  }
  const store = options.store ?? new RedisStore(options.redis!);
  let auth: TokenAuth | undefined;
  if (options.auth === "none") {
    if (options.tokens !== undefined) {
      throw new TypeError('createHandler(): auth "none" and tokens exclude each other');
    }
    log(
      "kvid service: WARNING: authentication is OFF (KVID_AUTH=none): anyone who can reach " +
        "this service gets IDs and sees its status",
    );
  } else if (options.auth === undefined || options.auth === "token") {
    if (options.tokens === undefined) {
      throw new TypeError(
        'kvid service: no tokens (KVID_TOKENS): refusing to start; set auth "none" ' +
          "(KVID_AUTH=none) to run it open on purpose",
      );
    }
    auth = new TokenAuth(parseTokens(options.tokens));
  } else {
    throw new TypeError(`createHandler(): option auth must be "token" or "none"`);
  }
  const codecs = options.codecs;
  if (codecs !== undefined && !(codecs instanceof Map)) {
    throw new TypeError("createHandler(): option codecs must be a Map of name -> Codec");
  }
  const timeZone = options.timeZone ?? "UTC";
  try {
    new Intl.DateTimeFormat("en-US", { timeZone });
  } catch {
    throw new RangeError(`kvid service: unknown time zone ${JSON.stringify(timeZone)}`);
  }
  const positive = (what: string, v: number | undefined, d: number) => {
    v ??= d;
    if (!Number.isInteger(v) || v < 1) {
      throw new RangeError(`kvid service: ${what} must be a positive integer, got ${v}`);
    }
    return v;
  };
  const durability = options.durability ?? "strict";
  if (durability !== "strict" && durability !== "best-effort") {
    throw new TypeError(`createHandler(): option durability must be "strict" or "best-effort"`);
  }
  const timeout = positive("timeout", options.timeout, 5_000);
  const maxSegment = positive("maxSegment", options.maxSegment, 1_000_000);
  const names = checkNames(options.names, store);
  const generators = new Generators({
    durability,
    store,
    max: positive("maxGenerators", options.maxGenerators, 1_000),
    idleMs: positive("idleMs", options.idleMs, 60_000),
    timeout,
    timeZone,
    names,
  });
  const segmentRoutes = new SegmentRoutes({ store, timeout, maxSegment, log });
  const storeLabel = options.storeLabel ?? (options.redis !== undefined ? "redis" : "store");
  const redis = options.redis;
  const readyProbe = options.ready ??
    (redis !== undefined
      ? async () => {
        const client = await resolveRedis(redis);
        if (client.sendCommand === undefined) throw new Error("no sendCommand to PING with");
        await client.sendCommand("PING");
      }
      : () => {
        for (const e of generators.entries()) {
          const last = e.snapshot(Date.now()).lastError;
          if (last !== null) {
            const code = last.startsWith("config:") ? "config" : "connection";
            throw new KvIdError(code, "the store fails", { key: "kvid", field: e.name });
          }
        }
        return Promise.resolve();
      });
  const basePath = options.basePath ?? "";
  if (typeof basePath !== "string" || !/^(\/[A-Za-z0-9._~!$&'()*+,;=:@%-]+)*$/.test(basePath)) {
    throw new TypeError(
      `kvid service: basePath must be "" or a path like "/ids" (no trailing slash), got ${
        JSON.stringify(basePath)
      }`,
    );
  }
  const sessions = new Sessions(basePath || "/");
  let openApiText: string | undefined;
  const http: HttpCounters = { responses: new Map(), inFlight: 0 };
  let closing: Promise<void> | undefined;
  let drained: (() => void) | undefined;

  // Whether the service can serve: the store answers and, under "strict", says it cannot lose
  // reservations.
  const ready = async (): Promise<Readiness> => {
    let cancel: (() => void) | undefined;
    try {
      const refusal = await Promise.race([
        (async () => {
          await readyProbe();
          if (store.durability === undefined) return undefined;
          const d = await store.durability("kvid", {
            field: "",
            mode: durability,
            replicas: 0,
            stated: {},
          });
          return durabilityRefusal(d, durability, "kvid", "")?.message;
        })(),
        // A loop blocked by the application is not a store that does not answer.
        new Promise<never>((_, reject) => {
          cancel = deadlineTimer(READY_TIMEOUT_MS, () => reject(new Error("slow")));
        }),
      ]);
      return refusal === undefined ? { state: "up" } : { state: "config", why: refusal };
    } catch (err) {
      // The probe's own words (a reply error of the client) or the generators' last error.
      const kvid = err instanceof KvIdError ? err : toKvIdError(err, "kvid", "");
      return kvid.code === "config" ? { state: "config", why: CONFIG_REFUSED } : { state: "down" };
    } finally {
      cancel?.();
    }
  };

  const scopeOf = (req: Request): Scope | undefined =>
    auth === undefined ? "*" : auth.fromRequest(req);
  const unauthorized = () =>
    errorResponse(401, "unauthorized", "a valid token is required: Authorization: Bearer <token>", {
      "www-authenticate": 'Bearer realm="kvid"',
    });
  const secure = (req: Request) =>
    new URL(req.url).protocol === "https:" || req.headers.get("x-forwarded-proto") === "https";

  async function ids(req: Request, query: string, kind: Kind, rest: string): Promise<Response> {
    if (req.method !== "GET" && req.method !== "POST") {
      return errorResponse(405, "method_not_allowed", `use ${ID_METHODS}`, { allow: ID_METHODS });
    }
    const scope = scopeOf(req);
    if (scope === undefined) return unauthorized();
    // The engine checks the rest of the name's rules when it makes the generator.
    const name = decodeName(rest);
    if (typeof name !== "string") return name;
    if (!inScope(scope, name)) {
      return errorResponse(403, "forbidden", "this token may not ask for IDs of that name");
    }
    let count = 1;
    // `count=<digits>` alone is read by hand (URLSearchParams costs ~1 µs); any other query
    // goes through it.
    const counts = query === ""
      ? []
      : SIMPLE_COUNT.test(query)
      ? [query.slice(6)]
      : new URLSearchParams(query).getAll("count");
    if (counts.length > 0) {
      count = counts.length === 1 && /^[0-9]{1,6}$/.test(counts[0]) ? Number(counts[0]) : 0;
      if (!(count >= 1 && count <= MAX_COUNT)) {
        return errorResponse(400, "bad_count", `count must be an integer from 1 to ${MAX_COUNT}`);
      }
    }
    const now = Date.now();
    let entry: Entry | undefined;
    try {
      entry = generators.get(kind, name, now);
    } catch (err) {
      const why = err instanceof Error ? err.message.replace(/^KvId /, "") : "it is not valid";
      return errorResponse(400, "bad_name", `bad name: ${why}`);
    }
    if (entry === undefined) {
      return errorResponse(
        429,
        "too_many_generators",
        "too many live generators: try again later",
        { "retry-after": "10" },
      );
    }
    entry.pending++;
    let list: (number | bigint | string)[];
    try {
      list = await entry.gen.nextBatch(count);
    } catch (err) {
      return failure(err, entry);
    } finally {
      entry.pending--;
    }
    entry.issued += count;
    const done = Date.now();
    entry.rates.add(count, done);
    generators.rates.add(count, done);
    const json = (req.headers.get("accept") ?? "").includes("application/json");
    const codec = kind === "ids" ? codecs?.get(name) : undefined;
    let encoded: string[] | undefined;
    try {
      // A codec is handed bigints, as before the generator served numbers below 2^53.
      encoded = codec &&
        list.map((id) => codec.encode(typeof id === "number" ? BigInt(id) : id as bigint));
    } catch (err) {
      return failure(err, entry); // a counter past its form's domain: logged, 500
    }
    let body = "";
    if (json) {
      body = JSON.stringify(
        encoded ? { name, ids: list.map(String), encoded } : { name, ids: list.map(String) },
      ) + "\n";
    } else if (encoded) {
      for (let i = 0; i < list.length; i++) body += `${list[i]}\t${encoded[i]}\n`;
    } else {
      body = idLines(list);
    }
    // Headers set one by one: several times faster than a headers init in Deno 2.
    const res = new Response(body);
    res.headers.set("content-type", json ? JSON_TYPE : TEXT_TYPE);
    res.headers.set("cache-control", "no-store");
    return res;
  }

  /** The name sent as one path segment, decoded, or a 400 answer. */
  function decodeName(rest: string): string | Response {
    let name: string;
    try {
      if (rest.includes("/")) throw new URIError("a slash");
      name = rest.includes("%") ? decodeURIComponent(rest) : rest;
    } catch {
      return errorResponse(
        400,
        "bad_name",
        "the name is not valid percent-encoded UTF-8 in one path segment",
      );
    }
    if (name === "." || name === "..") {
      // Clients and proxies resolve these path segments away: such a name cannot be asked for.
      return errorResponse(400, "bad_name", 'the names "." and ".." cannot be sent in a URL path');
    }
    return name;
  }

  /** The name of a path segment checked by `KvId`'s rules, or a 400 answer. */
  function nameOf(rest: string): string | Response {
    const name = decodeName(rest);
    if (typeof name !== "string") return name;
    try {
      checkName("the", "name", name);
    } catch (err) {
      return errorResponse(400, "bad_name", `bad name: ${(err as Error).message.slice(4)}`);
    }
    return name;
  }

  /**
   * `/v1/segments/{name}[/release|/step]`: the store's own operations for a `KvId` in another
   * process (`HttpStore`), on the counter `name` of the service's hash, within the token's scope.
   */
  async function segments(req: Request, rest: string): Promise<Response> {
    const slash = rest.indexOf("/");
    const op = slash < 0 ? "" : rest.slice(slash + 1);
    if (op !== "" && op !== "release" && op !== "step") {
      return errorResponse(404, "not_found", "no such endpoint");
    }
    const allow = op === "step" ? "GET, PUT" : "POST";
    if (!allow.split(", ").includes(req.method)) {
      return errorResponse(405, "method_not_allowed", `use ${allow}`, { allow });
    }
    const scope = scopeOf(req);
    if (scope === undefined) return unauthorized();
    const name = nameOf(slash < 0 ? rest : rest.slice(0, slash));
    if (typeof name !== "string") return name;
    if (!inScope(scope, name)) {
      return errorResponse(403, "forbidden", "this token may not ask for IDs of that name");
    }
    return await segmentRoutes.answer(req, name, op);
  }

  function failure(err: unknown, entry: Entry): Response {
    if (err instanceof KvIdError && err.code === "config" && /too large/.test(err.message)) {
      // A name within KvId's 4,096 bytes that the store cannot key (Deno KV: 2 KiB keys).
      generators.drop(entry);
      return errorResponse(400, "bad_name", "the name is too long for this store");
    }
    entry.failedRequests++;
    if (err instanceof KvIdError && RETRY.has(err.code)) {
      return errorResponse(503, "unavailable", "the ID store is unavailable: retry shortly", {
        "retry-after": "1",
      });
    }
    if (err instanceof KvIdError && err.code === "config") {
      logFailure(err, entry);
      return errorResponse(
        500,
        "store_config",
        "the ID store refuses this service's configuration (credentials, permissions or a " +
          "command it needs): the operator must fix it; see the service log",
      );
    }
    if (err instanceof KvIdError && err.code === "overflow" && entry.kind === "daily") {
      const ends = (entry.gen as unknown as { stats(): { dayEndsAt?: number } }).stats()
        .dayEndsAt;
      const wait = ends === undefined ? 60 : Math.max(1, Math.ceil((ends - Date.now()) / 1000));
      return errorResponse(503, "unavailable", "today's serials are used up", {
        "retry-after": String(wait),
      });
    }
    logFailure(err, entry);
    return errorResponse(500, "internal", "the ID could not be made; see the service log");
  }

  function logFailure(err: unknown, entry: Entry): void {
    log(
      `kvid service: ${entry.kind} ${JSON.stringify(entry.name.slice(0, 100))} failed: ${
        err instanceof Error ? `${err.name}: ${err.message}` : String(err)
      }`,
    );
  }

  async function page(req: Request, path: string): Promise<Response> {
    const html = (status: number, body: string, headers: Record<string, string> = {}) =>
      new Response(body, {
        status,
        headers: {
          "content-type": "text/html; charset=utf-8",
          "cache-control": "no-store",
          "content-security-policy": PAGE_CSP,
          "x-frame-options": "DENY",
          "referrer-policy": "same-origin", // "no-referrer" makes form posts send Origin: null
          ...headers,
        },
      });
    if (path === "/login" || path === "/logout") {
      if (req.method !== "POST") {
        return errorResponse(405, "method_not_allowed", "use POST", { allow: "POST" });
      }
      if (!sameOrigin(req)) {
        // Another site's form posting here (login CSRF): browsers send its Origin.
        return errorResponse(403, "forbidden", "the form was posted from another site");
      }
      if (path === "/logout") {
        return html(303, "", {
          location: `${basePath}/`,
          "set-cookie": sessions.close(req, secure(req)),
        });
      }
      const form = await readLimited(req, MAX_FORM_BYTES);
      if (form === undefined) {
        return errorResponse(413, "request_too_large", `the form is over ${MAX_FORM_BYTES} bytes`);
      }
      const token = new URLSearchParams(form).get("token") ?? "";
      const scope = auth === undefined ? "*" : auth.check(token);
      if (scope === undefined) return html(401, loginPage(true, basePath));
      return html(303, "", {
        location: `${basePath}/`,
        "set-cookie": sessions.open(scope, secure(req)),
      });
    }
    if (req.method !== "GET" && req.method !== "HEAD") {
      return errorResponse(405, "method_not_allowed", "use GET", { allow: "GET, HEAD" });
    }
    const scope = auth === undefined ? "*" : sessions.fromRequest(req);
    if (scope === undefined) return html(200, loginPage(false, basePath));
    const now = Date.now();
    const visible = visibleEntries(scope);
    const rows = visible.map((e) => e.snapshot(now))
      .sort((a, b) => a.name < b.name ? -1 : a.name > b.name ? 1 : a.kind < b.kind ? -1 : 1);
    return html(
      200,
      statusPage(rows, chartSeries(scope, visible, now), {
        store: storeLabel,
        ready: await ready(),
        nowMs: now,
        base: basePath,
      }),
    );
  }

  /** The live generators whose names `scope` covers. */
  function visibleEntries(scope: Scope): Entry[] {
    const all = [...generators.entries()];
    return scope === "*" ? all : all.filter((e) => inScope(scope, e.name));
  }

  /**
   * IDs/s of the last 5 minutes: all of them for a token of every name (closed generators'
   * traffic included), else the sum of the generators it may see.
   */
  function chartSeries(scope: Scope, visible: Entry[], now: number): number[] {
    if (scope === "*") return generators.rates.series(now);
    const sum = generators.rates.series(now).fill(0);
    for (const e of visible) e.rates.series(now).forEach((n, i) => sum[i] += n);
    return sum;
  }

  /** `/healthz`, `/readyz` and `/metrics`. */
  async function probes(req: Request, path: string): Promise<Response> {
    if (req.method !== "GET" && req.method !== "HEAD") {
      return errorResponse(405, "method_not_allowed", "use GET", { allow: "GET, HEAD" });
    }
    if (path === "/healthz") return text(200, "ok\n");
    if (path === "/readyz") {
      const readiness = await ready();
      if (readiness.state === "up") return text(200, "ready\n");
      return text(
        503,
        `not ready: ${
          readiness.state === "config" ? readiness.why : "the store does not answer"
        }\n`,
        { "retry-after": "1" },
      );
    }
    const scope = scopeOf(req);
    if (scope === undefined) return unauthorized();
    const { state } = await ready();
    const metrics = renderMetrics(visibleEntries(scope), http, {
      storeUp: state === "up",
      storeConfigError: state === "config",
      extra: [
        ...segmentRoutes.metrics((name) => inScope(scope, name)),
        ...processMetrics(),
        ...(options.metrics?.() ?? []),
      ],
    }, Date.now());
    return text(200, metrics, { "content-type": "text/plain; version=0.0.4; charset=utf-8" });
  }

  // Not async itself, nor awaiting what it hands on: each async layer between fetch() and the
  // ID costs a request its own promise and microtask turns.
  function route(req: Request): Response | Promise<Response> {
    if (req.url.length > MAX_URL_LENGTH) {
      return errorResponse(414, "request_too_large", `the URL is over ${MAX_URL_LENGTH} bytes`);
    }
    const length = req.headers.get("content-length");
    if (length !== null && !(Number(length) <= MAX_BODY_BYTES)) {
      return errorResponse(413, "request_too_large", `the body is over ${MAX_BODY_BYTES} bytes`);
    }
    // The path and query as sent, cut out of the URL by hand: `new URL()` costs more than the
    // ID does, and would resolve dot segments of a name.
    const raw = req.url;
    const start = raw.indexOf("/", raw.indexOf("//") + 2);
    let end = raw.indexOf("#", start);
    if (end < 0) end = raw.length;
    const q = raw.indexOf("?", start);
    let path = start < 0 ? "/" : raw.slice(start, q >= 0 && q < end ? q : end);
    if (basePath !== "") {
      // Mounted under a prefix: only paths below it are ours, and they are routed without it.
      if (path !== basePath && !path.startsWith(basePath + "/")) {
        return errorResponse(404, "not_found", "no such endpoint");
      }
      path = path.slice(basePath.length) || "/";
    }
    const query = q >= 0 && q < end ? raw.slice(q + 1, end) : "";
    if (path.startsWith("/v1/ids/") && path.length > 8) {
      return ids(req, query, "ids", path.slice(8));
    }
    if (path.startsWith("/v1/daily/") && path.length > 10) {
      return ids(req, query, "daily", path.slice(10));
    }
    if (path.startsWith("/v1/segments/") && path.length > 13) {
      return segments(req, path.slice(13));
    }
    if (path === "/healthz" || path === "/readyz" || path === "/metrics") return probes(req, path);
    if (path === "/openapi.json") {
      if (req.method !== "GET" && req.method !== "HEAD") {
        return errorResponse(405, "method_not_allowed", "use GET", { allow: allowOf(path) });
      }
      openApiText ??= JSON.stringify(openApiDocument(basePath), null, 2) + "\n";
      return text(200, openApiText, { "content-type": JSON_TYPE });
    }
    if (path === "/" || path === "/login" || path === "/logout") return page(req, path);
    return errorResponse(404, "not_found", "no such endpoint");
  }

  async function fetch(req: Request): Promise<Response> {
    if (closing !== undefined) {
      return errorResponse(503, "shutting_down", "the service is shutting down", {
        "retry-after": "1",
        connection: "close",
      });
    }
    http.inFlight++;
    let res: Response;
    try {
      res = await route(req);
    } catch (err) {
      log(
        `kvid service: unexpected ${err instanceof Error ? err.name : "error"} answering a request`,
      );
      res = errorResponse(500, "internal", "internal error; see the service log");
    } finally {
      if (--http.inFlight === 0) drained?.();
    }
    http.responses.set(res.status, (http.responses.get(res.status) ?? 0) + 1);
    return res;
  }

  function close(): Promise<void> {
    closing ??= (async () => {
      if (http.inFlight > 0) await new Promise<void>((resolve) => drained = resolve);
      await generators.close();
    })();
    return closing;
  }

  log(
    `kvid service: store ${storeLabel}, ${
      auth === undefined ? "NO AUTH" : "token auth"
    }, daily serials in ${timeZone}`,
  );
  return { fetch, close, [Symbol.asyncDispose]: close };
}

/**
 * Check the per-name options now, not at a name's first request: unknown keys, and what the
 * engine refuses (a generator of each kind is made with them on no store, then dropped).
 */
function checkNames(
  names: Record<string, NameOptions> | undefined,
  store: Store,
): Record<string, NameOptions> | undefined {
  if (names === undefined) return undefined;
  if (names === null || typeof names !== "object" || Array.isArray(names)) {
    throw new TypeError("kvid service: names must be an object of name: options");
  }
  for (const [name, own] of Object.entries(names)) {
    const where = `kvid service: names[${JSON.stringify(name)}]`;
    if (own === null || typeof own !== "object" || Array.isArray(own)) {
      throw new TypeError(`${where} must be an object`);
    }
    for (const key of Object.keys(own)) {
      if (!(NAME_OPTION_KEYS as readonly string[]).includes(key)) {
        throw new TypeError(
          `${where}: unknown option ${key} (known: ${NAME_OPTION_KEYS.join(", ")})`,
        );
      }
    }
    const { digits, timeZone, initialStep, ...steps } = own;
    try {
      // Never used, so closing them touches no store.
      void new KvId(name === "*" ? "x" : name, { store, initialStep, ...steps }).close();
      void new DailyId(name === "*" ? "x" : name, {
        store,
        digits,
        timeZone,
        format: "string",
        ...steps,
      }).close();
    } catch (err) {
      throw new TypeError(`${where}: ${err instanceof Error ? err.message : err}`);
    }
  }
  return names;
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
