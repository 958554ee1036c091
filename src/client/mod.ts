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
 * The prefetch hides the HTTP round trip: `next()` on `HttpStore` costs what it costs on
 * `RedisStore` (`bench/http_store_bench.ts` measures both; figures in bench/RESULTS.md). The
 * service and deployment: [docs/service.md](docs/service.md).
 *
 * Tested (tests/client/http_store_test.ts): the shared store spec through the service on Redis; 4
 * processes of `KvId` on `HttpStore` against 2 service instances on one Redis, one instance
 * killed and restarted mid-run: every call settled, no ID twice.
 *
 * @module
 */

export { HttpStore, type HttpStoreOptions } from "./http_store.ts";
export type {
  IdsResponse,
  ReleaseRequest,
  ReleaseResponse,
  SegmentRange,
  SegmentRequest,
  SegmentResponse,
  ServiceError,
  ServiceErrorCode,
  StepBody,
} from "./types.ts";
