/**
 * {@linkcode DayCleaner}: deleting the counters of old days through the store
 * (`deleteDaysBefore`, dated by the earlier of the caller's clock and the store's `now()`),
 * bounded by the generator's timeout, by hand or in the background when a day starts.
 *
 * @module
 */

import type { Day, ZonedDays } from "./calendar.ts";
import { keepFrom, keepFromEither } from "./keep_days.ts";
import type { DailyCleanupDetail } from "./daily_options.ts";
import { withDeadline } from "../runtime/deadline_timer.ts";
import { KvIdError } from "../contract/errors.ts";
import type { RedisSource } from "../contract/redis_client.ts";
import { storeFromSource } from "../runtime/store_source.ts";
import { hasDayCleanup, hasServerClock, type Store } from "../contract/store.ts";
import { toKvIdError } from "../contract/store_errors.ts";

/** What a cleanup did: fields of days before `before` (`yyyymmdd`) were deleted. */
export interface CleanupDone {
  /** The first day kept. */
  before: string;
  /** How many fields were deleted. */
  deleted: number;
}

/** Where a {@linkcode DayCleaner} deletes, and how long it may take. */
export interface DayCleanerOptions {
  /** The hash of the per-day counters. */
  key: string;
  /** The calendar the days are counted in. */
  zone: ZonedDays;
  /** The most a cleanup waits for the store, in ms. */
  timeout: number;
  /** The generator's store; undefined: the one of `redis` (or the configured default). */
  store: Store | undefined;
  /** The `redis` option, when no store is given. */
  redis: RedisSource | undefined;
}

/**
 * Deletes the counters of days more than `keepDays` days old, by the earlier of the caller's
 * day and the store's clock (Redis `TIME`, a SQL store's `now()`; a store without one, Deno KV:
 * the caller's day): a process whose clock runs ahead cannot delete a day that processes with
 * right clocks still use.
 *
 * @example Two old days of an in-memory store
 * ```ts
 * import { ZonedDays } from "./calendar.ts";
 * import { DayCleaner } from "./day_cleanup.ts";
 * import assert from "node:assert/strict";
 *
 * const days = new Set(["20261101", "20261120", "20261130"]);
 * const store = {
 *   reserve: () => Promise.reject(new Error("not used here")),
 *   deleteDaysBefore(_key: string, before: string) {
 *     const old = [...days].filter((d) => d < before);
 *     old.forEach((d) => days.delete(d));
 *     return Promise.resolve(old.length);
 *   },
 * };
 * const zone = new ZonedDays("UTC");
 * const cleaner = new DayCleaner({ key: "kvid:daily:order", zone, timeout: 1_000, store, redis: undefined });
 * const done = await cleaner.run(zone.dayAt(Date.UTC(2026, 10, 30, 12)), 7);
 * assert.deepEqual(done, { before: "20261123", deleted: 2 });
 * ```
 */
export class DayCleaner {
  readonly #options: DayCleanerOptions;

  /** @param options Where to delete and how long it may take. */
  constructor(options: DayCleanerOptions) {
    this.#options = options;
  }

  /**
   * Delete the days more than `keepDays` old when today is `today` (by the caller's clock),
   * bounded by the timeout whatever the store does; a late reply is dropped (deleting old days
   * again later is harmless).
   *
   * @throws {KvIdError} `"timeout"` past the timeout; `"config"` without a store that can delete
   *   days; the store's failure, naming the hash and the field `<yyyymmdd`.
   * @throws {RangeError} `keepDays` is not an integer from 1 to 100,000.
   */
  run(today: Day, keepDays: number): Promise<CleanupDone> {
    const { key, timeout } = this.#options;
    const field = `<${keepFrom(today, keepDays).text}`;
    return withDeadline(
      this.#deleteOldDays(today, keepDays),
      timeout,
      () => new KvIdError("timeout", `the cleanup took more than ${timeout} ms`, { key, field }),
    );
  }

  /**
   * {@linkcode DayCleaner.run} in the background when a day starts: never rejects; `report` is
   * handed what it did or why it failed (the generator's `"cleanup"` event).
   */
  inBackground(
    today: Day,
    keepDays: number,
    report: (detail: DailyCleanupDetail) => void,
  ): Promise<void> {
    const before = keepFrom(today, keepDays).text; // by this clock; the store's may be earlier
    return this.run(today, keepDays).then(
      (done) => report({ before: done.before, deleted: done.deleted, error: undefined }),
      (error) =>
        report({
          before,
          deleted: undefined,
          error: toKvIdError(error, this.#options.key, `<${before}`),
        }),
    );
  }

  async #deleteOldDays(today: Day, keepDays: number): Promise<CleanupDone> {
    const { key, zone } = this.#options;
    const day = keepFrom(today, keepDays).text;
    const field = `<${day}`;
    const store = this.#options.store ?? storeFromSource(this.#options.redis, {
      who: "DailyId",
      key,
      field,
      options: { timeout: this.#options.timeout },
    });
    if (!hasDayCleanup(store)) {
      throw new KvIdError(
        "config",
        "the store cannot delete days: pass a store with deleteDaysBefore, or the redis option",
        { key, field },
      );
    }
    try {
      let before = day;
      if (hasServerClock(store)) {
        before = keepFromEither(today, zone.dayAt(await store.now()), keepDays).text;
      }
      return { before, deleted: await store.deleteDaysBefore(key, before) };
    } catch (err) {
      throw named(toKvIdError(err, key, field), key, field);
    }
  }
}

/**
 * `error`, naming the counter when the store's error names none (a store's `now()` is not
 * about a counter: the Redis store's says "the Redis client factory failed" with no hash).
 */
function named(error: KvIdError, key: string, field: string): KvIdError {
  if (error.key !== "" || error.field !== "") return error;
  return new KvIdError(error.code, error.message, {
    key,
    field,
    cause: error.cause,
    reason: error.reason,
  });
}
