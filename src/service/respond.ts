/**
 * The service's responses: errors as `{"error": {"code", "message"}}` and a status, never a
 * stack; plain text; neither ever cached.
 *
 * @module
 */

import type { ServiceErrorCode } from "../client/types.ts";
import { isTransient, type KvIdErrorCode } from "../contract/errors.ts";

export type { ServiceErrorCode };

/**
 * Whether a client should retry a request that failed with `code`: a transient store failure
 * ({@linkcode isTransient}), or a generator closed under it (the service stopping, or the name
 * evicted while the request waited). Answered 503 with `Retry-After`.
 */
export function worthRetry(code: KvIdErrorCode): boolean {
  return isTransient(code) || code === "closed";
}

/** The 503 of a store that is down or slow: `Retry-After: 1`. */
export function unavailable(): Response {
  return errorResponse(503, "unavailable", "the ID store is unavailable: retry shortly", {
    "retry-after": "1",
  });
}

/** A JSON error response. */
export function errorResponse(
  status: number,
  code: ServiceErrorCode,
  message: string,
  headers: Record<string, string> = {},
): Response {
  const body = JSON.stringify({ error: { code, message } }) + "\n";
  return respond(status, body, "application/json; charset=utf-8", headers);
}

/** A plain-text response, never cached. */
export function text(status: number, body: string, headers: Record<string, string> = {}): Response {
  return respond(status, body, "text/plain; charset=utf-8", headers);
}

function respond(
  status: number,
  body: string,
  type: string,
  headers: Record<string, string>,
): Response {
  return new Response(body, {
    status,
    headers: { "content-type": type, "cache-control": "no-store", ...headers },
  });
}
