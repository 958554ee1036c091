/**
 * Edges of the codec's composed forms the main suite (tests/codec/codec_test.ts) left open, found by
 * mutations (tests/mutations.ts, `codec/`): a text whose affix is not where the form puts it, and
 * a text below an offset form's first ID. Each is refused with `malformed`, never decoded to
 * another ID.
 */

import "../support/deadline.ts"; // a time limit on every test of this file
import assert from "node:assert/strict";
import { KvIdError } from "../../mod.ts";
import { base62, decimal, offset, prefix, suffix } from "../../src/codec/mod.ts";

function throwsMalformed(fn: () => unknown, message: RegExp): void {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof KvIdError, String(err));
    assert.equal(err.code, "malformed");
    assert.match(err.message, message);
    return true;
  });
}

Deno.test("codec edges: an affix elsewhere in the text than its place is refused", () => {
  // Past the affix, each text would decode: only where the affix stands makes it malformed.
  const inv = prefix("A", base62());
  assert.equal(inv.decode("A12"), base62().decode("12"));
  throwsMalformed(() => inv.decode("BA12"), /does not start with "A"/);
  throwsMalformed(() => inv.decode("12A"), /does not start with "A"/);
  const eu = suffix("Z", base62());
  assert.equal(eu.decode("12Z"), base62().decode("12"));
  throwsMalformed(() => eu.decode("12ZB"), /does not end with "Z"/);
  throwsMalformed(() => eu.decode("Z12"), /does not end with "Z"/);
});

Deno.test("codec edges: offset() refuses every text below its first ID, the one just below too", () => {
  const form = offset(1000n, decimal(6));
  assert.equal(form.decode("001000"), 0n);
  assert.equal(form.encode(0), "001000");
  throwsMalformed(() => form.decode("000999"), /below the first ID 1000/);
  throwsMalformed(() => form.decode("000000"), /below the first ID 1000/);
  // The largest ID is the inner form's largest less the offset.
  assert.equal(form.max, 999_999n - 1000n);
  assert.equal(form.decode("999999"), form.max);
});

Deno.test("codec edges: the widest width of a radix, binary's exactly at 2^53", async () => {
  const { maxWidth, radix } = await import("../../src/codec/mod.ts");
  // Binary: 2^53 values in a half is the bound itself, so its widest width is 106.
  assert.equal(maxWidth(2), 106);
  assert.equal(radix("01", 106).width, 106);
  assert.throws(() => radix("01", 107), RangeError);
  assert.deepEqual([maxWidth(10), maxWidth(36), maxWidth(62)], [30, 20, 16]);
});

Deno.test("codec edges: a number above a narrow codec's largest ID is refused, not written wider", () => {
  const two = base62(2);
  assert.equal(two.encode(3843), "zz");
  assert.throws(() => two.encode(3844), KvIdError);
  assert.throws(() => decimal(3).encode(1000), KvIdError);
  assert.equal(decimal(3).encode(999), "999");
});

Deno.test("codec edges: a digit that crosses 2^53 in decode, and a non-ASCII character, decode exactly", () => {
  // 2^53 + 1: its last digit takes the value past 2^53 - 1, where a JS number would round it.
  assert.equal(decimal().decode("9007199254740993"), 9007199254740993n);
  throwsMalformed(
    () => base62().decode("1\u0080"),
    /character "\u0080" at 1 is not in the alphabet/,
  );
  throwsMalformed(() => base62().decode("\u00ff"), /at 0 is not in the alphabet/);
});

Deno.test("codec edges: widths and alphabets at and past their bounds", async () => {
  const { radix } = await import("../../src/codec/mod.ts");
  for (const w of [0, 31, 1.5]) {
    assert.throws(() => decimal(w), /decimal: width must be an integer from 1 to 30, got/);
  }
  assert.equal(decimal(1).encode(9), "9");
  const every = Array.from({ length: 128 }, (_, i) => String.fromCharCode(i)).join("");
  const all = radix(every); // 128 characters, \x7f among them: both bounds taken
  assert.equal(all.decode(all.encode(2n ** 63n - 1n)), 2n ** 63n - 1n);
  assert.equal(all.encode(127), "\x7f");
  for (const bad of ["0", every + "0", 12 as unknown as string]) {
    assert.throws(() => radix(bad), /radix\(alphabet\): 2 to 128 characters, got/);
  }
  assert.throws(() => radix("0é"), /"é" is not ASCII/);
});
