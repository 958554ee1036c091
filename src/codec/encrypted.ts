/**
 * The keyed form: an ID encrypted with FF1 (format-preserving encryption, NIST SP 800-38G) into a
 * fixed-width string of an alphabet, after a one-character key identifier, so keys can rotate.
 *
 * @module
 */

import { KvIdError } from "../contract/errors.ts";
import { checkId, type Codec, describeValue, malformed } from "./codec.ts";
import { Ff1 } from "./ff1.ts";
import type { RadixCodec } from "./radix.ts";

/**
 * Keys by key identifier, and the one new IDs are encrypted with: what {@linkcode parseKeys}
 * returns and {@linkcode encrypted} takes.
 *
 * @example Rotating keys: new IDs with key "2", IDs made with key "1" still decode
 * ```ts
 * import type { Keyring } from "@kvid/core/codec";
 *
 * const keyring: Keyring = {
 *   keys: { "1": crypto.getRandomValues(new Uint8Array(16)), "2": crypto.getRandomValues(new Uint8Array(16)) },
 *   current: "2",
 * };
 * ```
 */
export interface Keyring {
  /**
   * AES keys (16, 24 or 32 bytes) by key identifier: one character of the inner form's
   * alphabet, written before each encrypted ID.
   */
  keys: Readonly<Record<string, Uint8Array>>;
  /**
   * The key identifier new IDs are encrypted with; undefined: the only key, if there is one.
   *
   * @default {undefined}
   */
  current?: string;
}

/**
 * Options of {@linkcode encrypted}.
 *
 * @example
 * ```ts
 * import { base62, encrypted, type EncryptedOptions } from "@kvid/core/codec";
 *
 * const options: EncryptedOptions = {
 *   keys: { "1": crypto.getRandomValues(new Uint8Array(16)) },
 *   tweak: "share", // the generator's name: another name's IDs map elsewhere
 * };
 * const shareLink = encrypted(base62(7), options);
 * ```
 */
export interface EncryptedOptions extends Keyring {
  /**
   * Public text mixed into the permutation (FF1's tweak, UTF-8, at most 256 bytes): with the same
   * key, each tweak is an unrelated permutation. Use the generator's name, so that order 42 and
   * invoice 42 do not share a public form.
   *
   * @default {""}
   */
  tweak?: string;
}

/**
 * A keyed form, from {@linkcode encrypted}: `encode` gives the key identifier then `width - 1`
 * characters of the alphabet.
 *
 * @example
 * ```ts
 * import { decimal, encrypted, type EncryptedCodec } from "@kvid/core/codec";
 * import assert from "node:assert/strict";
 *
 * const orderNo: EncryptedCodec = encrypted(decimal(12), {
 *   keys: { "1": new Uint8Array(16).fill(7) }, // use a secret random key
 * });
 * assert.equal(orderNo.width, 13); // "1" then 12 digits
 * assert.equal(orderNo.max, 10n ** 12n - 1n);
 * ```
 */
export interface EncryptedCodec extends Codec<string> {
  /** The alphabet of every character, key identifier included. */
  readonly alphabet: string;
  /** The length of every output: the key identifier and the inner width. */
  readonly width: number;
  /** The key identifiers it decodes. */
  readonly keyIds: readonly string[];
  /** The key identifier it encodes with. */
  readonly current: string;
}

const utf8 = new TextEncoder();

class Encrypted implements EncryptedCodec {
  readonly alphabet: string;
  readonly width: number;
  readonly max: bigint;
  readonly keyIds: readonly string[];
  readonly current: string;
  readonly #inner: RadixCodec;
  readonly #ff1: Map<string, Ff1>;
  readonly #encoder: Ff1;

  constructor(inner: RadixCodec, alphabet: string, ff1: Map<string, Ff1>, current: string) {
    this.alphabet = alphabet;
    this.width = inner.width! + 1;
    this.max = inner.max;
    this.keyIds = Object.freeze([...ff1.keys()]);
    this.current = current;
    this.#inner = inner;
    this.#ff1 = ff1;
    this.#encoder = ff1.get(current)!;
  }

  encode(id: number | bigint): string {
    return this.current + this.#inner.encode(this.#encoder.encrypt(checkId(id, this.max)));
  }

  decode(encoded: string): bigint {
    if (typeof encoded !== "string") throw malformed("not a string", encoded);
    if (encoded.length !== this.width) {
      throw malformed(`not ${this.width} characters long (${encoded.length})`, encoded);
    }
    const keyId = encoded[0];
    const ff1 = this.#ff1.get(keyId);
    if (ff1 === undefined) {
      throw new KvIdError(
        "malformed",
        `unknown key identifier ${JSON.stringify(keyId)} (known: ${
          this.keyIds.map((k) => JSON.stringify(k)).join(", ")
        }): ${describeValue(encoded)}`,
      );
    }
    return ff1.decrypt(this.#inner.decode(encoded.slice(1)));
  }
}

/**
 * Encrypt IDs with FF1 (NIST SP 800-38G format-preserving encryption, on `@noble/ciphers` AES)
 * into the inner fixed-width form, after a one-character key identifier: a keyed bijection of
 * `0..inner.max`. Consecutive IDs give outputs that reveal neither their order nor how many
 * there are; only a holder of the key decodes them; no two IDs share an output (a permutation,
 * not a hash). IDs outside the domain are a `"domain"` error, never wrapped.
 *
 * The domain is `inner`'s: `decimal(12)` encrypts IDs 0 to 10^12 - 1 (into `"1"` + 12 digits);
 * at least 10^6 values (NIST's minimum). A counter approaching the end of the domain needs a
 * wider form, and IDs issued in the narrower one keep decoding with the old codec.
 *
 * What it does not give: the outputs are not trend-increasing (keep the raw ID as the database
 * key and index the public form, see {@linkcode withCodec}); it does not authenticate (any string
 * of the form decodes to some ID: check that the ID exists); the key identifier and the width
 * are visible.
 *
 * @param inner A fixed-width positional form ({@linkcode decimal}, {@linkcode base36},
 *   {@linkcode base62} or {@linkcode radix} with a width).
 * @param options The keys (16, 24 or 32 bytes each; a key identifier is a character of the
 *   alphabet), the current key and the tweak.
 *
 * @example Order numbers that do not reveal volume
 * ```ts
 * import { decimal, encrypted } from "@kvid/core/codec";
 * import assert from "node:assert/strict";
 *
 * const key = crypto.getRandomValues(new Uint8Array(16)); // in production: from a secret store
 * const orderNo = encrypted(decimal(12), { keys: { "1": key }, tweak: "order" });
 * const a = orderNo.encode(1000), b = orderNo.encode(1001);
 * assert.match(a, /^1\d{12}$/);
 * assert.notEqual(a.slice(0, 8), b.slice(0, 8)); // neighbours look unrelated
 * assert.equal(orderNo.decode(a), 1000n);
 * ```
 */
export function encrypted(inner: RadixCodec, options: EncryptedOptions): EncryptedCodec {
  if (
    inner === null || typeof inner !== "object" || typeof inner.alphabet !== "string" ||
    typeof inner.encode !== "function"
  ) {
    throw new TypeError(
      `encrypted(inner): a positional form (decimal, base36, base62, radix), got ${
        describeValue(inner)
      }`,
    );
  }
  if (inner.width === undefined) {
    throw new TypeError(
      "encrypted(inner): the inner form needs a fixed width (e.g. decimal(12)): FF1 permutes strings of one length",
    );
  }
  if (options === null || typeof options !== "object") {
    throw new TypeError(`encrypted: options must be an object, got ${secretKind(options)}`);
  }
  const keys = options.keys;
  if (keys === null || typeof keys !== "object") {
    throw new TypeError(
      `encrypted: keys must be an object of key id -> key, got ${secretKind(keys)}`,
    );
  }
  const ids = Object.keys(keys);
  if (ids.length === 0) throw new TypeError("encrypted: keys is empty");
  const current = options.current ?? (ids.length === 1 ? ids[0] : undefined);
  if (current === undefined) {
    throw new TypeError(
      `encrypted: with several keys (${
        ids.map(idLabel).join(", ")
      }), name the one to encrypt with: current`,
    );
  }
  if (!Object.hasOwn(keys, current)) {
    throw new RangeError(
      `encrypted: current key ${idLabel(current)} is not among the keys (${
        ids.map(idLabel).join(", ")
      })`,
    );
  }
  const tweak = options.tweak ?? "";
  if (typeof tweak !== "string") {
    throw new TypeError(`encrypted: tweak must be a string, got ${describeValue(tweak)}`);
  }
  const tweakBytes = utf8.encode(tweak);
  if (tweakBytes.length > 256) {
    throw new RangeError(`encrypted: tweak is ${tweakBytes.length} UTF-8 bytes, more than 256`);
  }
  const ff1 = new Map<string, Ff1>();
  for (const id of ids) {
    if (id.length !== 1 || !inner.alphabet.includes(id)) {
      throw new RangeError(
        `encrypted: key identifier ${idLabel(id)} must be one character of the alphabet ${
          JSON.stringify(inner.alphabet)
        }`,
      );
    }
    const key = keys[id];
    if (!(key instanceof Uint8Array) || ![16, 24, 32].includes(key.length)) {
      // The length only: key material never goes into a message.
      throw new RangeError(
        `encrypted: key ${idLabel(id)} must be 16, 24 or 32 bytes (AES-128/192/256), got ${
          key instanceof Uint8Array ? `${key.length} bytes` : secretKind(key)
        }`,
      );
    }
    ff1.set(id, new Ff1(key, inner.alphabet.length, inner.width, tweakBytes));
  }
  return new Encrypted(inner, inner.alphabet, ff1, current);
}

/**
 * Read keys from text, as kept in an environment variable such as `KVID_ID_KEY`: either one key
 * in hex (32, 48 or 64 hex digits; key identifier `"1"`), or `id:hex` pairs separated by commas,
 * the first being the current one (`"2:<new key>,1:<old key>"` after a rotation). Errors name
 * the key identifier and length, never the key.
 *
 * @param text The keys.
 *
 * @example
 * ```ts
 * import { decimal, encrypted, parseKeys } from "@kvid/core/codec";
 * import assert from "node:assert/strict";
 *
 * const ring = parseKeys("2:" + "ab".repeat(16) + ",1:" + "cd".repeat(16));
 * assert.equal(ring.current, "2");
 * assert.deepEqual(Object.keys(ring.keys).sort(), ["1", "2"]);
 * // Deno: parseKeys(Deno.env.get("KVID_ID_KEY") ?? ""); Node and Bun: process.env.KVID_ID_KEY
 * const orderNo = encrypted(decimal(12), { ...ring, tweak: "order" });
 * assert.ok(orderNo.encode(1).startsWith("2"));
 * ```
 */
export function parseKeys(text: string): Keyring {
  if (typeof text !== "string" || text.trim() === "") {
    throw new TypeError("parseKeys: no key given (set KVID_ID_KEY to a key in hex)");
  }
  const keys: Record<string, Uint8Array> = {};
  let current: string | undefined;
  const parts = text.trim().split(",");
  for (const [i, part] of parts.entries()) {
    const colon = part.indexOf(":");
    const id = colon < 0 && parts.length === 1 ? "1" : part.slice(0, colon).trim();
    const hex = (colon < 0 ? part : part.slice(colon + 1)).trim();
    if (colon < 0 && parts.length > 1) {
      throw new TypeError(`parseKeys: key ${i + 1} has no "id:" before it`);
    }
    if (id.length !== 1) {
      throw new TypeError(
        `parseKeys: key ${i + 1}: a key identifier is one character, got ${id.length}`,
      );
    }
    if (Object.hasOwn(keys, id)) throw new TypeError(`parseKeys: key ${JSON.stringify(id)} twice`);
    if (!/^(?:[0-9a-fA-F]{2})+$/.test(hex) || ![32, 48, 64].includes(hex.length)) {
      throw new RangeError(
        `parseKeys: key ${
          JSON.stringify(id)
        } must be 32, 48 or 64 hex digits (AES-128/192/256), got ${hex.length} characters${
          /^[0-9a-fA-F]*$/.test(hex) ? "" : " that are not all hex"
        }`,
      );
    }
    keys[id] = Uint8Array.from(hex.match(/../g)!, (b) => parseInt(b, 16));
    current ??= id;
  }
  return { keys, current };
}

/**
 * What a value given where key material belongs is, without any of it: its type and, for a
 * string or bytes, its length (a key passed as a hex string must not be printed).
 */
function secretKind(value: unknown): string {
  if (value === null) return "null";
  if (typeof value === "string") return `a string of ${value.length} characters`;
  if (ArrayBuffer.isView(value)) return `${value.constructor.name} of ${value.byteLength} bytes`;
  if (typeof value === "object") return value.constructor?.name ?? "object";
  return typeof value;
}

/** A key identifier for a message: one character as is; a longer one (a key in the wrong place?) by its length. */
function idLabel(id: string): string {
  return id.length === 1 ? JSON.stringify(id) : `of ${id.length} characters`;
}
