/**
 * What a {@linkcode DailyId} is given and what it reports: its formats and options, its
 * statistics, the details of its rollback and cleanup events, and a serial taken apart. The
 * generator itself is in `daily.ts`.
 *
 * @module
 */

import type { KvIdError } from "../contract/errors.ts";
import type { KvIdOptions, KvIdStats, RollbackDetail } from "../engine/kvid_options.ts";
import type { RedisSource } from "../contract/redis_client.ts";

/**
 * How {@linkcode DailyId} hands out IDs: `number` (default), `bigint` or zero-padded `string`.
 *
 * @example One serial in each format
 * ```ts
 * import { DailyId, type DailyIdFormat } from "@kvid/core";
 * import assert from "node:assert/strict";
 *
 * // Seq 1 of 2026-11-30 with 4 digits:
 * const shapes: Record<DailyIdFormat, number | bigint | string> = {
 *   number: 202611300001,
 *   bigint: 202611300001n,
 *   string: "202611300001", // keeps the zeros: a fixed-width ticket number
 * };
 * const TICKET = new DailyId("ticket", { digits: 4, format: "string" });
 * for (const id of Object.values(shapes)) assert.ok(TICKET.parse(id).seq === 1);
 * ```
 */
export type DailyIdFormat = "number" | "bigint" | "string";

/**
 * Options of {@linkcode DailyId}. Every one is optional and validated at construction. Those it
 * shares with {@linkcode KvIdOptions} (the step, the reservation, the store and durability
 * options) are taken from there and mean the same for each day's counter, with the same
 * defaults (`minStep` is at most a day's serials; `timeout` also bounds a cleanup). Those below
 * are `DailyId`'s own, or differ from `KvId`'s.
 *
 * @example Order numbers dated in Shanghai
 * ```ts
 * import { DailyId, type DailyIdOptions } from "@kvid/core";
 * import assert from "node:assert/strict";
 *
 * const options = {
 *   timeZone: "Asia/Shanghai", // days start at midnight Shanghai time
 *   digits: 6, // up to 999,999 orders a day
 *   keepDays: 30, // delete the counters of days older than that
 * } satisfies DailyIdOptions;
 * const ORDER_NO = new DailyId("order", options); // validated now, connects on first use
 * assert.ok(ORDER_NO.key === "kvid:daily:order");
 * ```
 */
export interface DailyIdOptions extends
  Pick<
    KvIdOptions,
    | "store"
    | "minStep"
    | "segmentDuration"
    | "prefetchAt"
    | "timeout"
    | "failFast"
    | "guard"
    | "rollbackMargin"
    | "replicas"
    | "waitAof"
    | "stepRule"
    | "durability"
    | "serverSettings"
  > {
  /**
   * The Redis client, or a function returning one (called on first use and shared); when
   * undefined, the one given to {@linkcode configure}. One server: no interleaving.
   *
   * @default {undefined}
   */
  redis?: RedisSource;
  /**
   * The hash holding one counter per day, in fields named `yyyymmdd`.
   *
   * @default {"kvid:daily:<name>"}
   */
  key?: string;
  /**
   * Digits of the per-day sequence: IDs are `yyyymmdd * 10^digits + seq`, seq from 1 to
   * `10^digits - 1`; 6 is 999,999 IDs a day. At most 7 with the `number` format (so IDs stay
   * within `Number.MAX_SAFE_INTEGER` up to year 9999), at most 10 with `bigint` and `string`
   * (so they fit a signed 64-bit integer).
   *
   * @default {6}
   */
  digits?: number;
  /**
   * The IANA time zone whose calendar days the IDs are dated by, e.g. `"Asia/Shanghai"`.
   * Every process issuing IDs of one name should use the same zone.
   *
   * @default {"UTC"}
   */
  timeZone?: string;
  /**
   * `"number"`, `"bigint"`, or `"string"` (the decimal digits, seq zero-padded).
   *
   * @default {"number"}
   */
  format?: DailyIdFormat;
  /**
   * Delete the counters of days older than this many days (today is 0 days old, yesterday 1)
   * in the background whenever this generator starts a day; at least 1. Ages are counted by the
   * earlier of this clock and the store's (Redis `TIME`, a SQL database's clock; Deno KV has
   * none), so a process whose clock runs ahead never deletes a day others still use. With
   * `store`, it (and {@linkcode DailyId.cleanup}) needs a store with `deleteDaysBefore`
   * (`DenoKvStore` has it) or `redis`. Undefined: never.
   *
   * @default {undefined}
   */
  keepDays?: number;
  /**
   * Wall clock in epoch ms, read on every call to date IDs (and by the step sizing); inject
   * one in tests.
   *
   * @default {Date.now}
   */
  clock?: () => number;
  /**
   * Largest step, capped at `10^digits - 1`. By default a thousandth of a day's serials (at
   * least 1 and at least `minStep`), so a restart or a midnight drops few of them: 1,000 with
   * 6 digits.
   *
   * @default {10 ** (digits - 3)}
   */
  maxStep?: number;
}

/**
 * The defaults of `DailyId`'s own options, named by their `@default` in
 * {@linkcode DailyIdOptions} (the options it shares with `KvId` have that generator's defaults,
 * `KVID_DEFAULTS`; `key` is `keyPrefix` then the name; `maxStep` is computed from `digits`;
 * `clock` is `Date.now` as it is when the generator is made, so a stubbed one is seen).
 */
export const DAILY_ID_DEFAULTS: Readonly<{
  keyPrefix: string;
  digits: number;
  timeZone: string;
  format: DailyIdFormat;
}> = Object.freeze({
  keyPrefix: "kvid:daily:",
  digits: 6,
  timeZone: "UTC",
  format: "number",
});

/**
 * A snapshot of a {@linkcode DailyId}'s state, from {@linkcode DailyId.stats}.
 *
 * @example After the first ID of a day
 * ```ts
 * import { DailyId, type DailyIdStats } from "@kvid/core";
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
 * await using ORDER_NO = new DailyId("order", { store, clock: () => Date.UTC(2026, 10, 30, 12) });
 * assert.ok(await ORDER_NO.next() === 20261130000001);
 * const stats: DailyIdStats = ORDER_NO.stats();
 * assert.ok(stats.day === "20261130" && stats.days === 1 && !stats.full);
 * ```
 */
export interface DailyIdStats {
  /** The generator's name. */
  name: string;
  /** The hash holding the per-day counters. */
  key: string;
  /** The time zone days are counted in. */
  timeZone: string;
  /** Digits of the per-day sequence. */
  digits: number;
  /** The day IDs are being issued for (`yyyymmdd`), undefined before the first call. */
  day: string | undefined;
  /** When that day ends (epoch ms of the next local midnight); undefined before the first call. */
  dayEndsAt: number | undefined;
  /** True when the day's serials are used up: calls reject with `"overflow"` until it ends. */
  full: boolean;
  /** Days this generator has started. */
  days: number;
  /** The state of the day's counter generator; undefined before the first call. */
  counter: KvIdStats | undefined;
}

/**
 * The detail of a `"rollback"` event of {@linkcode DailyId}.
 *
 * @example Log a day's counter that went backwards
 * ```ts
 * import { DailyId, type DailyRollbackDetail } from "@kvid/core";
 *
 * const ORDER_NO = new DailyId("order", { timeZone: "Asia/Shanghai" });
 * ORDER_NO.addEventListener("rollback", (e) => {
 *   const { day, floor, last }: DailyRollbackDetail = e.detail;
 *   console.warn(`order counter of ${day} was below seq ${floor}: raised, reserved up to ${last}`);
 * });
 * ```
 */
export interface DailyRollbackDetail extends RollbackDetail {
  /** The day (`yyyymmdd`) whose counter was found below its floor. */
  day: string;
}

/**
 * The detail of a `"cleanup"` event of {@linkcode DailyId} (automatic cleanup, `keepDays`).
 *
 * @example Log the automatic cleanup
 * ```ts
 * import { type DailyCleanupDetail, DailyId } from "@kvid/core";
 *
 * const ORDER_NO = new DailyId("order", { keepDays: 30 });
 * ORDER_NO.addEventListener("cleanup", (e) => {
 *   const { before, deleted, error }: DailyCleanupDetail = e.detail;
 *   if (error) console.error(`could not delete the counters of days before ${before}`, error);
 *   else console.info(`deleted ${deleted} counters of days before ${before}`);
 * });
 * ```
 */
export interface DailyCleanupDetail {
  /** Fields of days before this one (`yyyymmdd`) were deleted. */
  before: string;
  /** How many were deleted; undefined when the cleanup failed. */
  deleted: number | undefined;
  /** Why the cleanup failed, if it did. */
  error: KvIdError | undefined;
}

/**
 * A serial number taken apart by {@linkcode DailyId.parse}.
 *
 * @example Read an order number
 * ```ts
 * import { DailyId, type DailySerial } from "@kvid/core";
 * import assert from "node:assert/strict";
 *
 * const ORDER_NO = new DailyId("order"); // 6 digits of seq after yyyymmdd
 * const serial: DailySerial = ORDER_NO.parse(20261130000042);
 * assert.ok(serial.day === "20261130" && serial.seq === 42);
 * ```
 */
export interface DailySerial {
  /** The day, `yyyymmdd`. */
  day: string;
  /** The sequence number within the day, from 1. */
  seq: number;
}
