/**
 * A {@linkcode DailyIdOptions} object checked and completed: {@linkcode dailyConfig} validates
 * every option at construction (a mistake is said when the generator is made, not at the first
 * call or the first midnight) and applies {@linkcode DAILY_ID_DEFAULTS} (and `KvId`'s
 * `KVID_DEFAULTS` for the options it shares). Also the limits of `digits` ({@linkcode MAX_DIGITS}).
 *
 * @module
 */

import { ZonedDays } from "./calendar.ts";
import { MAX_KEEP_DAYS, MIN_KEEP_DAYS } from "./keep_days.ts";
import { DAILY_ID_DEFAULTS, type DailyIdFormat, type DailyIdOptions } from "./daily_options.ts";
import { KvId } from "../engine/kvid.ts";
import type { KvIdOptions } from "../engine/kvid_options.ts";
import { checkBounds, KVID_DEFAULTS } from "../engine/defaults.ts";
import type { RedisSource } from "../contract/redis_client.ts";
import { checkStoreSource } from "../runtime/store_source.ts";
import { hasDayCleanup, type Store } from "../contract/store.ts";
import { checkCounterName, checkInteger, describe } from "../contract/validate.ts";

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

// Every option of DailyIdOptions (the compiler holds the keys to the interface's): true when it
// is handed to each day's KvId as it is (checked there, and here too where DailyId uses it
// itself); false when it is DailyId's own or handed on changed (key, minStep and maxStep).
const HANDED_ON: { readonly [K in keyof DailyIdOptions]-?: boolean } = {
  redis: true,
  store: true,
  key: false,
  digits: false,
  timeZone: false,
  format: false,
  keepDays: false,
  clock: true,
  minStep: false,
  maxStep: false,
  segmentDuration: true,
  prefetchAt: true,
  timeout: true,
  failFast: true,
  guard: true,
  rollbackMargin: true,
  replicas: true,
  waitAof: true,
  stepRule: true,
  durability: true,
  serverSettings: true,
};
const PASSED_TO_KVID = (Object.keys(HANDED_ON) as (keyof DailyIdOptions)[]).filter((k) =>
  HANDED_ON[k]
);
const OPTION_NAMES = new Set<string>(Object.keys(HANDED_ON));
const FORMATS = new Set<string>(["number", "bigint", "string"]);

/** What a `DailyId` runs on: its options checked, with the defaults applied. */
export interface DailyConfig {
  /** The hash holding the per-day counters. */
  key: string;
  /** Digits of the per-day sequence. */
  digits: number;
  /** The largest seq of a day: `10^digits - 1`. */
  maxSeq: number;
  /** How IDs are handed out. */
  format: DailyIdFormat;
  /** The calendar days are counted by. */
  zone: ZonedDays;
  /** The wall clock that dates IDs. */
  clock: () => number;
  /** Days an automatic cleanup keeps; undefined: no automatic cleanup. */
  keepDays: number | undefined;
  /** How long a call (and a cleanup) waits, in ms. */
  timeout: number;
  /** The `redis` option, for cleanups when no store is given. */
  redis: RedisSource | undefined;
  /** The `store` option. */
  store: Store | undefined;
  /** The options of each day's counter generator (its name is the day). */
  inner: KvIdOptions & { bigint?: false };
}

/**
 * Check the name and options of a `DailyId` and apply the defaults.
 *
 * @example
 * ```ts
 * import { dailyConfig } from "./daily_config.ts";
 * import assert from "node:assert/strict";
 *
 * const config = dailyConfig("order", { timeZone: "Asia/Shanghai" });
 * assert.ok(config.key === "kvid:daily:order" && config.digits === 6 && config.maxSeq === 999_999);
 * assert.throws(() => dailyConfig("order", { digits: 8 }), RangeError);
 * ```
 *
 * @throws {TypeError} A name that is not a non-empty string, an unknown option, an option of the
 * wrong type, or `keepDays` with a store that cannot delete days.
 * @throws {RangeError} A number out of its range, an unknown time zone.
 */
export function dailyConfig(name: string, options: DailyIdOptions): DailyConfig {
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
  const format = options.format ?? DAILY_ID_DEFAULTS.format;
  if (typeof format !== "string" || !FORMATS.has(format)) {
    throw new TypeError(
      `DailyId option format must be "number", "bigint" or "string", got ${describe(format)}`,
    );
  }
  const digits = options.digits ?? DAILY_ID_DEFAULTS.digits;
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
  const zone = zoneOf(options.timeZone ?? DAILY_ID_DEFAULTS.timeZone);
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
    !hasDayCleanup(options.store) && options.redis === undefined
  ) {
    // Cleanup could only fail, every day: refuse now rather than report it at each midnight.
    throw new TypeError(
      "DailyId option keepDays needs a store that can delete days (deleteDaysBefore, as DenoKvStore has) or the redis option",
    );
  }

  const maxSeq = 10 ** digits - 1;
  const minStep = options.minStep ?? KVID_DEFAULTS.minStep;
  checkBounds("DailyId", "minStep", minStep, {}, maxSeq);
  // A thousandth of a day's serials: a restart or a midnight drops few of them.
  const maxStep = options.maxStep ?? Math.max(minStep, 10 ** Math.max(0, digits - 3));
  checkBounds("DailyId", "maxStep", maxStep, { minStep });

  const inner: KvIdOptions & { bigint?: false } = {
    // A day's counter is used for one day: a remembered step would be a field left per day.
    rememberStep: false,
    key: options.key ?? DAILY_ID_DEFAULTS.keyPrefix + name,
    minStep,
    maxStep: Math.min(maxStep, maxSeq),
  };
  for (const k of PASSED_TO_KVID) {
    if (options[k] !== undefined) (inner as Record<string, unknown>)[k] = options[k];
  }
  // Validates the engine's options (and the key) now rather than on the first call.
  new KvId("00000000", inner);

  return {
    key: inner.key!,
    digits,
    maxSeq,
    format,
    zone,
    clock: options.clock ?? Date.now,
    keepDays: options.keepDays,
    timeout: options.timeout ?? KVID_DEFAULTS.timeout,
    redis: options.redis,
    store: options.store,
    inner,
  };
}

/** The zone named `timeZone`, or a TypeError or RangeError naming the option. */
function zoneOf(timeZone: unknown): ZonedDays {
  if (typeof timeZone !== "string") {
    throw new TypeError(`DailyId option timeZone must be a string, got ${describe(timeZone)}`);
  }
  try {
    return new ZonedDays(timeZone);
  } catch (cause) {
    throw new RangeError(
      `DailyId option timeZone: unknown time zone ${JSON.stringify(timeZone)}`,
      { cause },
    );
  }
}
