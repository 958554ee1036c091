/**
 * The service's error responses: `{"error": {"code", "message"}}` and a status, never a stack.
 *
 * @module
 */

/** The `error.code` values of the service. */
export type ServiceErrorCode =
  | "bad_name"
  | "bad_count"
  | "unauthorized"
  | "forbidden"
  | "not_found"
  | "method_not_allowed"
  | "too_many_generators"
  | "request_too_large"
  | "unavailable"
  | "shutting_down"
  | "internal";

/** A JSON error response. */
export function errorResponse(
  status: number,
  code: ServiceErrorCode,
  message: string,
  headers: Record<string, string> = {},
): Response {
  return new Response(JSON.stringify({ error: { code, message } }) + "\n", {
    status,
    headers: {
      "content-type": "application/json; charset=utf-8",
      "cache-control": "no-store",
      ...headers,
    },
  });
}
