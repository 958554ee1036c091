/**
 * {@linkcode DailyId}: date-prefixed serial numbers (`yyyymmdd` then a per-day sequence), on the
 * segment engine of {@linkcode KvId}.
 *
 * Longer than 500 lines on purpose: the `DailyId` interface with its examples, and the generator,
 * whose day switch, waiting callers, cleanup scheduling and close share one private state. What
 * stands alone is apart: the options and stats types (`daily_options.ts`), the calendar
 * (`calendar.ts`) and how many days a cleanup keeps (`keep_days.ts`); the store deletes them.
 *
 * @module
 */

import { type Day, MAX_EPOCH_MS, MIN_EPOCH_MS, ZonedDays } from "./calendar.ts";
import type { Codec } from "../codec/codec.ts";
import { dailyForm, dayForm } from "../codec/daily.ts";
import { keepFrom, MAX_KEEP_DAYS, MIN_KEEP_DAYS } from "./keep_days.ts";
import type {
  DailyCleanupDetail,
  DailyIdFormat,
  DailyIdOptions,
  DailyIdStats,
  DailyRollbackDetail,
  DailySerial,
} from "./daily_options.ts";
import { KvIdError } from "../contract/errors.ts";
import { KvId } from "../engine/kvid.ts";
import type { KvIdOptions, RollbackDetail } from "../engine/kvid_options.ts";
import type { RedisSource } from "../contract/redis_client.ts";
import { checkStoreSource, storeFromSource } from "../contract/store_source.ts";
import type { Store } from "../contract/store.ts";
import { toKvIdError } from "../contract/store_errors.ts";
import { trackGenerator, untrackGenerator } from "../contract/shutdown.ts";
import { checkCounterName, checkInteger, describe } from "../contract/validate.ts";

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
  /** `count` IDs of one day, increasing, with one await and few round trips. */
  nextBatch(count: number): Promise<T[]>;
  /**
   * Take an ID of this generator's shape apart. Throws a RangeError if it does not have
   * `8 + digits` decimal digits.
   */
  parse(id: number | bigint | string): DailySerial;
  /**
   * Delete the counters of days more than `keepDays` days old (today is 0 days old, in this
   * generator's zone) by both this generator's clock and the Redis server's (`TIME`): a clock
   * running ahead never deletes a day that processes with right clocks still use. `keepDays` is
   * at least 1, so a process whose clock lags the server's by less than a day never finds its
   * day gone (which would restart its seq and repeat IDs). Fields that are not `yyyymmdd` dates
   * are left alone. Resolves to how many fields were deleted.
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
   */
  new (name: string, options: DailyIdOptions & { format: "bigint" }): DailyId<bigint>;
  /**
   * A generator of string IDs, `yyyymmdd` then seq zero-padded to `digits`.
   *
   * @param name The generator's name; its hash is `kvid:daily:<name>` unless `key` is given.
   * @param options See {@linkcode DailyIdOptions}.
   */
  new (name: string, options: DailyIdOptions & { format: "string" }): DailyId<string>;
  /**
   * A generator of `number` IDs.
   *
   * @param name The generator's name; its hash is `kvid:daily:<name>` unless `key` is given.
   * @param options See {@linkcode DailyIdOptions}.
   */
  new (name: string, options?: DailyIdOptions & { format?: "number" }): DailyId<number>;
  /**
   * A generator whose ID type is known only at run time (options typed `DailyIdOptions`).
   *
   * @param name The generator's name; its hash is `kvid:daily:<name>` unless `key` is given.
   * @param options See {@linkcode DailyIdOptions}.
   */
  new (name: string, options?: DailyIdOptions): DailyId<number | bigint | string>;
  /** The prototype. */
  readonly prototype: DailyId<number | bigint | string>;
}

// ---------------------------------------------------------------------------------------------
// Limits

/** The largest `digits` such that every ID up to 9999-12-31 stays within `limit`. */
function maxDigitsWithin(limit: bigint): number {
  let d = 0;
  while (99991231n * 10n ** BigInt(d + 1) + 10n ** BigInt(d + 1) - 1n <= limit) d++;
  return d;
}

/** The largest `digits` of each format: 7 for `number`, 10 for `bigint` and `string`. */
export const MAX_DIGITS: Readonly<Record<DailyIdFormat, number>> = Object.freeze({
  number: maxDigitsWithin(BigInt(Number.MAX_SAFE_INTEGER)),
  bigint: maxDigitsWithin(2n ** 63n - 1n),
  string: maxDigitsWithin(2n ** 63n - 1n),
});

const MAX_BATCH = 10_000_000;
/** Beyond `timeout`, how long the event loop may stall and a waiting call still be rechecked. */
const RECHECK_SLACK_MS = 60_000;
// ---------------------------------------------------------------------------------------------
// The generator

// Options handed to each day's KvId as they are; the others are DailyId's own (minStep and
// maxStep are validated here, then handed on).
const PASSED_TO_KVID = [
  "redis",
  "store",
  "segmentDuration",
  "prefetchAt",
  "timeout",
  "failFast",
  "guard",
  "rollbackMargin",
  "replicas",
  "waitAof",
  "stepRule",
  "clock",
  "durability",
  "serverSettings",
] as const;
const OPTION_NAMES = new Set<string>([
  ...PASSED_TO_KVID,
  "key",
  "digits",
  "timeZone",
  "format",
  "keepDays",
  "minStep",
  "maxStep",
]);
const FORMATS = new Set<string>(["number", "bigint", "string"]);

class DailyIdImpl<T extends number | bigint | string> extends EventTarget implements DailyId<T> {
  readonly name: string;
  readonly key: string;
  readonly digits: number;
  readonly timeZone: string;
  readonly format: DailyIdFormat;
  readonly codec: Codec<T>;
  readonly #digitsForm: Codec<string>;
  readonly #zone: ZonedDays;
  readonly #clock: () => number;
  readonly #inner: KvIdOptions & { bigint?: false };
  readonly #redis: RedisSource | undefined;
  readonly #store: Store | undefined;
  readonly #maxSeq: number;
  readonly #keepDays: number | undefined;
  readonly #recheckMargin: number;
  readonly #timeout: number;

  #gen: KvId<number> | undefined;
  #day: Day | undefined;
  #end = -Infinity; // epoch ms when #day ends; the hot path compares the clock with it
  // From this instant on, a call may still be waiting when the day ends (it waits at most
  // `timeout`): its result is checked against the clock again. Before it, one read is enough.
  #recheckFrom = -Infinity;
  /** Today's form: a codec of seq giving today's IDs (`dayForm`), set when a day starts. */
  #dayForm: Codec<T> | undefined;
  #full = false;
  #closed = false;
  #days = 0;
  readonly #pending = new Set<Promise<unknown>>();

  // The listener types of the DailyId interface: "rollback" and "cleanup" get CustomEvents.
  override addEventListener(
    type: string,
    listener:
      | EventListenerOrEventListenerObject
      | ((event: CustomEvent<DailyRollbackDetail>) => void)
      | ((event: CustomEvent<DailyCleanupDetail>) => void)
      | null,
    options?: boolean | AddEventListenerOptions,
  ): void {
    super.addEventListener(type, listener as EventListenerOrEventListenerObject | null, options);
  }

  constructor(name: string, options: DailyIdOptions = {}) {
    super();
    if (typeof name !== "string" || name.length === 0 || !name.isWellFormed()) {
      throw new TypeError(`DailyId name must be a non-empty string, got ${describe(name)}`);
    }
    // One rule for every name (the service serves both kinds): none begins with NUL.
    checkCounterName("DailyId", "name", name);
    if (options === null || typeof options !== "object") {
      throw new TypeError(`DailyId options must be an object, got ${describe(options)}`);
    }
    for (const k of Object.keys(options)) {
      if (k === "bigint") {
        throw new TypeError('DailyId has no bigint option: use { format: "bigint" }');
      }
      if (!OPTION_NAMES.has(k)) {
        throw new TypeError(`DailyId: unknown option ${JSON.stringify(k)}`);
      }
    }
    const format = options.format ?? "number";
    if (typeof format !== "string" || !FORMATS.has(format)) {
      throw new TypeError(
        `DailyId option format must be "number", "bigint" or "string", got ${describe(format)}`,
      );
    }
    const digits = options.digits ?? 6;
    checkInteger(
      "DailyId",
      "digits",
      digits,
      1,
      MAX_DIGITS[format],
      format === "number"
        ? ` (IDs must stay within Number.MAX_SAFE_INTEGER; use format "bigint" or "string" for up to ${MAX_DIGITS.bigint})`
        : "",
    );
    const timeZone = options.timeZone ?? "UTC";
    if (typeof timeZone !== "string") {
      throw new TypeError(`DailyId option timeZone must be a string, got ${describe(timeZone)}`);
    }
    let zone: ZonedDays;
    try {
      zone = new ZonedDays(timeZone);
    } catch (cause) {
      throw new RangeError(
        `DailyId option timeZone: unknown time zone ${JSON.stringify(timeZone)}`,
        { cause },
      );
    }
    if (options.keepDays !== undefined) {
      checkInteger("DailyId", "keepDays", options.keepDays, MIN_KEEP_DAYS, MAX_KEEP_DAYS);
    }
    if (options.clock !== undefined && typeof options.clock !== "function") {
      throw new TypeError(
        `DailyId option clock must be a function, got ${describe(options.clock)}`,
      );
    }
    checkStoreSource("DailyId", options.redis, { list: false });
    if (
      options.keepDays !== undefined && options.store !== undefined &&
      typeof options.store?.deleteDaysBefore !== "function" && options.redis === undefined
    ) {
      // Cleanup could only fail, every day: refuse now rather than report it at each midnight.
      throw new TypeError(
        "DailyId option keepDays needs a store that can delete days (deleteDaysBefore, as DenoKvStore has) or the redis option",
      );
    }

    const maxSeq = 10 ** digits - 1;
    const minStep = options.minStep ?? 1;
    checkInteger("DailyId", "minStep", minStep, 1, maxSeq);
    const maxStep = options.maxStep ?? Math.max(minStep, 10 ** Math.max(0, digits - 3));
    checkInteger("DailyId", "maxStep", maxStep, minStep, Number.MAX_SAFE_INTEGER);

    const inner: KvIdOptions & { bigint?: false } = {
      // A day's counter is used for one day: a remembered step would be a field left per day.
      rememberStep: false,
      key: options.key ?? `kvid:daily:${name}`,
      minStep,
      maxStep: Math.min(maxStep, maxSeq),
    };
    for (const k of PASSED_TO_KVID) {
      if (options[k] !== undefined) (inner as Record<string, unknown>)[k] = options[k];
    }
    // Validates the engine's options (and the key) now rather than on the first call.
    new KvId("00000000", inner);

    this.name = name;
    this.key = inner.key!;
    this.digits = digits;
    this.timeZone = zone.timeZone;
    this.format = format;
    this.codec = dailyForm(format, digits) as Codec<T>;
    this.#digitsForm = dailyForm("string", digits);
    this.#zone = zone;
    this.#clock = options.clock ?? Date.now;
    this.#inner = inner;
    this.#redis = options.redis;
    this.#store = options.store;
    this.#maxSeq = maxSeq;
    this.#keepDays = options.keepDays;
    this.#timeout = options.timeout ?? 5_000;
    this.#recheckMargin = this.#timeout + RECHECK_SLACK_MS;
    trackGenerator(this);
  }

  // The hot path: one clock read against the precomputed end of the day, then the engine's.
  async next(): Promise<T> {
    for (;;) {
      if (this.#closed) throw this.#closedError();
      const now = this.#clock();
      if (!(now < this.#end)) this.#roll(); // NaN too
      if (this.#full) throw this.#overflowError();
      const gen = this.#gen!;
      let seq: number;
      try {
        seq = await gen.next();
      } catch (err) {
        if (this.#superseded(gen, err)) continue;
        throw err;
      }
      // The day ended while the call waited: that seq is dated yesterday, drop it.
      if (gen !== this.#gen || (now >= this.#recheckFrom && !(this.#clock() < this.#end))) {
        continue;
      }
      if (seq > this.#maxSeq) {
        this.#fill();
        throw this.#overflowError();
      }
      return this.#dayForm!.encode(seq);
    }
  }

  async nextBatch(count: number): Promise<T[]> {
    checkInteger("DailyId", "nextBatch(count)", count, 0, MAX_BATCH);
    for (;;) {
      if (this.#closed) throw this.#closedError();
      const now = this.#clock();
      if (!(now < this.#end)) this.#roll(); // NaN too
      if (this.#full) throw this.#overflowError();
      const gen = this.#gen!;
      let seqs: number[];
      try {
        seqs = await gen.nextBatch(count);
      } catch (err) {
        if (this.#superseded(gen, err)) continue;
        throw err;
      }
      if (gen !== this.#gen || (now >= this.#recheckFrom && !(this.#clock() < this.#end))) {
        continue;
      }
      if (count > 0 && seqs[count - 1] > this.#maxSeq) {
        this.#fill();
        throw this.#overflowError();
      }
      // Rewrite in place: one array per batch.
      const out = seqs as unknown as T[];
      const form = this.#dayForm!;
      for (let i = 0; i < count; i++) out[i] = form.encode(seqs[i]);
      return out;
    }
  }

  parse(id: number | bigint | string): DailySerial {
    // Any of the three forms: its decimal digits are the string form's.
    const len = 8 + this.digits;
    let value: bigint;
    try {
      if (typeof id !== "string" && typeof id !== "number" && typeof id !== "bigint") throw id;
      value = this.#digitsForm.decode(typeof id === "string" ? id : String(id));
    } catch {
      throw new RangeError(`not a daily serial of ${len} digits: ${describe(id)}`);
    }
    const scale = 10n ** BigInt(this.digits);
    return { day: String(value / scale).padStart(8, "0"), seq: Number(value % scale) };
  }

  async cleanup(options: { keepDays: number }): Promise<number> {
    if (options === null || typeof options !== "object") {
      throw new TypeError("DailyId cleanup() takes { keepDays }");
    }
    checkInteger("DailyId", "keepDays", options.keepDays, MIN_KEEP_DAYS, MAX_KEEP_DAYS);
    const now = this.#readClock();
    return (await this.#cleanup(this.#zone.dayAt(now), options.keepDays)).deleted;
  }

  stats(): DailyIdStats {
    return {
      name: this.name,
      key: this.key,
      timeZone: this.timeZone,
      digits: this.digits,
      day: this.#day?.text,
      dayEndsAt: this.#day === undefined ? undefined : this.#end,
      full: this.#full,
      days: this.#days,
      counter: this.#gen?.stats(),
    };
  }

  async close(): Promise<void> {
    if (!this.#closed) {
      this.#closed = true;
      untrackGenerator(this);
      if (this.#gen !== undefined) this.#track(this.#gen.close());
    }
    while (this.#pending.size > 0) await Promise.all(this.#pending);
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  /** Move to the clock's day (never back to an earlier one) and compute when it ends. */
  #roll(): void {
    const now = this.#readClock();
    let day = this.#zone.dayAt(now);
    const current = this.#day;
    if (current !== undefined && day.ymd <= current.ymd) {
      // The clock went back (or a zone repeats the last hour of a day): IDs never go back.
      day = current;
    } else {
      this.#startDay(day);
    }
    this.#end = this.#zone.endOf(day, now);
    this.#recheckFrom = this.#end - this.#recheckMargin;
  }

  #startDay(day: Day): void {
    // Yesterday's buffered IDs are dropped; its pending calls get "closed" and retry today.
    // Today starts at the step yesterday reached (at least minStep): no ramp-up after midnight.
    const step = this.#gen?.stats().step;
    if (this.#gen !== undefined) this.#track(this.#gen.close());
    const gen = new KvId(
      day.text,
      step === undefined ? this.#inner : {
        ...this.#inner,
        initialStep: step,
      },
    );
    gen.addEventListener("expiry", (e) => {
      this.dispatchEvent(new CustomEvent("expiry", { detail: (e as CustomEvent).detail }));
    });
    gen.addEventListener("rollback", (e) => {
      const detail = (e as CustomEvent<RollbackDetail>).detail;
      this.dispatchEvent(
        new CustomEvent<DailyRollbackDetail>("rollback", { detail: { ...detail, day: day.text } }),
      );
    });
    this.#gen = gen;
    this.#day = day;
    this.#dayForm = dayForm(this.format, this.digits, day.text) as Codec<T>;
    this.#full = false;
    this.#days++;
    if (this.#keepDays !== undefined) {
      const before = keepFrom(day, this.#keepDays).text; // by this clock; the server's may be earlier
      this.#track(
        this.#cleanup(day, this.#keepDays).then(
          (done) => this.#cleaned(done.before, done.deleted, undefined),
          (error) => this.#cleaned(before, undefined, toKvIdError(error, this.key, `<${before}`)),
        ),
      );
    }
  }

  #cleaned(before: string, deleted: number | undefined, error: KvIdError | undefined): void {
    this.dispatchEvent(
      new CustomEvent<DailyCleanupDetail>("cleanup", { detail: { before, deleted, error } }),
    );
  }

  /** A cleanup, bounded by `timeout` whatever the server does (close() waits for it). */
  #cleanup(today: Day, keepDays: number): Promise<{ before: string; deleted: number }> {
    const day = keepFrom(today, keepDays).text;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() =>
        reject(
          new KvIdError("timeout", `the cleanup took more than ${this.#timeout} ms`, {
            key: this.key,
            field: `<${day}`,
          }),
        ), this.#timeout);
    });
    const cleanup = this.#cleanupNow(today, keepDays);
    // A late reply is dropped: deleting old days again later is harmless.
    cleanup.catch(() => {});
    return Promise.race([cleanup, late]).finally(() => clearTimeout(timer));
  }

  /** Delete the days more than `keepDays` old by this clock's `today` and the server's. */
  async #cleanupNow(today: Day, keepDays: number): Promise<{ before: string; deleted: number }> {
    const day = keepFrom(today, keepDays).text;
    const store = this.#store ?? storeFromSource(this.#redis, {
      who: "DailyId",
      key: this.key,
      field: `<${day}`,
      timeout: this.#timeout,
    });
    if (typeof store.deleteDaysBefore !== "function") {
      throw new KvIdError(
        "config",
        "the store cannot delete days: pass a store with deleteDaysBefore, or the redis option",
        { key: this.key, field: `<${day}` },
      );
    }
    // By the earlier of this clock's day and the server's (Redis TIME, a SQL store's now()); a
    // store without a server clock (Deno KV): by this clock's day. A process whose clock runs
    // ahead cannot delete a day that processes with right clocks still use.
    try {
      let before = day;
      if (typeof store.now === "function") {
        const serverDay = this.#zone.dayAt(await store.now());
        before = keepFrom(serverDay.ymd < today.ymd ? serverDay : today, keepDays).text;
      }
      return { before, deleted: await store.deleteDaysBefore(this.key, before) };
    } catch (err) {
      throw toKvIdError(err, this.key, `<${day}`);
    }
  }

  /** Today's serials are used up: stop reserving until the day ends. */
  #fill(): void {
    if (this.#full) return;
    this.#full = true;
    this.#track(this.#gen!.close());
  }

  /** A call failed because its day's generator was closed by a rollover or overflow: retry. */
  #superseded(gen: KvId<number>, err: unknown): boolean {
    return !this.#closed && (gen !== this.#gen || this.#full) &&
      err instanceof KvIdError && err.code === "closed";
  }

  #track(p: Promise<unknown>): void {
    const tracked = p.catch(() => {}).finally(() => this.#pending.delete(tracked));
    this.#pending.add(tracked);
  }

  #readClock(): number {
    const now = this.#clock();
    if (typeof now !== "number" || !(now >= MIN_EPOCH_MS && now <= MAX_EPOCH_MS)) {
      throw new KvIdError(
        "config",
        `the clock returned ${describe(now)}, not epoch ms within years 1000 to 9999`,
        { key: this.key, field: this.#day?.text ?? this.name },
      );
    }
    return now;
  }

  #overflowError(): KvIdError {
    return new KvIdError(
      "overflow",
      `day ${this.#day!.text} used up its ${this.#maxSeq} serials (digits: ${this.digits}); ` +
        "IDs resume when the day ends",
      { key: this.key, field: this.#day!.text },
    );
  }

  #closedError(): KvIdError {
    return new KvIdError("closed", "the generator is closed", {
      key: this.key,
      field: this.#day?.text ?? this.name,
    });
  }
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
