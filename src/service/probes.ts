/**
 * `GET /healthz` (liveness), `GET /readyz` (readiness, see `readiness.ts`) and `GET /metrics`
 * (Prometheus text of the generators a token may see, and the service's own series).
 *
 * @module
 */

import { inScope, type ScopeOf, unauthorized } from "./auth.ts";
import type { Generators } from "./generators.ts";
import { type HttpCounters, renderMetrics } from "./metrics.ts";
import { processMetrics } from "./process_metrics.ts";
import { type Readiness, storeAnswers } from "./readiness.ts";
import { errorResponse, text } from "./respond.ts";
import type { SegmentRoutes } from "./segments.ts";

/** The paths {@linkcode probes} answers. */
export const PROBE_PATHS: ReadonlySet<string> = new Set(["/healthz", "/readyz", "/metrics"]);

/** What {@linkcode probes} reads. */
export interface ProbesOptions {
  ready: () => Promise<Readiness>;
  scopeOf: ScopeOf;
  generators: Generators;
  http: HttpCounters;
  segments: SegmentRoutes;
  /** More series, rendered (the listener's connection counters). */
  metrics: (() => string[]) | undefined;
}

/** The probes of one service: answers a request for one of {@linkcode PROBE_PATHS}. */
export function probes(
  options: ProbesOptions,
): (req: Request, path: string) => Promise<Response> {
  const { ready, scopeOf, generators, http, segments } = options;
  return async (req, path) => {
    if (req.method !== "GET" && req.method !== "HEAD") {
      return errorResponse(405, "method_not_allowed", "use GET", { allow: "GET, HEAD" });
    }
    if (path === "/healthz") return text(200, "ok\n");
    if (path === "/readyz") {
      const readiness = await ready();
      if (readiness.state === "up") return text(200, "ready\n");
      const why = readiness.state === "starting"
        ? "starting: connecting to the store"
        : readiness.state === "down"
        ? "the store does not answer"
        : readiness.why;
      return text(503, `not ready: ${why}\n`, { "retry-after": "1" });
    }
    const scope = scopeOf(req);
    if (scope === undefined) return unauthorized();
    const readiness = await ready();
    // A token of some names sees their series only: the service-wide ones (the store, HTTP,
    // the process, the listener, failed logins) are for tokens of every name.
    const wide = scope === "*";
    const metrics = renderMetrics(generators.visibleTo(scope), http, {
      storeUp: storeAnswers(readiness),
      storeConfigError: readiness.state === "config",
      storeNotDurable: readiness.state === "not-durable",
      wide,
      extra: [
        ...segments.metrics((name) => inScope(scope, name)),
        ...(wide ? [...processMetrics(), ...(options.metrics?.() ?? [])] : []),
      ],
    }, Date.now());
    return text(200, metrics, { "content-type": "text/plain; version=0.0.4; charset=utf-8" });
  };
}
