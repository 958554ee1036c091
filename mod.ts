/**
 * Globally unique, trend-increasing 64-bit IDs in segment mode, for Deno, Node and Bun: each
 * generator reserves a range of IDs with one atomic operation on its store (Redis, Valkey, Kvrocks,
 * Deno KV, PostgreSQL, MySQL/MariaDB), hands them out from memory, and reserves the next range in
 * the background before the current one runs out. No runtime dependencies in the core.
 *
 * No server: counters in a Deno KV database (a path, or `":memory:"`; `--unstable-kv`):
 *
 * ```ts
 * import { KvId } from "@kvid/core";
 * import { DenoKvStore } from "@kvid/core/deno-kv";
 * import assert from "node:assert/strict";
 *
 * using store = new DenoKvStore(":memory:");
 * await using ORDER_ID = new KvId("order", { store });
 * assert.equal(await ORDER_ID.next(), 1); // then 2, 3, ...: one commit per segment
 * assert.deepEqual(await ORDER_ID.nextBatch(3), [2, 3, 4]);
 * ```
 *
 * On Redis (or Valkey, Kvrocks): a `jsr:@db/redis` client as is, node-redis, ioredis or Bun's
 * client through {@linkcode fromNodeRedis}, {@linkcode fromIoredis}, {@linkcode fromBunRedis}.
 * Declared at module scope, the generator does no I/O until its first call:
 *
 * ```ts ignore
 * import { createClient } from "npm:redis@5";
 * import { configure, fromNodeRedis, KvId, shutdown } from "@kvid/core";
 *
 * // Called once, on the first reservation of any generator; the client is shared.
 * configure({
 *   redis: async () => fromNodeRedis(await createClient({ url: "redis://127.0.0.1:6379" }).connect()),
 * });
 * export const ORDER_ID = new KvId("order");
 * console.log(await ORDER_ID.next()); // 1: one HINCRBY kvid order <step> per segment
 * await shutdown(); // every generator, then the client the factory made
 * ```
 *
 * Date-prefixed serials (`yyyymmdd` then a per-day sequence) with {@linkcode DailyId}:
 *
 * ```ts
 * import { DailyId } from "@kvid/core";
 * import { DenoKvStore } from "@kvid/core/deno-kv";
 * import assert from "node:assert/strict";
 *
 * using store = new DenoKvStore(":memory:");
 * const clock = () => Date.UTC(2026, 10, 30, 4); // the wall clock, here held still
 * await using ORDER_NO = new DailyId("order", { store, timeZone: "Asia/Shanghai", clock });
 * assert.equal(await ORDER_NO.next(), 20261130000001);
 * assert.deepEqual(ORDER_NO.parse(20261130000042), { day: "20261130", seq: 42 });
 * ```
 *
 * The ID service (any language, over HTTP, with tokens), and `KvId` in an edge process on the
 * segments it reserves (`HttpStore`: a token, not the store's credentials):
 *
 * ```ts
 * import { KvId } from "@kvid/core";
 * import { HttpStore } from "@kvid/core/client";
 * import { DenoKvStore } from "@kvid/core/deno-kv";
 * import { createHandler } from "@kvid/core/server";
 * import assert from "node:assert/strict";
 *
 * using kv = new DenoKvStore(":memory:");
 * const token = "app-token-0123456789";
 * await using service = createHandler({ store: kv, tokens: `${token}:order`, log() {} });
 * await using server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen() {} }, service.fetch);
 * const url = `http://127.0.0.1:${server.addr.port}`;
 * const headers = { authorization: `Bearer ${token}` };
 * const res = await fetch(`${url}/v1/ids/order?count=2`, { method: "POST", headers });
 * assert.equal(await res.text(), "1\n2\n");
 *
 * await using ORDER_ID = new KvId("order", { store: new HttpStore(url, { token }) });
 * assert.ok(await ORDER_ID.next() > 2); // the same counter: never an ID the service gave
 * ```
 *
 * ## Entry points
 *
 * | import                | what it holds                                                                                              |
 * | --------------------- | ---------------------------------------------------------------------------------------------------------- |
 * | `@kvid/core`          | `KvId`, `DailyId`, `configure`, `shutdown`, the Redis client adapters, `KvIdError`, option and stats types |
 * | `@kvid/core/deno-kv`  | `DenoKvStore`: counters in Deno KV (Deno, Deno Deploy)                                                     |
 * | `@kvid/core/store`    | for store authors: the `Store` contract, `RedisStore`, `InterleavedStore` over several stores              |
 * | `@kvid/core/postgres` | `PostgresStore`: counters in a PostgreSQL table (`npm:pg` or `npm:postgres`)                               |
 * | `@kvid/core/mysql`    | `MySqlStore`: counters in a MySQL or MariaDB table (`npm:mysql2`)                                          |
 * | `@kvid/core/cli`      | the admin CLI (`kvid list`, `next`, `floor`, `durability`, `cleanup`, ...)                                 |
 * | `@kvid/core/server`   | the ID service as a handler (`createHandler`, `deno serve`): tokens, metrics, a status page                |
 * | `@kvid/core/serve`    | the ID service as a program with its own listener and connection limits                                    |
 * | `@kvid/core/client`   | `HttpStore`: `KvId` on segments reserved from the ID service; the service's answer types                   |
 * | `@kvid/core/codec`    | public forms of IDs: fixed width, radix 36/62, prefixes, keyed (FF1) encryption; `withCodec`               |
 *
 * ## Read next
 *
 * - [How it works](docs/how-it-works.md): segments, prefetch, the step rules, the remembered step.
 * - [Options, errors and the rest of the API](docs/api.md): every option with its default, every
 *   error code and what is retried.
 * - [Guarantees by setup](docs/guarantees.md): unique and exact up to what, per mode, client and
 *   server.
 * - [Durability](docs/durability.md): what each server setting loses, `durability`, `waitAof`,
 *   `floor`.
 * - [Replicated Redis](docs/replicas.md): `replicas` and `WAIT`, Sentinel, Cluster, Kvrocks.
 * - [Operating it](docs/operations.md): restarts and give-back, outages and `failFast`, data loss,
 *   reading `stats()` and events.
 * - [Adding a store](docs/adding-a-store.md): the files a new backend touches.
 * - [Clients](docs/clients.md): the adapters, `configure` and `shutdown`.
 * - [The ID service](docs/service.md): its variables, endpoints, tokens, status page, deployment.
 * - [Public IDs](docs/public-ids.md): the forms of `@kvid/core/codec`.
 * - [Benchmarks](bench/RESULTS.md), with the machine and the date, and
 *   [what each bench measures](bench/README.md).
 *
 * @module
 */

// Installs the resolver of the `redis` option and configure()'s default: the engine itself names
// no store (src/runtime/store_source.ts).
import "./src/stores/redis/redis_option.ts";

export {
  type BunRedisLike,
  fromBunRedis,
  fromIoredis,
  fromNodeRedis,
  type IoredisLike,
  type NodeRedisLike,
} from "./src/stores/redis/adapters.ts";
export { configure, type KvIdDefaults } from "./src/stores/redis/configure.ts";
export { shutdown } from "./src/runtime/shutdown.ts";
export { DailyId, type DailyIdConstructor } from "./src/daily/daily.ts";
export type {
  DailyCleanupDetail,
  DailyIdFormat,
  DailyIdOptions,
  DailyIdStats,
  DailyRollbackDetail,
  DailySerial,
} from "./src/daily/daily_options.ts";
export {
  KvIdError,
  type KvIdErrorCode,
  type KvIdErrorOptions,
  type KvIdErrorReason,
} from "./src/contract/errors.ts";
export { KvId, type KvIdConstructor } from "./src/engine/kvid.ts";
export type {
  DurabilityReport,
  ExpiryDetail,
  KvIdErrorSummary,
  KvIdOptions,
  KvIdStats,
  RollbackDetail,
} from "./src/engine/kvid_options.ts";
export type { DurabilityMode } from "./src/contract/durability.ts";
export type { StepRule } from "./src/engine/step.ts";
export type { Codec } from "./src/codec/codec.ts";
export type { RedisClient, RedisSource } from "./src/contract/redis_client.ts";
// Store authors: Store, Reservation, ReserveOptions, IdRange, InterleavedStore are in
// "@kvid/core/store"; the Deno KV backend is "@kvid/core/deno-kv"; public forms of IDs (fixed
// width, radix 36/62, keyed FF1 encryption) are "@kvid/core/codec".
