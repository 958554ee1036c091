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
