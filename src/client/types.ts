/**
 * The ID service's answers as TypeScript types, shared by the service (`@kvid/core/server`),
 * its client (`@kvid/core/client`) and anyone generating a client from its OpenAPI document.
 *
 * @module
 */

/** The `error.code` values of the service, stable to branch on. */
export type ServiceErrorCode =
  | "bad_request"
  | "bad_name"
  | "bad_count"
  | "bad_segment"
  | "unauthorized"
  | "forbidden"
  | "not_found"
  | "method_not_allowed"
  | "not_implemented"
  | "too_many_generators"
  | "request_too_large"
  | "overflow"
  | "domain"
  | "release_refused"
  | "unavailable"
  | "shutting_down"
  | "store_config"
  | "internal"
  | "unsupported_media_type"
  | "too_many_failures";

/**
 * Every error answer: `{"error": {"code", "message"}}` with the HTTP status.
 *
 * @example
 * ```ts
 * import type { ServiceError } from "@kvid/core/client";
 * import assert from "node:assert/strict";
 *
 * const body: ServiceError = JSON.parse('{"error":{"code":"forbidden","message":"no"}}');
 * assert.ok(body.error.code === "forbidden");
 * ```
 */
export interface ServiceError {
  /** What went wrong. */
  error: {
    /** Stable, see {@linkcode ServiceErrorCode}. */
    code: ServiceErrorCode;
    /** For people: what was wrong and what to do. */
    message: string;
  };
}

/**
 * `POST /v1/ids/{name}` and `/v1/daily/{name}` with `Accept: application/json`.
 *
 * @example
 * ```ts
 * import type { IdsResponse } from "@kvid/core/client";
 * import assert from "node:assert/strict";
 *
 * const body: IdsResponse = { name: "order", ids: ["9007199254740993"] };
 * assert.ok(BigInt(body.ids[0]) === 2n ** 53n + 1n); // exact: strings, not numbers
 * ```
 */
export interface IdsResponse {
  /** The name asked for. */
  name: string;
  /** The IDs (or daily serials) in increasing order, as decimal strings. */
  ids: string[];
}

/**
 * An inclusive range of IDs as decimal strings (exact to 2^63-1).
 *
 * @example
 * ```ts
 * import type { SegmentRange } from "@kvid/core/client";
 * import assert from "node:assert/strict";
 *
 * const r: SegmentRange = { first: "201", last: "300" };
 * assert.ok(BigInt(r.last) - BigInt(r.first) + 1n === 100n);
 * ```
 */
export interface SegmentRange {
  /** The first ID. */
  first: string;
  /** The last ID, at least `first`. */
  last: string;
}

/**
 * `POST /v1/segments/{name}`'s body: one reservation, as the engine makes it of any store.
 *
 * @example
 * ```ts
 * import type { SegmentRequest } from "@kvid/core/client";
 * import assert from "node:assert/strict";
 *
 * const body: SegmentRequest = { count: 1000, floor: "300", raiseTo: "1300", guard: true };
 * assert.ok(JSON.stringify(body).includes('"floor":"300"'));
 * ```
 */
export interface SegmentRequest {
  /** How many IDs, 1 to the service's segment cap (default 1,000,000). */
  count: number;
  /** The highest ID the caller already holds, decimal; the counter is raised if below it. */
  floor?: string;
  /** What a counter found below `floor` is raised to first, decimal. */
  raiseTo?: string;
  /**
   * Check the floor (the guard).
   *
   * @default {true}
   */
  guard?: boolean;
}

/**
 * `POST /v1/segments/{name}`'s answer: the reserved ranges, and whether the counter was raised.
 *
 * @example
 * ```ts
 * import type { SegmentResponse } from "@kvid/core/client";
 * import assert from "node:assert/strict";
 *
 * const body: SegmentResponse = {
 *   name: "order",
 *   ranges: [{ first: "1", last: "1000" }],
 *   raised: false,
 *   receipt: "q3vJd0Zr8sXmE2kWn5tYbA",
 * };
 * assert.ok(body.ranges.length === 1);
 * ```
 */
export interface SegmentResponse {
  /** The counter's name. */
  name: string;
  /** The reserved IDs, increasing, disjoint. */
  ranges: SegmentRange[];
  /** True when the counter was below `floor` and raised first (a rollback). */
  raised: boolean;
  /**
   * What a release of these IDs must show ({@linkcode ReleaseRequest}): random, remembered by
   * this service instance with the ranges and the token they went to, good for one release.
   */
  receipt: string;
}

/**
 * `POST /v1/segments/{name}/release`'s body: the unused top of the caller's segments, and their
 * receipts. Refused (409 `release_refused`) unless the receipts are this token's, unused, cover
 * `first..last`, `last` is their top and the counter is still at `last`.
 *
 * @example
 * ```ts
 * import type { ReleaseRequest } from "@kvid/core/client";
 * import assert from "node:assert/strict";
 *
 * // The segment 1..1000 came with the receipt "q3vJd0Zr8sXmE2kWn5tYbA"; 1..600 were used.
 * const body: ReleaseRequest = { first: "601", last: "1000", receipts: ["q3vJd0Zr8sXmE2kWn5tYbA"] };
 * assert.ok(body.receipts.length === 1);
 * ```
 */
export interface ReleaseRequest extends SegmentRange {
  /** The receipts of the segments `first..last` lies in (adjacent ones, at most 8). */
  receipts: string[];
}

/**
 * `POST /v1/segments/{name}/release`'s answer: given back (anything else is a 409
 * `release_refused` saying why).
 *
 * @example
 * ```ts
 * import type { ReleaseResponse } from "@kvid/core/client";
 * const body: ReleaseResponse = { released: true }; // the counter is back at first - 1
 * ```
 */
export interface ReleaseResponse {
  /** True: the counter was set back to `first - 1` (nobody had reserved since). */
  released: boolean;
}

/**
 * `GET /v1/segments/{name}/step`'s answer (and `PUT`'s body): the remembered step, or null.
 *
 * @example
 * ```ts
 * import type { StepBody } from "@kvid/core/client";
 * const body: StepBody = { step: 4096 };
 * ```
 */
export interface StepBody {
  /** The step the counter's processes last used, or null when none is remembered. */
  step: number | null;
}
