/**
 * The service's Prometheus text exposition (format 0.0.4).
 *
 * @module
 */

import type { Entry, GeneratorSnapshot } from "./generators.ts";
import { BUCKETS } from "./histogram.ts";

/** Process-wide HTTP counters rendered beside the generators. */
export interface HttpCounters {
  /** Responses by status code. */
  responses: Map<number, number>;
  inFlight: number;
}

/** The service-wide state rendered after the generators. */
export interface ServiceState {
  /** Whether the store answered the readiness probe just now. */
  storeUp: boolean;
  /** Whether it refused the service's configuration (credentials, permissions, commands). */
  storeConfigError: boolean;
  /** Whether it answers but can lose reservations, refused under `"strict"`. */
  storeNotDurable: boolean;
  /**
   * Whether to render the service-wide series (the store's state, the HTTP counters): for a
   * token of every name only.
   */
  wide: boolean;
  /** More series, already rendered (process, build, connections), one a line. */
  extra: string[];
}

type Series = { help: string; type: "counter" | "gauge"; value: (s: GeneratorSnapshot) => number };

const SERIES: Record<string, Series> = {
  kvid_ids_issued_total: { help: "IDs handed out", type: "counter", value: (s) => s.issued },
  kvid_reservations_total: {
    help: "Successful reservations (HINCRBY or KV commits)",
    type: "counter",
    value: (s) => s.reservations,
  },
  kvid_reservation_failures_total: {
    help: "Reservations that failed, or had not answered within the timeout",
    type: "counter",
    value: (s) => s.failures,
  },
  kvid_request_failures_total: {
    help: "Requests answered 5xx because no ID could be had from the store",
    type: "counter",
    value: (s) => s.failedRequests,
  },
  kvid_stalls_total: {
    help: "Calls that found no ID buffered and waited for a reservation",
    type: "counter",
    value: (s) => s.stalls,
  },
  kvid_rollbacks_total: {
    help: "Times the counter was found below IDs already reserved",
    type: "counter",
    value: (s) => s.rollbacks,
  },
  kvid_ttl_removals_total: {
    help: "Times a reservation found a TTL on the counters' hash and removed it",
    type: "counter",
    value: (s) => s.ttlRemovals,
  },
  kvid_step: { help: "IDs the next reservation asks for", type: "gauge", value: (s) => s.step },
  kvid_remaining: { help: "IDs buffered in memory", type: "gauge", value: (s) => s.remaining },
};

/** Escape a label value: backslash, double quote and newline. */
export function escapeLabel(value: string): string {
  return value.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n");
}

/** Render the metrics of `entries`, the HTTP counters and the service's state. */
export function renderMetrics(
  entries: Entry[],
  http: HttpCounters,
  state: ServiceState,
  nowMs: number,
): string {
  const out: string[] = [];
  const rows = entries.map((e) => ({
    e,
    s: e.snapshot(nowMs),
    labels: `kind="${e.kind}",name="${escapeLabel(e.name)}"`,
  }));
  for (const [metric, { help, type, value }] of Object.entries(SERIES)) {
    out.push(`# HELP ${metric} ${help}.`, `# TYPE ${metric} ${type}`);
    for (const { s, labels } of rows) out.push(`${metric}{${labels}} ${value(s)}`);
  }
  // 1 durable, 0 not (a refusal under "strict", a loss accepted under "best-effort"); left out
  // before the store was asked, or for a store that does not say.
  const durable = "kvid_store_durable";
  out.push(
    `# HELP ${durable} 1 when the store cannot lose a confirmed reservation, 0 when it can.`,
    `# TYPE ${durable} gauge`,
  );
  for (const { s, labels } of rows) {
    if (s.durable !== null) out.push(`${durable}{${labels}} ${s.durable ? 1 : 0}`);
  }
  const h = "kvid_reservation_duration_seconds";
  out.push(`# HELP ${h} Reservation round-trip time.`, `# TYPE ${h} histogram`);
  for (const { e, labels } of rows) {
    BUCKETS.forEach((le, i) =>
      out.push(`${h}_bucket{${labels},le="${le}"} ${e.histogram.counts[i]}`)
    );
    out.push(`${h}_bucket{${labels},le="+Inf"} ${e.histogram.count}`);
    out.push(
      `${h}_sum{${labels}} ${e.histogram.sum}`,
      `${h}_count{${labels}} ${e.histogram.count}`,
    );
  }
  const generatorsLines = [
    "# HELP kvid_generators Live generators (that the token may see).",
    "# TYPE kvid_generators gauge",
    `kvid_generators ${entries.length}`,
  ];
  if (!state.wide) {
    out.push(...generatorsLines, ...state.extra);
    return out.join("\n") + "\n";
  }
  out.push(
    "# HELP kvid_store_up Whether the store answered the readiness probe (1) or not (0), " +
      "durable or not.",
    "# TYPE kvid_store_up gauge",
    `kvid_store_up ${state.storeUp ? 1 : 0}`,
    "# HELP kvid_store_config_error Whether the store refuses the service's configuration " +
      "(credentials, permissions, commands): fixed by the operator, not by waiting.",
    "# TYPE kvid_store_config_error gauge",
    `kvid_store_config_error ${state.storeConfigError ? 1 : 0}`,
    "# HELP kvid_store_durability_refused Whether the store answers but can lose reservations, " +
      "refused under KVID_DURABILITY=strict (1), or not (0).",
    "# TYPE kvid_store_durability_refused gauge",
    `kvid_store_durability_refused ${state.storeNotDurable ? 1 : 0}`,
    ...generatorsLines,
    "# HELP kvid_http_requests_in_flight HTTP requests being answered.",
    "# TYPE kvid_http_requests_in_flight gauge",
    `kvid_http_requests_in_flight ${http.inFlight}`,
    "# HELP kvid_http_responses_total HTTP responses by status code.",
    "# TYPE kvid_http_responses_total counter",
  );
  for (const [code, n] of [...http.responses].sort((a, b) => a[0] - b[0])) {
    out.push(`kvid_http_responses_total{code="${code}"} ${n}`);
  }
  out.push(...state.extra);
  return out.join("\n") + "\n";
}
