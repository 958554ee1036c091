/**
 * What only the Redis store means: how a reservation is confirmed (`WAIT` for replicas,
 * `WAITAOF` for the server's AOF) and how long that may block. The store's own options
 * ({@linkcode RedisStoreOptions}), raised by those of the generator reserving
 * (`ReserveOptions.generator`: its `replicas`, `waitAof`, `timeout` and `durability`), and by an
 * interleaving store's bounds (`MemberReserveOptions`): the engine never names them.
 *
 * @module
 */

import type {
  AnyReserveOptions,
  DurabilityOptions,
  GeneratorOptions,
} from "../../contract/store.ts";

/**
 * Options of {@linkcode RedisStore}: what a reservation made without a generator (the service's
 * segments, the CLI) is confirmed with, and the least a generator's is. A generator's own
 * `replicas` and `waitAof` options add to these (the stricter wins), and its `timeout` bounds the
 * wait.
 *
 * @example A store that confirms on one replica, whoever reserves
 * ```ts
 * import { RedisStore, type RedisStoreOptions } from "@kvid/core/store";
 * import assert from "node:assert/strict";
 *
 * const options: RedisStoreOptions = { replicas: 1, waitAof: true, waitMs: 2_000 };
 * const store = new RedisStore(() => Promise.reject(new Error("not in this example")), options);
 * assert.ok(store.scripting);
 * ```
 */
export interface RedisStoreOptions {
  /**
   * Hand a range out only once this many replicas acknowledged the increment (`WAIT`); 0: no
   * wait.
   *
   * @default {0}
   */
  replicas?: number;
  /**
   * Hand a range out only once the server confirms the increment is fsynced to its AOF:
   * `WAITAOF 1 0 waitMs` (Redis and Valkey >= 7.2), then `WAIT` for `replicas`. Skipped on a
   * server without `WAITAOF`.
   *
   * @default {false}
   */
  waitAof?: boolean;
  /**
   * How long `WAIT` or `WAITAOF` may block, in ms, for a reservation made without a generator
   * (a generator's: 90% of its `timeout`).
   *
   * @default {5_000}
   */
  waitMs?: number;
}

/** How one reservation is confirmed: what `confirm.ts` and the reserve scripts read. */
export interface Confirmation {
  /** Replicas to `WAIT` for; 0: none. */
  replicas?: number;
  /** Send `WAITAOF 1 0` first. */
  waitAof?: boolean;
  /** How long the confirmation may block, in ms. */
  waitMs?: number;
  /** Bound the confirmation also to this many round trips of the reservation (at least 200 ms). */
  waitRoundTrips?: number;
}

/** A reservation as the Redis store's parts read it: the caller's options and its confirmation. */
export type RedisReserveOptions = AnyReserveOptions & Confirmation;

/** A durability read as the probe takes it, with the replicas confirming each reservation. */
export type RedisDurabilityOptions = DurabilityOptions & { replicas?: number };

/** What the Redis store reads of a generator's options (`ReserveOptions.generator`). */
interface GeneratorConfirmation {
  readonly replicas?: unknown;
  readonly waitAof?: unknown;
  readonly timeout?: unknown;
  readonly durability?: unknown;
}

/** The store's own confirmation, checked. */
export function checkRedisStoreOptions(options: RedisStoreOptions): Required<RedisStoreOptions> {
  if (options === null || typeof options !== "object") {
    throw new TypeError("RedisStore options must be an object");
  }
  const { replicas = 0, waitAof = false, waitMs = 5_000 } = options;
  if (!Number.isSafeInteger(replicas) || replicas < 0) {
    throw new RangeError(
      `RedisStore option replicas must be a non-negative integer, got ${replicas}`,
    );
  }
  if (typeof waitAof !== "boolean") {
    throw new TypeError("RedisStore option waitAof must be a boolean");
  }
  if (!(waitMs >= 1 && waitMs <= 2_147_483_647)) {
    throw new RangeError(`RedisStore option waitMs must be 1 to 2^31-1 ms, got ${waitMs}`);
  }
  return { replicas, waitAof, waitMs };
}

/** The replicas a reservation of `generator` (if any) waits for: the stricter of the two. */
export function replicasFor(
  own: Required<RedisStoreOptions>,
  generator: GeneratorOptions | undefined,
): number {
  const g = generator as GeneratorConfirmation | undefined;
  return typeof g?.replicas === "number" && g.replicas > own.replicas ? g.replicas : own.replicas;
}

/**
 * How a reservation is confirmed: the store's own options raised by the generator's, bounded by
 * an interleaving store's budget. `noAof`: the server was last read as keeping no AOF; under
 * `"best-effort"` the generator accepted that loss, so `WAITAOF`, which cannot confirm there, is
 * not asked.
 */
export function confirmationFor(
  own: Required<RedisStoreOptions>,
  options: AnyReserveOptions,
  noAof: boolean,
): Confirmation {
  const g = options.generator as GeneratorConfirmation | undefined;
  const waitAof = (own.waitAof || g?.waitAof === true) &&
    !(noAof && g?.durability === "best-effort");
  // WAIT returns (with the count it saw) a little before the reservation's deadline.
  const waitMs = options.budgetMs ??
    (typeof g?.timeout === "number" ? g.timeout * 0.9 : own.waitMs);
  return {
    replicas: replicasFor(own, options.generator),
    waitAof,
    waitMs,
    waitRoundTrips: options.budgetRoundTrips,
  };
}
