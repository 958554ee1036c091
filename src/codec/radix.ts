/**
 * Positional forms of an ID: decimal, radix 36, radix 62 or any alphabet, with a fixed width
 * (zero-padded, so every ID has as many characters) or without one (shortest, no leading zero).
 * Zero dependencies.
 *
 * @module
 */

import { checkId, type Codec, describeValue, malformed, MAX_ID } from "./codec.ts";

/** The decimal digits `0-9`. */
export const DECIMAL: string = "0123456789";
/** Radix 36: `0-9` then `a-z`, lowercase (so fixed-width strings sort like their IDs). */
export const BASE36: string = "0123456789abcdefghijklmnopqrstuvwxyz";
/**
 * Radix 62: `0-9`, `A-Z`, then `a-z`, in ASCII order, so fixed-width strings sort (byte-wise)
 * like their IDs. URL-safe; case matters.
 */
export const BASE62: string = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/**
 * The widest fixed width of an alphabet of `radix` characters: half of it (rounded up) must stay
 * within 2^53 (FF1 computes on halves as JS numbers). 30 decimal digits, 20 of radix 36, 16 of
 * radix 62: more than a 64-bit ID needs (20, 13 and 11).
 */
export function maxWidth(radix: number): number {
  let half = 0;
  while (BigInt(radix) ** BigInt(half + 1) <= 2n ** 53n) half++;
  return half * 2;
}

/**
 * A positional codec: IDs written with the characters of `alphabet` as digits (the first one is
 * zero), most significant first. {@linkcode encrypted} takes one of a fixed width.
 *
 * @example
 * ```ts
 * import { base62, type RadixCodec } from "@kvid/core/codec";
 * import assert from "node:assert/strict";
 *
 * const link: RadixCodec = base62(8);
 * assert.equal(link.alphabet.length, 62);
 * assert.equal(link.width, 8);
 * assert.equal(link.max, 62n ** 8n - 1n);
 * ```
 */
export interface RadixCodec extends Codec<string> {
  /** The digits, zero first. */
  readonly alphabet: string;
  /** The fixed width in characters, or undefined for the shortest form. */
  readonly width: number | undefined;
}

class Radix implements RadixCodec {
  readonly alphabet: string;
  readonly width: number | undefined;
  readonly max: bigint;
  readonly #radix: number;
  readonly #big: bigint;
  readonly #digit: Int16Array; // char code -> digit, -1 outside the alphabet
  readonly #decimal: boolean;
  /** The largest ID taken as a number as it is: `max`, or 2^53 - 1 if that is smaller. */
  readonly #maxNumber: number;

  constructor(alphabet: string, width: number | undefined) {
    this.alphabet = alphabet;
    this.width = width;
    this.#radix = alphabet.length;
    this.#big = BigInt(alphabet.length);
    this.#decimal = alphabet === DECIMAL;
    this.max = width === undefined ? MAX_ID : this.#big ** BigInt(width) - 1n;
    this.#maxNumber = Number(this.max < 9007199254740991n ? this.max : 9007199254740991n);
    this.#digit = new Int16Array(128).fill(-1);
    for (let i = 0; i < alphabet.length; i++) this.#digit[alphabet.charCodeAt(i)] = i;
  }

  encode(id: number | bigint): string {
    let text: string;
    if (typeof id === "number" && Number.isSafeInteger(id) && id >= 0 && id <= this.#maxNumber) {
      text = this.#decimal ? String(id) : this.#numberDigits(id);
    } else {
      const big = checkId(id, this.max); // throws outside the domain
      text = this.#decimal ? String(big) : this.#bigDigits(big);
    }
    return this.width === undefined ? text : text.padStart(this.width, this.alphabet[0]);
  }

  #numberDigits(id: number): string {
    const a = this.alphabet;
    const r = this.#radix;
    let out = "";
    let n = id;
    do {
      out = a[n % r] + out;
      n = Math.floor(n / r);
    } while (n > 0);
    return out;
  }

  #bigDigits(id: bigint): string {
    if (id <= 9007199254740991n) return this.#numberDigits(Number(id));
    let out = "";
    let n = id;
    do {
      out = this.alphabet[Number(n % this.#big)] + out;
      n /= this.#big;
    } while (n > 0n);
    return out;
  }

  decode(encoded: string): bigint {
    if (typeof encoded !== "string") throw malformed("not a string", encoded);
    const w = this.width;
    if (w !== undefined ? encoded.length !== w : encoded.length === 0) {
      throw malformed(
        w !== undefined ? `not ${w} characters long (${encoded.length})` : "empty",
        encoded,
      );
    }
    if (w === undefined && encoded.length > 1 && encoded[0] === this.alphabet[0]) {
      // The shortest form has one string per ID: a leading zero would be a second one.
      throw malformed(
        `a leading ${JSON.stringify(this.alphabet[0])} (not the shortest form)`,
        encoded,
      );
    }
    const digit = this.#digit;
    const r = this.#radix;
    let n = 0;
    let big = 0n;
    let wide = false;
    for (let i = 0; i < encoded.length; i++) {
      const c = encoded.charCodeAt(i);
      const d = c < 128 ? digit[c] : -1;
      if (d < 0) {
        throw malformed(
          `character ${JSON.stringify(encoded[i])} at ${i} is not in the alphabet ${
            JSON.stringify(this.alphabet)
          }`,
          encoded,
        );
      }
      if (!wide && n * r + d <= 9007199254740991) {
        n = n * r + d;
      } else {
        if (!wide) big = BigInt(n);
        wide = true;
        big = big * this.#big + BigInt(d);
      }
    }
    const id = wide ? big : BigInt(n);
    if (id > this.max) throw malformed(`above the largest ID ${this.max}`, encoded);
    return id;
  }
}

function checkWidth(who: string, width: number | undefined, radix: number): void {
  if (width === undefined) return;
  const most = maxWidth(radix);
  if (!Number.isInteger(width) || width < 1 || width > most) {
    throw new RangeError(
      `${who}: width must be an integer from 1 to ${most}, got ${describeValue(width)}`,
    );
  }
}

/**
 * IDs in the digits of `alphabet` (2 to 128 distinct ASCII characters, the first one standing
 * for zero), zero-padded to `width` characters if given: the domain is then `0..radix^width - 1`;
 * without a width, the shortest form (no leading zero) up to 2^63 - 1.
 *
 * @param alphabet The digits, zero first.
 * @param width The fixed width; default none (the shortest form).
 *
 * @example Radix 16
 * ```ts
 * import { radix } from "@kvid/core/codec";
 * import assert from "node:assert/strict";
 *
 * const hex = radix("0123456789abcdef", 6);
 * assert.equal(hex.encode(255), "0000ff");
 * assert.equal(hex.decode("0000ff"), 255n);
 * ```
 */
export function radix(alphabet: string, width?: number): RadixCodec {
  if (typeof alphabet !== "string" || alphabet.length < 2 || alphabet.length > 128) {
    throw new RangeError(
      `radix(alphabet): 2 to 128 characters, got ${describeValue(alphabet)}`,
    );
  }
  for (let i = 0; i < alphabet.length; i++) {
    if (alphabet.charCodeAt(i) > 127) {
      throw new RangeError(`radix(alphabet): ${JSON.stringify(alphabet[i])} is not ASCII`);
    }
    if (alphabet.indexOf(alphabet[i]) !== i) {
      throw new RangeError(`radix(alphabet): ${JSON.stringify(alphabet[i])} appears twice`);
    }
  }
  checkWidth("radix", width, alphabet.length);
  return new Radix(alphabet, width);
}

/**
 * Decimal digits, zero-padded to `width` if given (domain `0..10^width - 1`): fixed-width order
 * numbers, `DailyId`'s `format: "string"`.
 *
 * @param width The fixed width, 1 to 30; default none (plain decimal).
 *
 * @example Twelve-digit order numbers
 * ```ts
 * import { decimal } from "@kvid/core/codec";
 * import assert from "node:assert/strict";
 *
 * const orderNo = decimal(12);
 * assert.equal(orderNo.encode(42), "000000000042");
 * assert.equal(orderNo.decode("000000000042"), 42n);
 * assert.throws(() => orderNo.encode(10n ** 12n), { code: "domain" }); // never wrapped
 * ```
 */
export function decimal(width?: number): RadixCodec {
  checkWidth("decimal", width, 10);
  return new Radix(DECIMAL, width);
}

/**
 * Radix 36 ({@linkcode BASE36}: `0-9a-z`), zero-padded to `width` if given (domain
 * `0..36^width - 1`; 13 characters hold any 64-bit ID). Case-insensitive to read aloud, but
 * decoded strictly: uppercase is not in the alphabet.
 *
 * @param width The fixed width, 1 to 20; default none (the shortest form).
 *
 * @example
 * ```ts
 * import { base36 } from "@kvid/core/codec";
 * import assert from "node:assert/strict";
 *
 * assert.equal(base36().encode(1_000_000), "lfls");
 * assert.equal(base36(8).encode(1_000_000), "0000lfls");
 * ```
 */
export function base36(width?: number): RadixCodec {
  checkWidth("base36", width, 36);
  return new Radix(BASE36, width);
}

/**
 * Radix 62 ({@linkcode BASE62}: `0-9A-Za-z`), zero-padded to `width` if given (domain
 * `0..62^width - 1`; 11 characters hold any 64-bit ID). URL-safe, case-sensitive.
 *
 * @param width The fixed width, 1 to 16; default none (the shortest form).
 *
 * @example
 * ```ts
 * import { base62 } from "@kvid/core/codec";
 * import assert from "node:assert/strict";
 *
 * assert.equal(base62().encode(1_000_000), "4C92");
 * assert.equal(base62().decode("4C92"), 1_000_000n);
 * ```
 */
export function base62(width?: number): RadixCodec {
  checkWidth("base62", width, 62);
  return new Radix(BASE62, width);
}
