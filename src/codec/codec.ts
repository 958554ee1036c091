/**
 * The {@linkcode Codec} interface, the plain number and bigint forms, and the checks every codec
 * shares. Zero dependencies: the core (`DailyId`) uses these pieces too.
 *
 * @module
 */

import { KvIdError } from "../contract/errors.ts";

/** The largest ID a generator hands out: 2^63 - 1 (a signed 64-bit counter). */
export const MAX_ID: bigint = 2n ** 63n - 1n;

/**
 * A reversible form of an ID: `encode` maps an ID of the domain `0..max` to what users see
 * (a string, or a number), `decode` maps it back exactly. Codecs compose as decorators
 * (`prefix("INV-", decimal(8))`), each one a bijection between its domain and its outputs.
 *
 * `encode` throws a `"domain"` {@linkcode KvIdError} for an ID outside `0..max` (never wraps it
 * around, which would repeat an ID); `decode` throws `"malformed"` for a value not of the form.
 *
 * @typeParam T What users see: `string` for most forms, `number` or `bigint` for the plain ones.
 *
 * @example A codec of your own: a check digit after the decimal ID
 * ```ts
 * import { type Codec, decimal } from "@kvid/core/codec";
 * import { KvIdError } from "@kvid/core";
 * import assert from "node:assert/strict";
 *
 * const digits = decimal(9);
 * const check = (s: string) => String([...s].reduce((a, c) => a + Number(c), 0) % 10);
 * const withCheckDigit: Codec<string> = {
 *   max: digits.max,
 *   encode: (id) => {
 *     const s = digits.encode(id);
 *     return s + check(s);
 *   },
 *   decode: (text) => {
 *     const s = text.slice(0, -1);
 *     if (check(s) !== text.slice(-1)) throw new KvIdError("malformed", "bad check digit");
 *     return digits.decode(s);
 *   },
 * };
 * assert.equal(withCheckDigit.encode(42), "0000000426");
 * assert.equal(withCheckDigit.decode("0000000426"), 42n);
 * ```
 */
export interface Codec<T> {
  /** The largest ID it encodes: its domain is `0..max`. */
  readonly max: bigint;
  /** The public form of `id`; a `"domain"` {@linkcode KvIdError} if `id` is outside `0..max`. */
  encode(id: number | bigint): T;
  /** The ID of a public form; a `"malformed"` {@linkcode KvIdError} if it is not one. */
  decode(encoded: T): bigint;
}

/**
 * Check that `id` is an integer from 0 to `max` and return it as a bigint; a `"domain"`
 * {@linkcode KvIdError} naming the value and the domain otherwise.
 *
 * @example
 * ```ts
 * import { checkId } from "@kvid/core/codec";
 * import assert from "node:assert/strict";
 *
 * assert.equal(checkId(42, 999n), 42n);
 * assert.throws(() => checkId(1000, 999n), { code: "domain" });
 * assert.throws(() => checkId(-1, 999n), { code: "domain" });
 * ```
 */
export function checkId(id: number | bigint, max: bigint): bigint {
  let big: bigint;
  if (typeof id === "bigint") big = id;
  else if (typeof id === "number" && Number.isSafeInteger(id)) big = BigInt(id);
  else {
    throw new KvIdError(
      "domain",
      `an ID must be a safe integer or a bigint, got ${describeValue(id)}`,
    );
  }
  if (big < 0n || big > max) {
    throw new KvIdError("domain", `ID ${big} is outside the codec's domain 0..${max}`);
  }
  return big;
}

/** Describe a value briefly for an error message (a public ID is not secret; it is cut short). */
export function describeValue(value: unknown): string {
  if (typeof value === "string") {
    return JSON.stringify(value.length > 40 ? value.slice(0, 40) + "..." : value);
  }
  if (typeof value === "bigint") return `${value}n`;
  if (value === null || typeof value !== "object") return `${typeof value} ${String(value)}`;
  return value.constructor?.name ?? "object";
}

/** The malformed-input error every string codec throws. */
export function malformed(what: string, value: unknown): KvIdError {
  return new KvIdError("malformed", `${what}: ${describeValue(value)}`);
}

class NumberCodec implements Codec<number> {
  readonly max: bigint;
  readonly #max: number;
  constructor(max: bigint) {
    this.max = max;
    this.#max = Number(max);
  }
  encode(id: number | bigint): number {
    // The hot path of DailyId's default form: a safe integer in range is returned as it is.
    if (typeof id === "number" && Number.isSafeInteger(id) && id >= 0 && id <= this.#max) {
      return id;
    }
    return Number(checkId(id, this.max));
  }
  decode(encoded: number): bigint {
    if (!Number.isSafeInteger(encoded) || encoded < 0 || encoded > this.#max) {
      throw malformed(`not an ID from 0 to ${this.max}`, encoded);
    }
    return BigInt(encoded);
  }
}

class BigIntCodec implements Codec<bigint> {
  constructor(readonly max: bigint) {}
  encode(id: number | bigint): bigint {
    return checkId(id, this.max);
  }
  decode(encoded: bigint): bigint {
    if (typeof encoded !== "bigint" || encoded < 0n || encoded > this.max) {
      throw malformed(`not an ID from 0 to ${this.max}`, encoded);
    }
    return encoded;
  }
}

/**
 * The ID as a JS number, exactly: the domain is `0..max`, at most `Number.MAX_SAFE_INTEGER`
 * (the default). `DailyId`'s default `format: "number"` is this form.
 *
 * @param max The largest ID. Default `Number.MAX_SAFE_INTEGER`.
 *
 * @example
 * ```ts
 * import { asNumber } from "@kvid/core/codec";
 * import assert from "node:assert/strict";
 *
 * assert.equal(asNumber().encode(42n), 42);
 * assert.throws(() => asNumber().encode(2n ** 53n), { code: "domain" }); // never rounded
 * ```
 */
export function asNumber(max: bigint = BigInt(Number.MAX_SAFE_INTEGER)): Codec<number> {
  if (typeof max !== "bigint" || max < 0n || max > BigInt(Number.MAX_SAFE_INTEGER)) {
    throw new RangeError(
      `asNumber(max): max must be a bigint from 0 to 2^53 - 1, got ${describeValue(max)}`,
    );
  }
  return new NumberCodec(max);
}

/**
 * The ID as a bigint: the domain is `0..max`, at most 2^63 - 1 (the default). `DailyId`'s
 * `format: "bigint"` is this form.
 *
 * @param max The largest ID. Default 2^63 - 1.
 *
 * @example
 * ```ts
 * import { asBigInt } from "@kvid/core/codec";
 * import assert from "node:assert/strict";
 *
 * assert.equal(asBigInt().encode(42), 42n);
 * assert.throws(() => asBigInt(999n).encode(1000), { code: "domain" });
 * ```
 */
export function asBigInt(max: bigint = MAX_ID): Codec<bigint> {
  if (typeof max !== "bigint" || max < 0n || max > MAX_ID) {
    throw new RangeError(
      `asBigInt(max): max must be a bigint from 0 to 2^63 - 1, got ${describeValue(max)}`,
    );
  }
  return new BigIntCodec(max);
}

class Offset<T> implements Codec<T> {
  readonly max: bigint;
  readonly #big: bigint;
  readonly #number: number; // the offset as a number, when the sum of two safe numbers is safe
  readonly #numberMax: number;
  constructor(offset: bigint, readonly inner: Codec<T>) {
    this.max = inner.max - offset;
    this.#big = offset;
    this.#number = Number(offset);
    // A number ID up to this, plus the offset, stays a safe integer within the inner domain.
    const top = inner.max < MAX_SAFE ? inner.max : MAX_SAFE;
    this.#numberMax = top >= offset ? Number(top - offset) : -1;
  }
  encode(id: number | bigint): T {
    // DailyId's hot path: a small seq plus the day's base, in numbers.
    if (typeof id === "number" && Number.isSafeInteger(id) && id >= 0 && id <= this.#numberMax) {
      return this.inner.encode(this.#number + id);
    }
    return this.inner.encode(checkId(id, this.max) + this.#big);
  }
  decode(encoded: T): bigint {
    const id = this.inner.decode(encoded) - this.#big;
    if (id < 0n) throw malformed(`below the first ID ${this.#big}`, encoded);
    return id;
  }
}

const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

/**
 * IDs shifted by `offset` before the inner form: ID 0 is shown as `offset`, and IDs decode back
 * as they were. For numbers that start at a given value (order 100001 for the first order), and
 * `DailyId`'s day: seq plus `yyyymmdd * 10^digits`. The domain is `0..inner.max - offset`.
 *
 * @param offset What is added, from 0 to `inner.max`.
 * @param inner The form of the sum.
 *
 * @example Order numbers from 100001 up
 * ```ts
 * import { decimal, offset } from "@kvid/core/codec";
 * import assert from "node:assert/strict";
 *
 * const orderNo = offset(100_000n, decimal(6)); // ID 1 -> "100001"
 * assert.equal(orderNo.encode(1), "100001");
 * assert.equal(orderNo.decode("100001"), 1n);
 * assert.throws(() => orderNo.encode(900_000), { code: "domain" }); // past "999999"
 * assert.throws(() => orderNo.decode("099999"), { code: "malformed" }); // before ID 0
 * ```
 */
export function offset<T>(offset: bigint, inner: Codec<T>): Codec<T> {
  if (
    inner === null || typeof inner !== "object" || typeof inner.encode !== "function" ||
    typeof inner.max !== "bigint"
  ) {
    throw new TypeError(`offset: the inner form must be a Codec, got ${describeValue(inner)}`);
  }
  if (typeof offset !== "bigint" || offset < 0n || offset > inner.max) {
    throw new RangeError(
      `offset: the offset must be a bigint from 0 to the inner form's max ${inner.max}, got ${
        describeValue(offset)
      }`,
    );
  }
  return new Offset(offset, inner);
}
