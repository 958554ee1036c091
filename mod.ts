/**
 * Globally unique, trend-increasing 64-bit IDs in segment mode on Redis or Kvrocks.
 *
 * Each generator reserves a range of IDs with one atomic `HINCRBY <key> <name> <step>`, hands
 * them out from memory, reserves the next range in the background before the current one runs
 * out, and sizes ranges by how fast IDs are used. No runtime dependencies: pass a `jsr:@db/redis`
 * client as is, or a node-redis / ioredis client through {@linkcode fromNodeRedis} /
 * {@linkcode fromIoredis}.
 *
 * @example Declare at module scope, connect on first use
 * ```ts ignore
 * import { configure, KvId } from "@kvid/core";
 * import { connect } from "jsr:@db/redis";
 *
 * configure({ redis: () => connect({ hostname: "127.0.0.1", port: 6379 }) });
 * export const ORDER_ID = new KvId("order");
 *
 * const id = await ORDER_ID.next(); // 1, 2, 3, ... one round trip per segment
 * ```
 *
 * @module
 */

export {
  type BunRedisLike,
  fromBunRedis,
  fromIoredis,
  fromNodeRedis,
  type IoredisLike,
  type NodeRedisLike,
} from "./src/adapters.ts";
export { configure, type KvIdDefaults } from "./src/configure.ts";
export { shutdown } from "./src/shutdown.ts";
export { DailyId, type DailyIdConstructor } from "./src/daily.ts";
export type {
  DailyCleanupDetail,
  DailyIdFormat,
  DailyIdOptions,
  DailyIdStats,
  DailyRollbackDetail,
  DailySerial,
} from "./src/daily_options.ts";
export { KvIdError, type KvIdErrorCode, type KvIdErrorOptions } from "./src/errors.ts";
export { KvId, type KvIdConstructor } from "./src/kvid.ts";
export type {
  KvIdErrorSummary,
  KvIdOptions,
  KvIdStats,
  RollbackDetail,
} from "./src/kvid_options.ts";
export type { StepRule } from "./src/step.ts";
export type { RedisClient, RedisSource } from "./src/redis_store.ts";
// Store authors: Store, Reservation, ReserveOptions, IdRange, InterleavedStore are in
// "@kvid/core/store"; the Deno KV backend is "@kvid/core/deno-kv".
