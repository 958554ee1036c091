/**
 * The service's routes as data, and its OpenAPI 3.1 document made from them (served as
 * `GET /openapi.json`). A test (tests/service/openapi_test.ts) checks that the document's routes are
 * {@linkcode ROUTES} and that the handler answers each of their methods, answers 405 with the
 * same `Allow` for the others and 404 next to them, so the handler and the document cannot drift
 * apart unnoticed.
 *
 * @module
 */

import { VERSION } from "./process_metrics.ts";

/** One route: a path template (`{name}` is one path segment) and its methods. */
export interface Route {
  /** The path, e.g. `/v1/ids/{name}`. */
  path: string;
  /** The methods it answers (others: 405 with `Allow`). */
  methods: readonly string[];
}

/** Every route of the service. */
export const ROUTES: readonly Route[] = [
  { path: "/v1/ids/{name}", methods: ["GET", "POST"] },
  { path: "/v1/daily/{name}", methods: ["GET", "POST"] },
  { path: "/v1/segments/{name}", methods: ["POST"] },
  { path: "/v1/segments/{name}/release", methods: ["POST"] },
  { path: "/v1/segments/{name}/step", methods: ["GET", "PUT"] },
  { path: "/healthz", methods: ["GET", "HEAD"] },
  { path: "/readyz", methods: ["GET", "HEAD"] },
  { path: "/metrics", methods: ["GET", "HEAD"] },
  { path: "/openapi.json", methods: ["GET", "HEAD"] },
  { path: "/", methods: ["GET", "HEAD"] },
  { path: "/login", methods: ["POST"] },
  { path: "/logout", methods: ["POST"] },
];

/** The `Allow` value of `path` (a template of {@linkcode ROUTES}). */
export function allowOf(path: string): string {
  return ROUTES.find((r) => r.path === path)!.methods.join(", ");
}

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const json = (schema: unknown) => ({ "application/json": { schema } });
const error = (description: string) => ({ description, content: json(ref("ServiceError")) });
const decimal = {
  type: "string",
  pattern: "^(0|[1-9][0-9]{0,18})$",
  description: "A decimal integer from 0 to 2^63-1, as a string (exact beyond 2^53).",
};

const NAME = {
  name: "name",
  in: "path",
  required: true,
  description: "The counter's name: one path segment, percent-encoded UTF-8, at most 4,096 bytes.",
  schema: { type: "string", minLength: 1 },
};
const COUNT = {
  name: "count",
  in: "query",
  required: false,
  description: "How many IDs, 1 to 10,000.",
  schema: { type: "integer", minimum: 1, maximum: 10_000, default: 1 },
};

const AUTH_ERRORS = {
  "401": error("No valid token (`WWW-Authenticate: Bearer`)."),
  "403": error("The token's names do not include this one."),
};
const STORE_ERRORS = {
  "500": error("`store_config` (the store refuses the configuration) or `internal`."),
  "503": error("`unavailable` (with `Retry-After`): the store fails or hangs; `shutting_down`."),
};

function idsOperation(kind: "ids" | "daily", method: string) {
  return {
    operationId: `${kind}${method === "GET" ? "Get" : ""}`,
    summary: kind === "ids"
      ? "Increasing IDs of a KvId counter."
      : "DailyId serials: yyyymmdd then a 6-digit sequence.",
    security: [{ bearer: [] }],
    parameters: [NAME, COUNT],
    responses: {
      "200": {
        description: kind === "ids"
          ? "One ID a line (`text/plain`; `<id>\\t<public form>` for a name with a form, `KVID_FORMATS`), or JSON with `Accept: application/json`."
          : "One ID a line (`text/plain`), or JSON with `Accept: application/json`.",
        content: {
          "text/plain": { schema: { type: "string", example: "1\n2\n" } },
          ...json(ref("IdsResponse")),
        },
      },
      "400": error("`bad_name` or `bad_count`."),
      ...AUTH_ERRORS,
      ...(kind === "ids"
        ? {
          "409": error(
            "`overflow`: the counter is at 2^63-1; `domain`: past the largest ID of the name's public form.",
          ),
        }
        : {}),
      "429": error("`too_many_generators` (with `Retry-After`)."),
      ...STORE_ERRORS,
    },
  };
}

const segmentErrors = {
  "400": error("`bad_name` or `bad_segment`."),
  ...AUTH_ERRORS,
  "413": error("A body over 4 KiB."),
  "501": error("`not_implemented`: the service's store does not offer this."),
  ...STORE_ERRORS,
};

/**
 * The answers of the service's guards, added to each operation where they happen: a peer past
 * its failed authentications (429, every route but the probes), and without tokens
 * (`KVID_AUTH=none`) a request of another origin or host (403), an ID or counter request by
 * another method (405) or with a body of another type (415).
 */
function withGuards(paths: Record<string, Record<string, Record<string, unknown>>>): void {
  const add = (op: Record<string, unknown>, status: string, description: string) => {
    const responses = op.responses as Record<string, { description: string }>;
    const had = responses[status];
    responses[status] = had === undefined
      ? error(description)
      : { ...had, description: `${had.description} ${description}` };
  };
  for (const [path, ops] of Object.entries(paths)) {
    if (path === "/healthz" || path === "/readyz") continue; // answered to anyone
    const counts = path.startsWith("/v1/ids/") || path.startsWith("/v1/daily/") ||
      path.startsWith("/v1/segments/");
    for (const [method, op] of Object.entries(ops)) {
      add(
        op,
        "429",
        "`too_many_failures` (with `Retry-After`): this address failed authentication too " +
          "often this minute (`KVID_AUTH_LIMIT`).",
      );
      add(
        op,
        "403",
        "Without tokens (`KVID_AUTH=none`): a request of another origin (`Origin`, " +
          "`Sec-Fetch-Site`) or a `Host` that is neither loopback nor allowed.",
      );
      if (!counts || (method === "get" && path.endsWith("/step"))) continue;
      if (method === "get") {
        add(op, "405", "Without tokens, IDs are taken with POST (`Allow: POST`).");
        continue;
      }
      add(
        op,
        "415",
        "`unsupported_media_type`, without tokens: a body whose type is not " +
          "`application/json`.",
      );
    }
  }
}

const text = (description: string) => ({
  description,
  content: { "text/plain": { schema: { type: "string" } } },
});

/**
 * The OpenAPI 3.1 document of the service: every route of {@linkcode ROUTES}, its parameters,
 * answers and errors.
 *
 * @param basePath The prefix the service is mounted under (`servers[0].url`), or "".
 * @returns A JSON-safe object.
 */
export function openApiDocument(basePath = ""): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {
    "/v1/ids/{name}": { get: idsOperation("ids", "GET"), post: idsOperation("ids", "POST") },
    "/v1/daily/{name}": {
      get: idsOperation("daily", "GET"),
      post: idsOperation("daily", "POST"),
    },
    "/v1/segments/{name}": {
      post: {
        operationId: "reserveSegment",
        summary: "Reserve a whole range of the counter for a client that serves it (HttpStore).",
        security: [{ bearer: [] }],
        parameters: [NAME],
        requestBody: { required: true, content: json(ref("SegmentRequest")) },
        responses: {
          "200": {
            description: "The reserved ranges, and the receipt a release of them shows.",
            content: json(ref("SegmentResponse")),
          },
          "409": error(
            "`overflow`: the counter would pass 2^63-1; `domain`: the segment would pass the " +
              "largest ID of the name's public form (a token that is not administrative).",
          ),
          ...segmentErrors,
          "403": error(
            "The token's names do not include this one, or a raise past the counter plus one " +
              "maximum segment by a token that is not administrative.",
          ),
        },
      },
    },
    "/v1/segments/{name}/release": {
      post: {
        operationId: "releaseSegment",
        summary: "Give back the unused top of the caller's segments, with their receipts.",
        security: [{ bearer: [] }],
        parameters: [NAME],
        requestBody: { required: true, content: json(ref("ReleaseRequest")) },
        responses: {
          "200": {
            description: "Given back: the counter is at `first - 1`.",
            content: json(ref("ReleaseResponse")),
          },
          "409": error(
            "`release_refused`, saying why: no receipts, a receipt this instance did not hand " +
              "to this token or that was used (or forgotten: a restart forgets all), a range " +
              "not of the receipts' segments or not ending at their top, or the counter no " +
              "longer at `last` (someone reserved since).",
          ),
          ...segmentErrors,
        },
      },
    },
    "/v1/segments/{name}/step": {
      get: {
        operationId: "loadStep",
        summary: "The step the counter's processes last used, or null.",
        security: [{ bearer: [] }],
        parameters: [NAME],
        responses: {
          "200": { description: "The remembered step.", content: json(ref("StepBody")) },
          ...segmentErrors,
        },
      },
      put: {
        operationId: "saveStep",
        summary: "Remember the step for the counter's next generators.",
        security: [{ bearer: [] }],
        parameters: [NAME],
        requestBody: { required: true, content: json(ref("StepBody")) },
        responses: {
          "200": { description: "Remembered.", content: json(ref("StepBody")) },
          ...segmentErrors,
          "403": error(
            "The token's names do not include this one, or a step above the segment cap by a " +
              "token that is not administrative.",
          ),
        },
      },
    },
    "/healthz": {
      get: { operationId: "health", summary: "Liveness.", responses: { "200": text("`ok`.") } },
      head: { operationId: "healthHead", summary: "Liveness.", responses: { "200": text("") } },
    },
    "/readyz": {
      get: {
        operationId: "ready",
        summary: "Readiness: whether the store answers.",
        responses: {
          "200": text("`ready`."),
          "503": text(
            "Not ready: starting, the store does not answer, refuses the configuration, or can lose reservations.",
          ),
        },
      },
      head: {
        operationId: "readyHead",
        summary: "Readiness.",
        responses: { "200": text(""), "503": text("") },
      },
    },
    "/metrics": {
      get: {
        operationId: "metrics",
        summary: "Prometheus text (format 0.0.4); a scoped token sees its own names only.",
        security: [{ bearer: [] }],
        responses: { "200": text("The metrics."), "401": AUTH_ERRORS["401"] },
      },
      head: {
        operationId: "metricsHead",
        summary: "Prometheus text, headers only.",
        security: [{ bearer: [] }],
        responses: { "200": text(""), "401": AUTH_ERRORS["401"] },
      },
    },
    "/openapi.json": {
      get: {
        operationId: "openapi",
        summary: "This document.",
        responses: { "200": { description: "OpenAPI 3.1.", content: json({ type: "object" }) } },
      },
      head: {
        operationId: "openapiHead",
        summary: "This document, headers only.",
        responses: { "200": { description: "OpenAPI 3.1." } },
      },
    },
    "/": {
      get: {
        operationId: "statusPage",
        summary: "The status page (HTML), or its sign-in form without a session.",
        responses: { "200": { description: "HTML.", content: { "text/html": {} } } },
      },
      head: {
        operationId: "statusPageHead",
        summary: "The status page, headers only.",
        responses: { "200": { description: "HTML." } },
      },
    },
    "/login": {
      post: {
        operationId: "login",
        summary: "Sign in to the status page with a token (a form); sets a session cookie.",
        requestBody: {
          required: true,
          content: {
            "application/x-www-form-urlencoded": {
              schema: { type: "object", properties: { token: { type: "string" } } },
            },
          },
        },
        responses: {
          "303": { description: "Signed in: to `/`, with `Set-Cookie`." },
          "401": { description: "A wrong token: the form again.", content: { "text/html": {} } },
          "403": error("Posted from another site."),
          "413": error("A form over 4 KiB."),
        },
      },
    },
    "/logout": {
      post: {
        operationId: "logout",
        summary: "Sign out of the status page.",
        responses: {
          "303": { description: "Signed out: to `/`." },
          "403": error("Posted from another site."),
        },
      },
    },
  };
  withGuards(paths as Record<string, Record<string, Record<string, unknown>>>);
  return {
    openapi: "3.1.0",
    info: {
      title: "kvid ID service",
      version: VERSION,
      description: "Unique, trend-increasing 64-bit IDs over HTTP (@kvid/core). IDs are " +
        'decimal strings in JSON, exact to 2^63-1. Errors are `{"error": {"code", ' +
        '"message"}}`.',
      license: { name: "MIT", identifier: "MIT" },
    },
    ...(basePath === "" ? {} : { servers: [{ url: basePath }] }),
    paths,
    components: {
      securitySchemes: { bearer: { type: "http", scheme: "bearer" } },
      schemas: {
        ServiceError: {
          type: "object",
          required: ["error"],
          properties: {
            error: {
              type: "object",
              required: ["code", "message"],
              properties: {
                code: {
                  type: "string",
                  enum: [
                    "bad_request",
                    "bad_name",
                    "bad_count",
                    "bad_segment",
                    "unauthorized",
                    "forbidden",
                    "not_found",
                    "method_not_allowed",
                    "not_implemented",
                    "too_many_generators",
                    "request_too_large",
                    "overflow",
                    "domain",
                    "release_refused",
                    "unavailable",
                    "shutting_down",
                    "store_config",
                    "internal",
                    "unsupported_media_type",
                    "too_many_failures",
                  ],
                },
                message: { type: "string" },
              },
            },
          },
        },
        IdsResponse: {
          type: "object",
          required: ["name", "ids"],
          properties: {
            name: { type: "string" },
            ids: { type: "array", items: decimal },
            encoded: {
              type: "array",
              items: { type: "string" },
              description:
                "With a public form for the name (`KVID_FORMATS`): each ID's public form, in order.",
            },
          },
        },
        SegmentRange: {
          type: "object",
          required: ["first", "last"],
          properties: { first: decimal, last: decimal },
        },
        SegmentRequest: {
          type: "object",
          required: ["count"],
          properties: {
            count: { type: "integer", minimum: 1, description: "At most the service's cap." },
            floor: {
              ...decimal,
              description: "The highest ID the caller holds: a counter below it is raised first.",
            },
            raiseTo: {
              ...decimal,
              description: "What a counter below `floor` is raised to: at least `floor` " +
                "(default `floor`); past the counter plus one maximum segment only with an " +
                "administrative token.",
            },
            guard: { type: "boolean", default: true },
          },
        },
        SegmentResponse: {
          type: "object",
          required: ["name", "ranges", "raised", "receipt"],
          properties: {
            name: { type: "string" },
            ranges: { type: "array", items: ref("SegmentRange"), minItems: 1 },
            raised: { type: "boolean" },
            receipt: {
              type: "string",
              pattern: "^[A-Za-z0-9_-]{22}$",
              description:
                "Shown by a release of these IDs: remembered by this service instance, good once.",
            },
          },
        },
        ReleaseRequest: {
          type: "object",
          required: ["first", "last", "receipts"],
          properties: {
            first: decimal,
            last: decimal,
            receipts: {
              type: "array",
              items: { type: "string", pattern: "^[A-Za-z0-9_-]{22}$" },
              minItems: 1,
              maxItems: 8,
              description: "The receipts of the (adjacent) segments `first..last` lies in.",
            },
          },
        },
        ReleaseResponse: {
          type: "object",
          required: ["released"],
          properties: { released: { type: "boolean", const: true } },
        },
        StepBody: {
          type: "object",
          required: ["step"],
          properties: { step: { type: ["integer", "null"], minimum: 1 } },
        },
      },
    },
  };
}
