/**
 * FF1 (NIST SP 800-38G) against the standard's published sample vectors, and against noble's own
 * `FF1` on random keys, radixes, lengths, tweaks and inputs (an independent implementation of the
 * same standard on the same AES).
 */

import "../support/deadline.ts"; // a time limit on every test of this file
import assert from "node:assert/strict";
import fc from "fast-check";
import { FF1 as NobleFF1 } from "@noble/ciphers/ff1.js";
import { base36, decimal, Ff1 } from "../../src/codec/mod.ts";

const hex = (s: string) => Uint8Array.from(s.match(/../g) ?? [], (b) => parseInt(b, 16));

const K128 = "2B7E151628AED2A6ABF7158809CF4F3C";
const K192 = K128 + "EF4359D8D580AA4F";
const K256 = K192 + "7F036D6F04FC6A94";
const DIGITS = "0123456789";
const ALNUM = "0123456789abcdefghi";
const TWEAK10 = "39383736353433323130";
const TWEAK36 = "3737373770717273373737";

// NIST, "FF1 samples" (Examples of FF1, CSRC cryptographic standards and guidelines examples):
// samples 1-3 with AES-128, 4-6 with AES-192, 7-9 with AES-256.
const SAMPLES: { n: number; key: string; radix: 10 | 36; tweak: string; pt: string; ct: string }[] =
  [
    { n: 1, key: K128, radix: 10, tweak: "", pt: DIGITS, ct: "2433477484" },
    { n: 2, key: K128, radix: 10, tweak: TWEAK10, pt: DIGITS, ct: "6124200773" },
    { n: 3, key: K128, radix: 36, tweak: TWEAK36, pt: ALNUM, ct: "a9tv40mll9kdu509eum" },
    { n: 4, key: K192, radix: 10, tweak: "", pt: DIGITS, ct: "2830668132" },
    { n: 5, key: K192, radix: 10, tweak: TWEAK10, pt: DIGITS, ct: "2496655549" },
    { n: 6, key: K192, radix: 36, tweak: TWEAK36, pt: ALNUM, ct: "xbj3kv35jrawxv32ysr" },
    { n: 7, key: K256, radix: 10, tweak: "", pt: DIGITS, ct: "6657667009" },
    { n: 8, key: K256, radix: 10, tweak: TWEAK10, pt: DIGITS, ct: "1001623463" },
    { n: 9, key: K256, radix: 36, tweak: TWEAK36, pt: ALNUM, ct: "xs8a0azh2avyalyzuwd" },
  ];

for (const s of SAMPLES) {
  Deno.test(`FF1 NIST sample ${s.n}: AES-${s.key.length * 4}, radix ${s.radix}, ${s.tweak ? "with" : "no"} tweak`, () => {
    const form = s.radix === 10 ? decimal(s.pt.length) : base36(s.pt.length);
    const ff1 = new Ff1(hex(s.key), s.radix, s.pt.length, hex(s.tweak));
    const ct = form.encode(ff1.encrypt(form.decode(s.pt)));
    assert.equal(ct, s.ct);
    assert.equal(form.encode(ff1.decrypt(form.decode(s.ct))), s.pt);
    // noble's FF1 agrees on the published vectors too (an independent check of them).
    const digits = [...s.pt].map((c) => parseInt(c, 36));
    const theirs = NobleFF1(s.radix, hex(s.key), hex(s.tweak)).encrypt(digits);
    assert.equal(theirs.map((d) => d.toString(36)).join(""), s.ct);
  });
}

Deno.test("FF1 equals noble's FF1 on random keys, radixes, lengths, tweaks and inputs", () => {
  const cases = fc.record({
    key: fc.constantFrom(16, 24, 32).chain((n) => fc.uint8Array({ minLength: n, maxLength: n })),
    radix: fc.constantFrom(2, 10, 16, 36, 62, 256, 1000, 65535),
    len: fc.integer({ min: 2, max: 40 }),
    tweak: fc.uint8Array({ maxLength: 40 }),
    seed: fc.bigInt({ min: 0n, max: 2n ** 400n }),
  }).filter(({ radix, len }) =>
    BigInt(radix) ** BigInt(len) >= 1_000_000n &&
    BigInt(radix) ** BigInt(len - Math.floor(len / 2)) <= 2n ** 53n
  );
  fc.assert(
    fc.property(cases, ({ key, radix, len, tweak, seed }) => {
      const ff1 = new Ff1(key, radix, len, tweak);
      const x = seed % ff1.size;
      const digits: number[] = [];
      for (let i = 0, v = x; i < len; i++, v /= BigInt(radix)) {
        digits.unshift(Number(v % BigInt(radix)));
      }
      const theirs = NobleFF1(radix, key, tweak).encrypt(digits);
      const y = theirs.reduce((acc, d) => acc * BigInt(radix) + BigInt(d), 0n);
      assert.equal(ff1.encrypt(x), y);
      assert.equal(ff1.decrypt(y), x);
    }),
    { seed: 26, numRuns: 300 },
  );
});

Deno.test("FF1 refuses each bad parameter with a RangeError naming it, and takes each bound", () => {
  const key = hex(K128);
  const refused = (fn: () => unknown, message: RegExp) =>
    assert.throws(fn, (err: unknown) => {
      assert.ok(err instanceof RangeError, String(err));
      assert.match(err.message, message);
      return true;
    });
  refused(() => new Ff1(key.subarray(0, 15), 10, 6), /16, 24 or 32 bytes, got 15 bytes/);
  refused(() => new Ff1("k".repeat(16) as unknown as Uint8Array, 10, 6), /bytes, got string$/);
  refused(() => new Ff1(key, 1, 40), /radix must be an integer from 2 to 65536, got 1$/);
  refused(() => new Ff1(key, 65537, 2), /radix must be .*, got 65537$/);
  refused(() => new Ff1(key, 10.5, 6), /radix must be .*, got 10.5$/);
  refused(() => new Ff1(key, 10, 1), /length must be an integer of at least 2, got 1$/);
  refused(() => new Ff1(key, 10, 6.5), /length must be .*, got 6.5$/);
  refused(() => new Ff1(key, 10, 5), /at least 1,000,000 .* got 10\^5 = 100000$/);
  refused(() => new Ff1(key, 2, 107), /at most 2\^53 here, got 2\^54/);
  refused(() => new Ff1(key, 10, 6, new Uint8Array(257)), /tweak must be a Uint8Array/);
  refused(() => new Ff1(key, 10, 6, [1] as unknown as Uint8Array), /tweak must be a Uint8Array/);
  // The bounds themselves are taken: radix 65536, length 2, 2^53 in a half, a 256-byte tweak.
  assert.equal(new Ff1(key, 65536, 2).size, 2n ** 32n);
  assert.equal(new Ff1(key, 2, 106).size, 2n ** 106n);
  assert.equal(new Ff1(key, 10, 6, new Uint8Array(256)).size, 1_000_000n);
});

Deno.test("FF1 refuses a value outside its domain, naming the domain", () => {
  const ff1 = new Ff1(hex(K128), 10, 6);
  for (const x of [-1n, 1_000_000n]) {
    for (const fn of [() => ff1.encrypt(x), () => ff1.decrypt(x)]) {
      assert.throws(fn, { code: "domain", message: /outside 0\.\.999999$/ });
    }
  }
  assert.equal(ff1.decrypt(ff1.encrypt(999_999n)), 999_999n);
});

Deno.test("FF1 equals noble's FF1 where a half passes 2^52: radix 2 length 106, radix 3 length 66", () => {
  // (x + y) mod radix^m with radix^m above 2^52 no longer fits a JS number: the bigint path.
  for (const [radix, len] of [[2, 106], [3, 66]]) {
    fc.assert(
      fc.property(
        fc.uint8Array({ minLength: 16, maxLength: 16 }),
        fc.bigInt({ min: 0n }),
        (key, seed) => {
          const ff1 = new Ff1(key, radix, len);
          const x = seed % ff1.size;
          const digits: number[] = [];
          for (let i = 0, v = x; i < len; i++, v /= BigInt(radix)) {
            digits.unshift(Number(v % BigInt(radix)));
          }
          const theirs = NobleFF1(radix, key).encrypt(digits);
          const y = theirs.reduce((acc, d) => acc * BigInt(radix) + BigInt(d), 0n);
          assert.equal(ff1.encrypt(x), y);
          assert.equal(ff1.decrypt(y), x);
        },
      ),
      { seed: 36, numRuns: 40 },
    );
  }
});
