/**
 * A counter's name as the service reads it from a URL path: one percent-encoded segment,
 * decoded, never `.` or `..` (clients and proxies resolve those away), and by `KvId`'s rules.
 *
 * @module
 */

import { checkCounterName } from "../contract/validate.ts";
import { errorResponse } from "./respond.ts";

/** The name sent as one path segment, decoded, or a 400 answer. */
export function decodeName(rest: string): string | Response {
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

/**
 * The name of a path segment checked by `KvId`'s rules (`checkCounterName`: no NUL first, no
 * control character), or a 400 answer worded as `/v1/ids` words it.
 */
export function checkedName(rest: string): string | Response {
  const name = decodeName(rest);
  if (typeof name !== "string") return name;
  try {
    checkCounterName("the", "name", name);
  } catch (err) {
    return errorResponse(400, "bad_name", `bad name: ${(err as Error).message.slice(4)}`);
  }
  return name;
}
