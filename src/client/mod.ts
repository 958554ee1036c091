/**
 * The ID service's client side: {@linkcode HttpStore}, a store that reserves its segments from
 * the service (TinyID's client model), and the service's answers as types.
 *
 * ```ts ignore
 * import { KvId } from "@kvid/core";
 * import { HttpStore } from "@kvid/core/client";
 *
 * const store = new HttpStore("https://ids.example.com", { token: Deno.env.get("KVID_TOKEN")! });
 * export const ORDER_ID = new KvId("order", { store });
 * await ORDER_ID.next(); // from a segment of the service's counter "order"
 * ```
 *
 * An edge process (Deno Deploy, a worker) then needs a token, not the store's credentials, and
 * asks the service once per segment, not once per ID. IDs from the service's `/v1/ids` and from
 * every `HttpStore` process on the same name come from one counter: unique, trend-increasing.
 *
 * @module
 */

export { HttpStore, type HttpStoreOptions } from "./http_store.ts";
export type {
  IdsResponse,
  ReleaseResponse,
  SegmentRange,
  SegmentRequest,
  SegmentResponse,
  ServiceError,
  ServiceErrorCode,
  StepBody,
} from "./types.ts";
