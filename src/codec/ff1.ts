/**
 * FF1 format-preserving encryption (NIST SP 800-38G Rev. 1, §5.1, Algorithms 7 and 8) over
 * numeral strings of a fixed length `n` in a `radix`, i.e. a keyed permutation of the integers
 * `0..radix^n - 1`, on the AES block cipher of `@noble/ciphers` (audited).
 *
 * Only the FF1 construction is here; the block cipher is noble's. It uses noble's single-block
 * AES (`unsafe.expandKeyLE`, `unsafe.encryptBlock` and `unsafe.encrypt`, the helpers noble's own
 * modes and FF1 are built on), so the key schedule is expanded once per key, not once per block:
 * noble's public `ecb` expands it on every call (an order of magnitude slower a block than
 * `encryptBlock`), and noble's `FF1` on every encryption, with bigints throughout (over an order
 * of magnitude slower per ID than this class, measured interleaved; `encrypt` on words instead of
 * `encryptBlock` is faster again). The CBC-MAC of P and of the tweak's full blocks is
 * computed once per instance. `unsafe` may change between noble's releases, so the version is
 * pinned exactly in deno.json; the NIST sample vectors and a comparison with noble's `FF1` on
 * random inputs (tests/codec/ff1_test.ts) catch a change.
 *
 * The domain is at least 10^6 values (Rev. 1's minimum, radix^minlen ≥ 1,000,000), so 6 decimal
 * digits, or 4 characters of radix 36 or 62, at the least. The halves of a numeral string are
 * kept as JS numbers: radix^ceil(n/2) must stay within 2^53.
 *
 * @module
 */

import { unsafe } from "@noble/ciphers/aes.js";
import { KvIdError } from "../contract/errors.ts";
import { describeValue } from "./codec.ts";

const { expandKeyLE, encryptBlock, encrypt } = unsafe;
const SAFE = 2 ** 53;
/** Above this modulus `r * 256 + byte` could pass 2^53: the round's reduction takes bigints. */
const HORNER_MAX = 2 ** 45;

/**
 * FF1 with one key, radix, length and tweak: `encrypt` and `decrypt` are inverse permutations of
 * `0..radix^length - 1` (an integer stands for its numeral string of `length` digits, most
 * significant first).
 *
 * @example Sample 1 of NIST's FF1 examples
 * ```ts
 * import { Ff1 } from "@kvid/core/codec";
 * import assert from "node:assert/strict";
 *
 * const hex = (s: string) => Uint8Array.from(s.match(/../g)!, (b) => parseInt(b, 16));
 * const ff1 = new Ff1(hex("2B7E151628AED2A6ABF7158809CF4F3C"), 10, 10);
 * assert.equal(ff1.encrypt(123456789n), 2433477484n); // PT 0123456789 -> CT 2433477484
 * assert.equal(ff1.decrypt(2433477484n), 123456789n);
 * ```
 */
export class Ff1 {
  /** The radix of the numerals. */
  readonly radix: number;
  /** The length of the numeral strings. */
  readonly length: number;
  /** The number of values permuted: `radix^length`. */
  readonly size: bigint;

  readonly #xk: Uint32Array;
  readonly #u: number;
  readonly #v: number;
  readonly #b: number;
  readonly #d: number;
  readonly #pow: number[]; // radix^0 .. radix^v as numbers
  readonly #powV: bigint;
  /**
   * The CBC-MAC state after every block of P || Q but the last (key, lengths, tweak), xored with
   * the last block's fixed bytes (the tweak's tail, the padding; zeros where [i] || NUM(B) go).
   */
  readonly #constant: Uint8Array;
  readonly #block = new Uint8Array(16);
  readonly #words = new Uint32Array(3);

  /**
   * Expand the key and precompute what every encryption of this length and tweak shares.
   *
   * @param key The AES key: 16, 24 or 32 bytes (AES-128, -192, -256).
   * @param radix The radix, 2 to 65,536.
   * @param length The numeral string length `n`, with radix^n ≥ 10^6 and radix^ceil(n/2) ≤ 2^53.
   * @param tweak The tweak, 0 to 256 bytes (public; different tweaks give unrelated permutations).
   */
  constructor(
    key: Uint8Array,
    radix: number,
    length: number,
    tweak: Uint8Array = new Uint8Array(),
  ) {
    if (!(key instanceof Uint8Array) || ![16, 24, 32].includes(key.length)) {
      throw new RangeError(
        `FF1: the AES key must be 16, 24 or 32 bytes, got ${
          key instanceof Uint8Array ? `${key.length} bytes` : typeof key
        }`,
      );
    }
    if (!Number.isInteger(radix) || radix < 2 || radix > 65536) {
      throw new RangeError(`FF1: radix must be an integer from 2 to 65536, got ${radix}`);
    }
    if (!Number.isInteger(length) || length < 2) {
      throw new RangeError(`FF1: length must be an integer of at least 2, got ${length}`);
    }
    const size = BigInt(radix) ** BigInt(length);
    if (size < 1_000_000n) {
      throw new RangeError(
        `FF1: radix^length must be at least 1,000,000 (NIST SP 800-38G Rev. 1), got ${radix}^${length} = ${size}`,
      );
    }
    const u = Math.floor(length / 2);
    const v = length - u;
    if (BigInt(radix) ** BigInt(v) > 2n ** 53n) {
      throw new RangeError(
        `FF1: radix^ceil(length/2) must be at most 2^53 here, got ${radix}^${v}: use a shorter length`,
      );
    }
    if (!(tweak instanceof Uint8Array) || tweak.length > 256) {
      throw new RangeError("FF1: the tweak must be a Uint8Array of at most 256 bytes");
    }
    this.radix = radix;
    this.length = length;
    this.size = size;
    this.#u = u;
    this.#v = v;
    this.#pow = [1];
    for (let i = 1; i <= v; i++) this.#pow.push(this.#pow[i - 1] * radix);
    this.#powV = BigInt(this.#pow[v]);
    // b = ceil(ceil(v * log2(radix)) / 8) = the bytes of radix^v - 1, computed exactly.
    const b = Math.ceil((BigInt(this.#pow[v]) - 1n).toString(2).length / 8);
    this.#b = b;
    this.#d = 4 * Math.ceil(b / 4) + 4; // at most 12 (b ≤ 7): S is the start of R
    this.#xk = expandKeyLE(key);

    const t = tweak.length;
    const pad = (((-t - b - 1) % 16) + 16) % 16;
    // P = [1]^1 || [2]^1 || [1]^1 || [radix]^3 || [10]^1 || [u mod 256]^1 || [n]^4 || [t]^4
    const pq = new Uint8Array(16 + t + pad + 1 + b);
    pq.set([1, 2, 1, (radix >>> 16) & 0xff, (radix >>> 8) & 0xff, radix & 0xff, 10, u & 0xff]);
    new DataView(pq.buffer).setUint32(8, length, false);
    new DataView(pq.buffer).setUint32(12, t, false);
    pq.set(tweak, 16);
    // Q = T || [0]^pad || [i]^1 || [NUM(B)]^b: only [i] and NUM(B) change between rounds, and
    // they fit the last block (1 + b ≤ 8), so the CBC-MAC of everything before it is constant.
    const y = new Uint8Array(16);
    const last = pq.length - 16;
    for (let off = 0; off < last; off += 16) {
      for (let k = 0; k < 16; k++) y[k] ^= pq[off + k];
      encryptBlock(this.#xk, y);
    }
    const tail = pq.slice(last);
    for (let k = 0; k < 16; k++) tail[k] ^= y[k];
    this.#constant = tail;
  }

  /** Encrypt the numeral string of `x` (`0 ≤ x < radix^length`). */
  encrypt(x: bigint): bigint {
    this.#check(x);
    let a = Number(x / this.#powV);
    let b = Number(x % this.#powV);
    for (let i = 0; i < 10; i++) {
      const m = i % 2 === 0 ? this.#u : this.#v;
      const c = this.#add(a, this.#round(i, b, m), m);
      a = b;
      b = c;
    }
    return BigInt(a) * this.#powV + BigInt(b);
  }

  /** Decrypt: the inverse of {@linkcode Ff1.encrypt}. */
  decrypt(y: bigint): bigint {
    this.#check(y);
    let a = Number(y / this.#powV);
    let b = Number(y % this.#powV);
    for (let i = 9; i >= 0; i--) {
      const m = i % 2 === 0 ? this.#u : this.#v;
      const c = this.#add(b, -this.#round(i, a, m), m);
      b = a;
      a = c;
    }
    return BigInt(a) * this.#powV + BigInt(b);
  }

  #check(x: bigint): void {
    if (typeof x !== "bigint" || x < 0n || x >= this.size) {
      throw new KvIdError("domain", `FF1: ${describeValue(x)} is outside 0..${this.size - 1n}`);
    }
  }

  /** (x + y) mod radix^m for x in 0..radix^m - 1 and |y| < radix^m. */
  #add(x: number, y: number, m: number): number {
    const mod = this.#pow[m];
    if (mod <= SAFE / 2) {
      const s = x + y;
      return s >= mod ? s - mod : s < 0 ? s + mod : s;
    }
    const s = (BigInt(x) + BigInt(y)) % BigInt(mod);
    return Number(s < 0n ? s + BigInt(mod) : s);
  }

  /** NUM(S) mod radix^m for round `i` with the other half's value `half`. */
  #round(i: number, half: number, m: number): number {
    // The last block of P || Q: the constant part (CBC state xor the block's fixed bytes), then
    // [i] and [NUM(B)]^b xored in at its end.
    const block = this.#block;
    block.set(this.#constant);
    const b = this.#b;
    block[15 - b] ^= i;
    let n = half;
    for (let k = 15; k > 15 - b; k--) {
      const byte = n % 256;
      block[k] ^= byte;
      n = (n - byte) / 256;
    }
    // R = PRF(P || Q), the last CBC-MAC block: one AES block on four little-endian words (noble's
    // byte order), which saves encryptBlock's checks and views.
    const r = encrypt(
      this.#xk,
      block[0] | (block[1] << 8) | (block[2] << 16) | (block[3] << 24),
      block[4] | (block[5] << 8) | (block[6] << 16) | (block[7] << 24),
      block[8] | (block[9] << 8) | (block[10] << 16) | (block[11] << 24),
      block[12] | (block[13] << 8) | (block[14] << 16) | (block[15] << 24),
    );
    const words = this.#words;
    words[0] = r.s0;
    words[1] = r.s1;
    words[2] = r.s2;
    // S is the first d bytes of R: d ≤ 12 here (b ≤ 7), so no further blocks are needed.
    const d = this.#d;
    const mod = this.#pow[m];
    if (mod <= HORNER_MAX) {
      let y = 0;
      for (let k = 0; k < d; k++) y = (y * 256 + ((words[k >> 2] >>> ((k & 3) * 8)) & 255)) % mod;
      return y;
    }
    let y = 0n;
    for (let k = 0; k < d; k++) y = (y << 8n) | BigInt((words[k >> 2] >>> ((k & 3) * 8)) & 255);
    return Number(y % BigInt(mod));
  }
}
