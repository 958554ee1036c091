/**
 * The service's responses: errors as `{"error": {"code", "message"}}` and a status, never a
 * stack; plain text; neither ever cached.
 *
 * @module
 */

import type { ServiceErrorCode } from "../client/types.ts";

export type { ServiceErrorCode };

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
