/**
 * The answer to a request refused because the store can lose reservations (a generator's
 * `"not-durable"` refusal under `KVID_DURABILITY=strict`): 503 with the store's problems and the
 * service's own knob, not the library's option.
 *
 * @module
 */

import { refusalWith } from "../contract/durability.ts";
import type { KvIdError } from "../contract/errors.ts";
import { errorResponse } from "./respond.ts";

/** The service's opt-out of the durability check, as its operator sets it. */
export const SERVICE_OPT_OUT =
  'KVID_DURABILITY=best-effort (createHandler\'s option durability: "best-effort")';

/** 503 `unavailable` saying why: the store can lose reservations, and the fix. */
export function notDurable(err: KvIdError): Response {
  return errorResponse(503, "unavailable", refusalWith(err, SERVICE_OPT_OUT), {
    "retry-after": "5",
  });
}
