/**
 * The ID service: IDs over HTTP for any language, on the same engine as `KvId` and `DailyId`,
 * with token auth, Prometheus metrics, a status page and segments for `HttpStore` clients.
 *
 * Run it as a program with `deno run -A --unstable-kv jsr:@kvid/core/serve --port 8000`
 * (`@kvid/core/serve`, configured from the environment: {@linkcode optionsFromEnv}), serve this
 * entry point's default export with `deno serve`, or embed {@linkcode createHandler} in an app:
 *
 * ```ts
 * import { createHandler } from "@kvid/core/server";
 * import { DenoKvStore } from "@kvid/core/deno-kv";
 * import assert from "node:assert/strict";
 *
 * using store = new DenoKvStore(":memory:");
 * await using ids = createHandler({ store, tokens: "app-secret-0123456789:*", log: () => {} });
 * const res = await ids.fetch(new Request("http://localhost/v1/ids/order?count=3", {
 *   method: "POST",
 *   headers: { authorization: "Bearer app-secret-0123456789" },
 * }));
 * assert.equal(await res.text(), "1\n2\n3\n");
 * ```
 *
 * The environment variables, endpoints, tokens, metrics, the status page and deployment:
 * [docs/service.md](docs/service.md); what each token and endpoint lets its holder do:
 * [docs/security.md](docs/security.md).
 *
 * (This file is the entry point: {@linkcode createHandler} composing the parts, and the
 * `deno serve` default export. The parts are apart, in `src/service/`; it runs on any store that
 * passes the shared Store spec, and only the configuration from the environment names stores.)
 *
 * @module
 */

import type { RedisClient, RedisSource } from "../contract/redis_client.ts";
import type { IdRange, Reservation, ReserveOptions, Store } from "../contract/store.ts";
import { holderOf, scopeOf, Sessions } from "./auth.ts";
import { FailedAuth, failuresPerMinuteOf } from "./auth_limit.ts";
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
import { allowedHostsOf, openGuard } from "./open_guard.ts";
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
 * // Without tokens, IDs take a POST (no web page can send one to another origin unasked):
 * const res = await fetch(`http://127.0.0.1:${server.addr.port}/v1/ids/order?count=3`, {
 *   method: "POST",
 * });
 * assert.ok((await res.text()) === "1\n2\n3\n");
 * await server.shutdown(); // stop accepting, answer in-flight requests
 * await service.close(); // then close the generators
 * ```
 */
export interface IdService extends AsyncDisposable {
  /**
   * Answer one request; `info.remoteAddr` (as `Deno.serve` passes it) is the peer whose failed
   * authentications are limited (without it, none are).
   */
  fetch(req: Request, info?: { remoteAddr: Deno.Addr }): Promise<Response>;
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
  // Checked here, not in config.ts: the options of issue 33's guards.
  const perMinute = failuresPerMinuteOf(options.authFailuresPerMinute);
  const limiter = config.auth === undefined || perMinute === 0
    ? undefined
    : new FailedAuth(perMinute);
  const guard = config.auth === undefined
    ? openGuard(allowedHostsOf(options.allowedHosts), basePath)
    : undefined;
  const segments = new SegmentRoutes({
    store,
    timeout,
    maxSegment: config.maxSegment,
    log,
    holderOf: holderOf(config.auth),
    codecs: config.codecs,
  });
  const ready = readiness({ store, durability, probe: config.ready, generators });
  const http: HttpCounters = { responses: new Map(), inFlight: 0 };
  const route = router({
    basePath,
    ids: idsEndpoint({ generators, scopeOf: scope, codecs: config.codecs, log }),
    segments: (req, rest) => segments.route(req, rest),
    probes: probes({
      ready,
      scopeOf: scope,
      generators,
      http,
      segments,
      metrics: limiter === undefined
        ? config.metrics
        : () => [...limiter.metrics(), ...(config.metrics?.() ?? [])],
    }),
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
  function fetch(req: Request, info?: { remoteAddr: Deno.Addr }): Promise<Response> {
    // The peer of a failed authentication: an address, by IP (the port changes per connection).
    const peer = limiter !== undefined && info !== undefined && "hostname" in info.remoteAddr
      ? info.remoteAddr.hostname
      : undefined;
    if (peer !== undefined && limiter!.size > 0) {
      const throttled = isProbe(req) ? undefined : limiter!.throttle(peer, Date.now());
      if (throttled !== undefined) return Promise.resolve(answered(throttled));
    }
    if (guard !== undefined) {
      const refused = guard(req);
      if (refused !== undefined) return Promise.resolve(answered(refused));
    }
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
    if (peer !== undefined) {
      return res instanceof Promise
        ? res.then((r) => counted(r, peer), (err) => counted(unexpected(err), peer))
        : Promise.resolve(counted(res, peer));
    }
    return res instanceof Promise
      ? res.then(done, (err) => done(unexpected(err)))
      : Promise.resolve(done(res));
  }

  /** A request's answer, in flight no longer. */
  function done(res: Response): Response {
    if (--http.inFlight === 0) drained?.();
    return answered(res);
  }

  /** {@linkcode done}, and a 401 counted against `peer`. */
  function counted(res: Response, peer: string): Response {
    if (res.status === 401) limiter!.failed(peer, Date.now());
    return done(res);
  }

  /** Count an answer by its status. */
  function answered(res: Response): Response {
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
  fetch: (req, info) => fromEnv().service.fetch(req, info),
  onListen: (addr) => {
    const { hostname, port } = addr as Deno.NetAddr;
    // `deno serve` binds 0.0.0.0 unless told otherwise: where its command line could not be
    // read before, an open service stops here, before it answers anything.
    if (!openOnPurpose(hostname)) refuseOpen(hostname);
    console.error(`kvid service: listening on http://${hostname}:${port}/`);
  },
};
export default server;

/** `/healthz` and `/readyz`: answered to a throttled peer too (they need no token). */
function isProbe(req: Request): boolean {
  const path = new URL(req.url).pathname;
  return path.endsWith("/healthz") || path.endsWith("/readyz");
}
