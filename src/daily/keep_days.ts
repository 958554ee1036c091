/**
 * How many days a `DailyId` cleanup keeps, and the first day it keeps.
 *
 * @module
 */

import { addDays, type Day } from "./calendar.ts";
import { checkInteger } from "../contract/validate.ts";

/** The fewest days a cleanup keeps. */
export const MIN_KEEP_DAYS = 1;
/** The most days a cleanup keeps. */
export const MAX_KEEP_DAYS = 100_000;

/**
 * The first day kept by a cleanup with `keepDays` when today is `today`: days before it are
 * more than `keepDays` days old.
 */
export function keepFrom(today: Day, keepDays: number): Day {
  checkInteger("DailyId", "cleanup() keepDays", keepDays, MIN_KEEP_DAYS, MAX_KEEP_DAYS);
  return addDays(today, -keepDays);
}

/**
 * The first day a cleanup keeps by the earlier of two clocks, this process's (`today`) and the
 * store's (`storeDay`, when the store has a clock): a day is deleted only when it is more than
 * `keepDays` days old by both, so a process whose clock runs ahead cannot delete a day that
 * processes with right clocks still use.
 */
export function keepFromEither(today: Day, storeDay: Day | undefined, keepDays: number): Day {
  return keepFrom(storeDay !== undefined && storeDay.ymd < today.ymd ? storeDay : today, keepDays);
}
