/**
 * What a {@linkcode KvId} is given and what it reports: its options, its statistics, and the
 * details of the errors and rollbacks it tells about. The generator itself is in `kvid.ts`.
 *
 * @module
 */

import type { KvIdErrorCode } from "../contract/errors.ts";
import type { RedisSource } from "../contract/redis_client.ts";
import type { StepRule } from "./step.ts";
import type { Store } from "../contract/store.ts";
import type { DurabilityMode } from "../contract/durability.ts";

/**
 * Options of {@linkcode KvId}. Every one is optional and validated at construction. Each
 * `@default` below is the value the generator uses, written once in the engine's `KVID_DEFAULTS`
 * (`src/engine/defaults.ts`).
 *
 * @example Tuned for a busy counter
 * ```ts
 * import { KvId, type KvIdOptions } from "@kvid/core";
 * import assert from "node:assert/strict";
 *
 * const options = {
 *   key: "ids", // HINCRBY ids order <step>
 *   minStep: 100, // the first reservation takes 100 IDs
 *   segmentDuration: 60_000, // aim for one reservation a minute
 *   timeout: 1_000, // a call without an ID after 1 s rejects
 * } satisfies KvIdOptions;
 * const ORDER_ID = new KvId("order", options); // validated now, connects on first use
 * assert.ok(ORDER_ID.key === "ids" && ORDER_ID.stats().step === 100);
 * ```
 */
export interface KvIdOptions {
  /**
   * The Redis client, or a function returning one (called on the first reservation and shared).
   * An array of them: independent servers that interleave blocks of IDs (see `block`).
   *
   * @default {the client given to configure()}
   */
  redis?: RedisSource | RedisSource[];
  /**
   * With several servers in `redis`: IDs per block. IDs are cut in blocks of this size and
   * server `i` of N only issues blocks whose index is `i` modulo N, so the servers never share
   * an ID (see {@linkcode InterleavedStore}). A reservation takes whole blocks. N, `block` and
   * the servers' order are stored with the counter on each server on first use and must not
   * change.
   *
   * @default {1_000}
   */
  block?: number;
  /**
   * A custom store instead of `redis` (advanced: tests, other backends).
   *
   * @default {undefined}
   */
  store?: Store;
  /**
   * The hash holding the counters.
   *
   * @default {"kvid"}
   */
  key?: string;
  /**
   * Smallest and first step (IDs per reservation).
   *
   * @default {1}
   */
  minStep?: number;
  /**
   * Largest step (at least `minStep`).
   *
   * @default {1_000_000}
   */
  maxStep?: number;
  /**
   * The first step, from `minStep` to `maxStep`. A service that knows its rate (or carries a
   * step over from a previous generator) skips the ramp-up.
   *
   * @default {minStep}
   */
  initialStep?: number;
  /**
   * Target lifetime of a segment in ms, which the step adapts to: the one knob between round
   * trips and crash waste. A process that dies without `close()` (`SIGKILL`, a crash) loses what
   * it buffered: its segment and the one reserved ahead, at most 2 x `maxStep` and about 2 x
   * `segmentDuration` of its traffic (at the default 10 min and 1,000,000, up to 2M IDs, 40 s of
   * 50,000 IDs/s; `bench/deploy_bench.ts` measures it, figures in bench/RESULTS.md).
   * Shorter: less lost per crash, one reservation per `segmentDuration` more often. A clean
   * `close()` loses nothing (see `giveBack`).
   *
   * @default {600_000}
   */
  segmentDuration?: number;
  /**
   * Fraction of the current segment left when the next one is reserved in the background,
   * 0 to 1; 0 turns prefetch off.
   *
   * @default {0.2}
   */
  prefetchAt?: number;
  /**
   * How long, in ms, one reservation may take, and so how long a call waits for an ID when
   * none is buffered, before it rejects with a {@linkcode KvIdError}.
   *
   * @default {5_000}
   */
  timeout?: number;
  /**
   * Fail fast during a known outage. Once the store is known down (a call waited `timeout` while
   * reservations failed, or one reservation hung for `timeout`), a call that finds no
   * ID buffered rejects at once with an `"unavailable"` {@linkcode KvIdError} (the last store
   * error as its cause) instead of waiting out `timeout`, while one background probe at a time
   * retries with backoff (at most `timeout / 2` or 2 s apart); the first probe that succeeds
   * serves calls again. False: every such call waits up to `timeout`.
   *
   * @default {true}
   */
  failFast?: boolean;
  /**
   * Hand out `bigint` IDs, exact up to 2^63-1. False: `number`, up to 2^53-1.
   *
   * @default {false}
   */
  bigint?: boolean;
  /**
   * Send this generator's highest reserved ID as a floor with each reservation, so a counter
   * that went backwards (a server that lost data) is raised instead of handing out old IDs.
   * Runs a small Lua script (EVALSHA); a server without scripting falls back to plain
   * `HINCRBY`. False: always plain `HINCRBY`. Either way a counter of interleaved servers is
   * refused (plain `HINCRBY` checks for its layout once per counter, with `HEXISTS`).
   *
   * @default {true}
   */
  guard?: boolean;
  /**
   * How far past the floor a counter found below it is raised.
   *
   * @default {0}
   */
  rollbackMargin?: number;
  /**
   * On `close()`, give every unused ID buffered back, in one script: the range at the top of the
   * counter lowers it (compare-and-set: only if the counter still ends where this generator's
   * last reservation did), the others go to the counter's pool (the hash field
   * `"\0pool:<name>"`, at most 64 ranges), which the next reservation of that counter takes from
   * first, in its own script, only above what the reserving generator already holds. So several
   * processes restarted in turn leave no gap: 4 processes at 50,000 IDs/s restarted with `close()`
   * every 1.25 s in turn handed out every ID the counter rose by (bench/deploy_bench.ts). A pooled
   * range may be handed out a while after IDs above it (trend-increasing, not increasing, across
   * processes, as before). Not done without scripting, with `guard: false` (plain `HINCRBY` never
   * reads the pool) or with interleaved servers; a full pool drops the rest (a gap); a counter
   * found rolled back drops its pool.
   *
   * @default {true}
   */
  giveBack?: boolean;
  /**
   * Remember the step next to the counter (the hash field `"\0step:<name>"`, at most every 10 s,
   * the first time 10 s after the first reservation, and on `close()`) and, without `initialStep`, start from the remembered one (within
   * `minStep`..`maxStep`) instead of `minStep`: a restarted or newly scaled process skips the
   * ramp-up. Needs scripting; the Rust crate ignores the field.
   *
   * @default {true}
   */
  rememberStep?: boolean;
  /**
   * Hand out a reservation's IDs only once this many replicas acknowledged it: `WAIT replicas`
   * on the same connection right after the increment, so a failover to a replica cannot
   * re-issue them. A range not confirmed within `timeout` is spent, never handed out, and the
   * reservation is retried like a lost one. `WAIT` blocks its connection: give the generator a
   * client of its own (see `docs/replicas.md`). Set it to every replica the primary has: a
   * failover (or a partition) can promote one that did not acknowledge, so `durability:
   * "strict"` refuses a primary listing more replicas than this.
   *
   * @default {0}
   */
  replicas?: number;
  /**
   * Hand out a reservation's IDs only once the server confirms the increment is fsynced to its
   * append-only file: `WAITAOF 1 0` on the same connection right after the increment (Redis
   * and Valkey 7.2 and later), before `WAIT` when `replicas` is set. A crash of the server,
   * even of its machine, cannot lose a reservation whose IDs were served. Replicas confirm
   * receipt (`WAIT`), not their own fsync: that would wait for their once-a-second ACK, about a
   * second per reservation with `appendfsync everysec` replicas. A range not confirmed within `timeout` is spent, never handed out;
   * a server that keeps no AOF (`appendonly no`, also when turned off at run time) is refused
   * (`"config"`), unless `durability: "best-effort"` accepted it (the durability probe read
   * `appendonly no`: `WAITAOF` is then not sent). On a server without `WAITAOF` (Redis 7.0, Kvrocks) or a client without
   * `sendCommand` it is skipped: durability is then the server's `appendfsync` (`always`:
   * fsynced before the reply; `everysec`: written before the reply, fsynced within about a
   * second, so a crash of the machine, not of the process, can lose that second). It costs one
   * more round trip per reservation (`bench/waitaof.ts` measures it), none on IDs served from
   * memory. See docs/durability.md.
   *
   * @default {true}
   */
  waitAof?: boolean;
  /**
   * How the step adapts: `"doubling"` (the Rust crate's and Leaf's rule) or `"rate"` (sized by
   * the measured rate; settles in a few reservations). See {@linkcode StepRule}.
   *
   * @default {"doubling"}
   */
  stepRule?: StepRule;
  /**
   * Millisecond clock the step adapts by; inject one in tests. A reading that is not a finite
   * number fails the reservation as `"config"` before any I/O; a reading earlier than the one
   * before leaves the step as it was.
   *
   * @default {() => performance.now()}
   */
  clock?: () => number;
  /**
   * What the generator accepts from its store. Before its first reservation, and again after a
   * reservation failed for a transient reason, a refusal or a rollback, it reads what the
   * server can lose (Redis/Valkey: `INFO`, `CONFIG GET appendfsync`, the hash's `PTTL`, one
   * round trip; see `stats().durability`). `"strict"`: a server that can lose a confirmed
   * reservation (no AOF, or a server that will not say) is refused with a `"config"`
   * {@linkcode KvIdError} naming the fix, and so is a primary listing more replicas than
   * `replicas`; with `replicas` of 1 or more a server without AOF is served (each reservation
   * is on a replica before it is used). `"best-effort"`: served, and a crash of the server can
   * re-issue IDs (docs/durability.md says which). Under both, an eviction
   * policy that can evict the counter (`allkeys-*`) is refused. A custom `store` without
   * `durability()` is trusted.
   *
   * @default {"strict"}
   */
  durability?: DurabilityMode;
  /**
   * Server settings the server will not tell (a managed Redis that forbids `CONFIG` or `INFO`),
   * as you state them, named as in `stats().durability.settings`: e.g. `{ appendonly: "yes" }`.
   * A setting the server tells wins.
   *
   * @default {{}}
   */
  serverSettings?: Record<string, string>;
  /**
   * An independent floor: resolves to the largest ID your own data holds (e.g.
   * `SELECT max(id) FROM orders`), or a second store's mark. Called before the first
   * reservation and whenever the counter is found below this generator's mark; the counter is
   * raised above it (by the guard script) before any ID is served, so a counter lost while no
   * generator lived (a restore from an old backup, `FLUSHALL`, an empty replacement server, a
   * failover to a stale replica) cannot re-issue what your data holds. A rejection fails the
   * reservation as `"unavailable"` (retried). Needs `guard`.
   *
   * @default {undefined}
   */
  floor?: () => bigint | number | Promise<bigint | number>;
}

/**
 * What a generator knows of its store's durability, in {@linkcode KvIdStats.durability}.
 *
 * @example Alert on a store that can lose IDs
 * ```ts
 * import type { DurabilityReport } from "@kvid/core";
 * import assert from "node:assert/strict";
 *
 * const report: DurabilityReport = {
 *   mode: "best-effort",
 *   durable: false,
 *   problems: ["AOF is off (appendonly no, ...): ...; turn AOF on (CONFIG SET appendonly yes, ...)"],
 *   settings: { appendonly: "no" },
 * };
 * assert.ok(report.durable === false && report.problems.length === 1);
 * ```
 */
export interface DurabilityReport {
  /** The generator's `durability` option. */
  mode: DurabilityMode;
  /**
   * What the store said when last read: true when it cannot lose a confirmed reservation;
   * undefined before the first read, or for a store that does not say (trusted).
   */
  durable: boolean | undefined;
  /** What the store can lose, each naming the fix; empty when durable. */
  problems: string[];
  /** The settings read, as the server names them (`"unknown"`: it would not tell). */
  settings: Record<string, string>;
}

/**
 * The detail of an `"expiry"` event of {@linkcode KvId}: a reservation found a TTL on the
 * counters' hash and removed it (in the same atomic step), so the counters never expire.
 *
 * @example
 * ```ts
 * import { KvId, type ExpiryDetail } from "@kvid/core";
 *
 * const ORDER_ID = new KvId("order");
 * ORDER_ID.addEventListener("expiry", (e) => {
 *   const { key, ttlMs } = (e as CustomEvent<ExpiryDetail>).detail;
 *   console.warn(`something set a TTL of ${ttlMs} ms on "${key}": removed; find what sets it`);
 * });
 * ```
 */
export interface ExpiryDetail {
  /** The hash. */
  key: string;
  /** The TTL removed, in ms; -1 when removed without reading it (a server without scripting). */
  ttlMs: number;
}

/**
 * A snapshot of a generator's state, from {@linkcode KvId.stats}.
 *
 * @example After the first ID
 * ```ts
 * import { KvId, type KvIdStats } from "@kvid/core";
 * import type { Store } from "@kvid/core/store";
 * import assert from "node:assert/strict";
 *
 * let counter = 0n; // an in-memory counter standing in for Redis
 * const store: Store = {
 *   reserve(_key, _field, count) {
 *     const first = counter + 1n;
 *     counter += BigInt(count);
 *     return Promise.resolve({ ranges: [{ first, last: counter }], raised: false });
 *   },
 * };
 * await using ORDER_ID = new KvId("order", { store, minStep: 100 });
 * await ORDER_ID.next();
 * const stats: KvIdStats = ORDER_ID.stats();
 * assert.ok(stats.segments === 1 && stats.high === "100" && stats.remaining === 99);
 * assert.ok(ORDER_ID.high === 100n); // the same mark as a bigint
 * console.log(JSON.stringify(stats)); // plain data: strings, numbers, booleans
 * ```
 */
export interface KvIdStats {
  /** The counter's field. */
  name: string;
  /** The counter's hash. */
  key: string;
  /** How many IDs the next reservation asks for. */
  step: number;
  /** IDs buffered in memory (current and next segment). */
  remaining: number;
  /** Reservations that succeeded. */
  segments: number;
  /** Reservations that failed or timed out. */
  failures: number;
  /** Calls that found no ID buffered and waited for a reservation. */
  stalls: number;
  /** Round-trip time of the last successful reservation, in ms. */
  lastFetchMs: number | undefined;
  /**
   * The highest ID reserved so far, as an exact decimal string (`"0"` before the first); the
   * same value as a `bigint` is {@linkcode KvId.high}.
   */
  high: string;
  /** Times the counter was found below `high` and raised (or refused, without `guard`). */
  rollbacks: number;
  /** What the store can lose, as last read from it (see the `durability` option). */
  durability: DurabilityReport;
  /** Times a reservation found a TTL on the hash and removed it (`"expiry"` events). */
  ttlRemovals: number;
  /** True while a reservation is in flight or about to start. */
  reserving: boolean;
  /** The last reservation error, cleared by a success: its code and message. */
  lastError: KvIdErrorSummary | undefined;
}

/**
 * A {@linkcode KvIdError} as plain data, in {@linkcode KvIdStats.lastError}: stats stay
 * JSON-safe (`JSON.stringify(ORDER_ID.stats())` works).
 *
 * @example Report the last error in a health check
 * ```ts
 * import type { KvIdErrorSummary } from "@kvid/core";
 * import assert from "node:assert/strict";
 *
 * const last: KvIdErrorSummary = { code: "timeout", message: "no ID within 5000 ms" };
 * assert.ok(JSON.parse(JSON.stringify(last)).code === "timeout");
 * ```
 */
export interface KvIdErrorSummary {
  /** What went wrong ({@linkcode KvIdError.code}). */
  code: KvIdErrorCode;
  /** The error's message. */
  message: string;
}

/**
 * The detail of a `"rollback"` event of {@linkcode KvId}.
 *
 * @example Log a counter that went backwards
 * ```ts
 * import { KvId, type RollbackDetail } from "@kvid/core";
 *
 * const ORDER_ID = new KvId("order");
 * ORDER_ID.addEventListener("rollback", (e) => {
 *   const { floor, last }: RollbackDetail = e.detail;
 *   console.warn(`counter "order" was below ID ${floor}: raised, reserved up to ${last}`);
 * });
 * ```
 */
export interface RollbackDetail {
  /** The generator's high-water mark, sent as the floor. */
  floor: bigint;
  /** The range reserved after the counter was raised: its last ID. */
  last: bigint;
}
