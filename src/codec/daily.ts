/**
 * The forms of `DailyId` (`yyyymmdd` then a per-day sequence of `digits` digits) as codecs: the
 * generator hands out `dailyForm(format, digits).encode(yyyymmdd * 10^digits + seq)`. Zero
 * dependencies (the core uses it).
 *
 * @module
 */

import { prefix } from "./affix.ts";
import { asBigInt, asNumber, type Codec, offset } from "./codec.ts";
import { decimal } from "./radix.ts";

/**
 * The codec of a `DailyId` form: `number` is {@linkcode asNumber}, `bigint`
 * {@linkcode asBigInt} (both up to the last serial of 9999-12-31), `string`
 * {@linkcode decimal} of `8 + digits` characters. The three forms of one ID differ in type only.
 *
 * @param format The `DailyId` format.
 * @param digits Digits of the per-day sequence (1 to 7 for `number`, to 10 for the others).
 *
 * @example One serial in the three forms
 * ```ts
 * import { dailyForm } from "@kvid/core/codec";
 * import assert from "node:assert/strict";
 *
 * const id = 20261130n * 10n ** 4n + 1n; // seq 1 of 2026-11-30, 4 digits
 * assert.equal(dailyForm("number", 4).encode(id), 202611300001);
 * assert.equal(dailyForm("bigint", 4).encode(id), 202611300001n);
 * assert.equal(dailyForm("string", 4).encode(id), "202611300001");
 * assert.equal(dailyForm("string", 4).decode("202611300001"), id);
 * ```
 */
export function dailyForm(format: "number", digits: number): Codec<number>;
/**
 * The `bigint` form.
 *
 * @param format `"bigint"`.
 * @param digits Digits of the per-day sequence, 1 to 10.
 */
export function dailyForm(format: "bigint", digits: number): Codec<bigint>;
/**
 * The `string` form: `8 + digits` decimal digits.
 *
 * @param format `"string"`.
 * @param digits Digits of the per-day sequence, 1 to 10.
 */
export function dailyForm(format: "string", digits: number): Codec<string>;
/**
 * A form known at run time.
 *
 * @param format The `DailyId` format.
 * @param digits Digits of the per-day sequence.
 */
export function dailyForm(
  format: "number" | "bigint" | "string",
  digits: number,
): Codec<number | bigint | string>;
export function dailyForm(
  format: "number" | "bigint" | "string",
  digits: number,
): Codec<number | bigint | string> {
  const max = 99991231n * 10n ** BigInt(digits) + 10n ** BigInt(digits) - 1n;
  switch (format) {
    case "number":
      return asNumber(max) as Codec<number | bigint | string>;
    case "bigint":
      return asBigInt(max) as Codec<number | bigint | string>;
    case "string":
      return decimal(8 + digits) as Codec<number | bigint | string>;
    default:
      throw new TypeError(`dailyForm: format must be "number", "bigint" or "string"`);
  }
}

/**
 * The form of one day's serials: a codec of the seq (0 to `10^digits - 1`) whose outputs are the
 * day's IDs in `format`: `prefix(yyyymmdd, decimal(digits))` for `string`, the whole-ID form
 * after an `offset` of `yyyymmdd * 10^digits` for the others. `DailyId` makes one per day and
 * hands out `encode(seq)` (the string form then costs a concatenation, not the decimal
 * conversion of a 15-digit number).
 *
 * @param format The `DailyId` format.
 * @param digits Digits of the per-day sequence.
 * @param day The day, `yyyymmdd`.
 */
export function dayForm(
  format: "number" | "bigint" | "string",
  digits: number,
  day: string,
): Codec<number | bigint | string> {
  if (format === "string") return prefix(day, decimal(digits));
  return offset(BigInt(day) * 10n ** BigInt(digits), dailyForm(format, digits));
}
