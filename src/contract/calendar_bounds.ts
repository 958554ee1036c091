/**
 * The years a daily counter can be dated in, as clock readings: what `DailyId` accepts from
 * its clock, and what a store accepts as its server's clock when it deletes old days. Here, in
 * the contract, so a store checks a clock without importing `DailyId`'s calendar.
 *
 * @module
 */

/** The earliest and latest clock readings accepted: 4-digit years in every zone. */
export const MIN_EPOCH_MS: number = Date.UTC(1000, 0, 2);
/** See {@linkcode MIN_EPOCH_MS}. */
export const MAX_EPOCH_MS: number = Date.UTC(9999, 11, 30);
