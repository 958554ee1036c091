/**
 * {@linkcode DailyId}: date-prefixed serial numbers (`yyyymmdd` then a per-day sequence), on the
 * segment engine of {@linkcode KvId}.
 *
 * This file is the interface and its documentation. The generator is `daily_generator.ts`; the
 * options checked with their defaults, `daily_config.ts`; the day switch, `day_switch.ts`; the
 * cleanup, `day_cleanup.ts`; the options and stats types, `daily_options.ts`; the calendar,
 * `calendar.ts`; how many days a cleanup keeps, `keep_days.ts` (the store deletes them).
 *
 * @module
 */

import type { Codec } from "../codec/codec.ts";
import type {
  DailyCleanupDetail,
  DailyIdFormat,
  DailyIdOptions,
  DailyIdStats,
  DailyRollbackDetail,
  DailySerial,
} from "./daily_options.ts";
import { DailyIdImpl } from "./daily_generator.ts";

export { MAX_DIGITS } from "./daily_config.ts";

/**
 * Date-prefixed daily serial numbers, such as order numbers `20261130000001`: IDs are
 * `yyyymmdd * 10^digits + seq`, seq restarting at 1 each day in the configured time zone.
 *
 * One counter per day, a field `yyyymmdd` of the hash `kvid:daily:<name>`, reserved in segments
 * like {@linkcode KvId} (one `HINCRBY` per segment, prefetch, dynamic step); the first use of a
 * day creates its field with that same call. The day comes from the process clock: at the local
 * midnight, IDs buffered for the previous day are dropped, never issued with yesterday's date.
 *
 * Events: `"rollback"` (`CustomEvent<DailyRollbackDetail>`), `"cleanup"`
 * (`CustomEvent<DailyCleanupDetail>`, with `keepDays`), `"expiry"` (`CustomEvent<ExpiryDetail>`:
 * a TTL on the hash found and removed, as on {@linkcode KvId}).
 *
 * ## Daily serials
 *
 * ```ts ignore
 * import { createClient } from "npm:redis@5";
 * import { DailyId, fromNodeRedis, shutdown } from "@kvid/core";
 *
 * // A factory: the client is the library's, shutdown() closes it.
 * const redis = async () =>
 *   fromNodeRedis(await createClient({ url: "redis://127.0.0.1:6379" }).connect());
 * export const ORDER_NO = new DailyId("order", { redis, timeZone: "Asia/Shanghai" });
 * await ORDER_NO.next(); // 20261130000001, 20261130000002, ...
 * ORDER_NO.parse(20261130000042); // { day: "20261130", seq: 42 }
 * await shutdown(); // the generator, then the client: the script exits
 * ```
 *
 * IDs are `yyyymmdd * 10^digits + seq`, seq starting again at 1 each day in `timeZone` (an IANA name,
 * default `"UTC"`). Each day has its own counter, the field `yyyymmdd` of the hash `kvid:daily:<name>`
 * (`key` changes it), reserved in segments like `KvId` (one `HINCRBY` per segment, prefetch, dynamic
 * step); the first call of a day creates the field in that same call.
 *
 * - `digits` (default 6: 999,999 IDs a day): at most 7 with `format: "number"` (the default), so IDs
 *   stay below `Number.MAX_SAFE_INTEGER` up to year 9999; at most 10 with `format: "bigint"` or
 *   `"string"` (zero-padded, e.g. `"20261130000001"`).
 * - `maxStep` defaults to a thousandth of a day's serials; a new day starts at the step the day before
 *   reached (no ramp-up after midnight). `clock` (epoch ms, default `Date.now`) is the wall clock that
 *   dates the IDs.
 * - When seq would pass `10^digits - 1`, calls reject with an `"overflow"` `KvIdError` until the day
 *   ends: an ID never spills into another day's numbers.
 * - The forms are codecs of `@kvid/core/codec` (`codec`, from `dailyForm(format, digits)`). Daily
 *   serials reveal the date and the day's volume; to show ones that reveal neither, wrap a `number`
 *   or `bigint` DailyId: `withCodec(ORDER_NO, encrypted(decimal(14), { keys, tweak: "order" }))`
 *   (keep the serial itself as the database key).
 *
 * **Midnight.** Each process dates IDs by its own clock. At local midnight (computed correctly on 23-
 * and 25-hour DST days and where midnight does not exist), IDs buffered for the previous day are
 * dropped; a call still waiting gets an ID of the new day; a process never goes back to an earlier
 * day, even if its clock steps back.
 *
 * **Clock skew** cannot produce duplicates (each day's counter is atomic on the server). What it does
 * cause is IDs dated by a wrong clock: a process whose clock is _s_ seconds fast issues tomorrow-dated
 * IDs during the last _s_ seconds of the day; a slow one keeps issuing yesterday-dated IDs after
 * midnight. So IDs from different processes are not in order around midnight. Use one `timeZone` for
 * every process of a name, and NTP.
 *
 * **Cleanup.** `await ORDER_NO.cleanup({ keepDays: 30 })` deletes the fields of days more than 30 days
 * old (today is 0 days old) and nothing else. `keepDays` in the constructor does it in the background
 * when a day starts (a `"cleanup"` event reports it). Deleting a day that some process still uses
 * would restart its seq and repeat IDs, so a day's age is counted by **two clocks, the process's and
 * the Redis server's** (`TIME`, the one clock every process shares), and a day is deleted only when it
 * is more than `keepDays` days old by both:
 *
 * - a process whose clock runs ahead (by any amount) cannot delete a day that processes with right
 *   clocks use: tested with a clock two days ahead and `keepDays: 1`;
 * - a process whose clock lags the server's by less than `keepDays` days (23-hour days in zones with
 *   DST) never finds its day deleted, whoever cleans up; `keepDays` is at least 1;
 * - a process lagging more than that can: keep clocks within a day of the server's (NTP), or raise
 *   `keepDays`.
 *
 * The cleanup takes every `yyyymmdd` field of the DailyId's hash, except a counter of interleaved
 * servers: keep `KvId` counters named like dates out of that hash (the default keys, `kvid` and
 * `kvid:daily:<name>`, never meet).
 *
 * @example Order numbers in Shanghai time
 * ```ts ignore
 * import { DailyId } from "@kvid/core";
 * import { connect } from "jsr:@db/redis";
 *
 * const redis = await connect({ hostname: "127.0.0.1", port: 6379 });
 * export const ORDER_NO = new DailyId("order", { redis, timeZone: "Asia/Shanghai" });
 * const no: number = await ORDER_NO.next(); // 20261130000001, 20261130000002, ...
 * console.log(ORDER_NO.parse(no)); // { day: "20261130", seq: 1 }
 * await ORDER_NO.close();
 * redis.close();
 * ```
 *
 * @typeParam T `number` by default; `bigint` or `string` with the `format` option.
 */
export interface DailyId<T extends number | bigint | string = number> extends EventTarget {
  /** The generator's name. */
  readonly name: string;
  /** The hash holding the per-day counters. */
  readonly key: string;
  /** Digits of the per-day sequence. */
  readonly digits: number;
  /** The canonical name of the time zone days are counted in. */
  readonly timeZone: string;
  /** How IDs are handed out. */
  readonly format: DailyIdFormat;
  /**
   * The form IDs are handed out in, as a codec of `@kvid/core/codec` (`dailyForm(format,
   * digits)`): `codec.encode(yyyymmdd * 10^digits + seq)` is the ID, `codec.decode` reads one
   * back. Other forms wrap a `number` or `bigint` DailyId: `withCodec(ORDER_NO, prefix("BIZ",
   * dailyForm("string", 6)))` hands out `"BIZ20261130000001"`.
   */
  readonly codec: Codec<T>;
  /**
   * The next ID of today. Resolves without I/O while IDs are buffered; otherwise waits for a
   * reservation, at most `timeout` ms. Rejects with a {@linkcode KvIdError}: `"overflow"` when
   * today's serials are used up, `"timeout"`, `"closed"`, ...
   */
  next(): Promise<T>;
  /**
   * `count` IDs of one day, increasing, with one await and few round trips. Rejects as
   * {@linkcode DailyId.next} does, and with a RangeError unless `count` is an integer from 0 to
   * 10,000,000.
   */
  nextBatch(count: number): Promise<T[]>;
  /**
   * Take an ID of this generator's shape apart.
   *
   * @throws {RangeError} The ID does not have `8 + digits` decimal digits.
   */
  parse(id: number | bigint | string): DailySerial;
  /**
   * Delete the counters of days more than `keepDays` days old (today is 0 days old, in this
   * generator's zone) by both this generator's clock and the store's (Redis `TIME`, the
   * database's clock of a SQL store; Deno KV has none: this clock alone): a clock running ahead
   * never deletes a day that processes with right clocks still use. `keepDays` is at least 1,
   * so a process whose clock lags the server's by less than a day never finds its day gone
   * (which would restart its seq and repeat IDs). Fields that are not `yyyymmdd` dates are left
   * alone. Resolves to how many fields were deleted. Rejects with a RangeError for a `keepDays`
   * out of 1 to 100,000, and with a {@linkcode KvIdError}: `"timeout"` when the store takes
   * longer than `timeout`, `"config"` without a store that can delete days, the store's failure.
   */
  cleanup(options: { keepDays: number }): Promise<number>;
  /** A snapshot of the generator's state. */
  stats(): DailyIdStats;
  /**
   * Stop: pending and later calls reject with a `"closed"` {@linkcode KvIdError}; waits for
   * in-flight reservations and cleanups. The Redis client is the caller's to close.
   */
  close(): Promise<void>;
  /** Same as {@linkcode DailyId.close}, for `await using`. */
  [Symbol.asyncDispose](): Promise<void>;
  /** Listen for `"rollback"`, with `event.detail` typed ({@linkcode DailyRollbackDetail}). */
  addEventListener(
    type: "rollback",
    listener: ((event: CustomEvent<DailyRollbackDetail>) => void) | null,
    options?: boolean | AddEventListenerOptions,
  ): void;
  /** Listen for `"cleanup"`, with `event.detail` typed ({@linkcode DailyCleanupDetail}). */
  addEventListener(
    type: "cleanup",
    listener: ((event: CustomEvent<DailyCleanupDetail>) => void) | null,
    options?: boolean | AddEventListenerOptions,
  ): void;
  /** Listen for an event, as on any `EventTarget`. */
  addEventListener(
    type: string,
    listener: EventListenerOrEventListenerObject | null,
    options?: boolean | AddEventListenerOptions,
  ): void;
}

/**
 * The constructor of {@linkcode DailyId}.
 *
 * @example The `format` option picks the type of the IDs
 * ```ts
 * import { DailyId } from "@kvid/core";
 * import assert from "node:assert/strict";
 *
 * const ORDER_NO: DailyId<number> = new DailyId("order"); // 20261130000001
 * const BATCH_NO: DailyId<bigint> = new DailyId("batch", { format: "bigint", digits: 10 });
 * const TICKET: DailyId<string> = new DailyId("ticket", { format: "string", digits: 4 });
 * assert.ok(ORDER_NO.digits === 6 && BATCH_NO.digits === 10 && TICKET.digits === 4);
 * ```
 */
export interface DailyIdConstructor {
  /**
   * A generator of `bigint` IDs.
   *
   * @param name The generator's name; its hash is `kvid:daily:<name>` unless `key` is given.
   * @param options See {@linkcode DailyIdOptions}.
   * @throws {TypeError} A name that is not a non-empty string, an unknown option, an option of
   *   the wrong type, `keepDays` with a store that cannot delete days.
   * @throws {RangeError} A number out of its range, an unknown time zone.
   */
  new (name: string, options: DailyIdOptions & { format: "bigint" }): DailyId<bigint>;
  /**
   * A generator of string IDs, `yyyymmdd` then seq zero-padded to `digits`.
   *
   * @param name The generator's name; its hash is `kvid:daily:<name>` unless `key` is given.
   * @param options See {@linkcode DailyIdOptions}.
   * @throws {TypeError} A name that is not a non-empty string, an unknown option, an option of
   *   the wrong type, `keepDays` with a store that cannot delete days.
   * @throws {RangeError} A number out of its range, an unknown time zone.
   */
  new (name: string, options: DailyIdOptions & { format: "string" }): DailyId<string>;
  /**
   * A generator of `number` IDs.
   *
   * @param name The generator's name; its hash is `kvid:daily:<name>` unless `key` is given.
   * @param options See {@linkcode DailyIdOptions}.
   * @throws {TypeError} A name that is not a non-empty string, an unknown option, an option of
   *   the wrong type, `keepDays` with a store that cannot delete days.
   * @throws {RangeError} A number out of its range, an unknown time zone.
   */
  new (name: string, options?: DailyIdOptions & { format?: "number" }): DailyId<number>;
  /**
   * A generator whose ID type is known only at run time (options typed `DailyIdOptions`).
   *
   * @param name The generator's name; its hash is `kvid:daily:<name>` unless `key` is given.
   * @param options See {@linkcode DailyIdOptions}.
   * @throws {TypeError} A name that is not a non-empty string, an unknown option, an option of
   *   the wrong type, `keepDays` with a store that cannot delete days.
   * @throws {RangeError} A number out of its range, an unknown time zone.
   */
  new (name: string, options?: DailyIdOptions): DailyId<number | bigint | string>;
  /** The prototype. */
  readonly prototype: DailyId<number | bigint | string>;
}

/**
 * Date-prefixed daily serial numbers. See the {@linkcode DailyId} interface for its methods and
 * {@linkcode DailyIdOptions} for its options.
 *
 * @example
 * ```ts ignore
 * import { DailyId } from "@kvid/core";
 *
 * export const ORDER_NO = new DailyId("order", { timeZone: "Asia/Shanghai" }); // 20261130000001
 * export const TICKET = new DailyId("ticket", { digits: 4, format: "string" }); // "202611300001"
 * ```
 */
export const DailyId: DailyIdConstructor = DailyIdImpl as unknown as DailyIdConstructor;

// The generator checked against the interface, for every ID type: the class does not say
// `implements DailyId<T>`, which would import this file back from daily_generator.ts.
const _implementsDailyId = <T extends number | bigint | string>(g: DailyIdImpl<T>): DailyId<T> => g;
