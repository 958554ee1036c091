/**
 * `@kvid/core/codec`: the plain forms, the keyed form (FF1) and the generator wrapper. The NIST
 * vectors are in ff1_test.ts; 10 million consecutive IDs on a 12-digit domain in
 * codec_slow_test.ts.
 */

import "../support/deadline.ts"; // a time limit on every test of this file
import assert from "node:assert/strict";
import fc from "fast-check";
import { DailyId, KvId, KvIdError } from "../../mod.ts";
import {
  asBigInt,
  asNumber,
  BASE36,
  base36,
  BASE62,
  base62,
  type Codec,
  dailyForm,
  dayForm,
  decimal,
  encrypted,
  Ff1,
  offset,
  parseKeys,
  prefix,
  radix,
  suffix,
  withCodec,
} from "../../src/codec/mod.ts";
import { openClient } from "../support/redis_clients.ts";
import { command, startServer } from "../support/redis_server.ts";
import { rejectsWith } from "../support/assert.ts";

const KEY_A = Uint8Array.from({ length: 16 }, (_, i) => i * 17);
const KEY_B = Uint8Array.from({ length: 32 }, (_, i) => 255 - i * 7);
const HEX_A = [...KEY_A].map((b) => b.toString(16).padStart(2, "0")).join("");

/** Throws a KvIdError of `code` whose message matches `message`. */
function throwsCode(fn: () => unknown, code: string, message?: RegExp): KvIdError {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof KvIdError, `expected a KvIdError, got ${err}`);
    assert.equal(err.code, code, err.message);
    if (message) assert.match(err.message, message);
    return err;
  }
  return assert.fail(`expected a KvIdError ${code}`);
}

/** The forms under test, with the width and alphabet each output must have. */
const FORMS: { name: string; codec: Codec<string>; pattern: RegExp }[] = [
  { name: "decimal(12)", codec: decimal(12), pattern: /^\d{12}$/ },
  { name: "base36(8)", codec: base36(8), pattern: /^[0-9a-z]{8}$/ },
  { name: "base62(7)", codec: base62(7), pattern: /^[0-9A-Za-z]{7}$/ },
  { name: "decimal()", codec: decimal(), pattern: /^(0|[1-9]\d*)$/ },
  { name: "base62()", codec: base62(), pattern: /^(0|[1-9A-Za-z][0-9A-Za-z]*)$/ },
  {
    name: 'prefix("INV-2026-", suffix("-EU", decimal(6)))',
    codec: prefix("INV-2026-", suffix("-EU", decimal(6))),
    pattern: /^INV-2026-\d{6}-EU$/,
  },
  {
    name: "encrypted(decimal(12))",
    codec: encrypted(decimal(12), { keys: { "1": KEY_A }, tweak: "order" }),
    pattern: /^1\d{12}$/,
  },
  {
    name: "encrypted(base36(10)), AES-256",
    codec: encrypted(base36(10), { keys: { k: KEY_B } }),
    pattern: /^k[0-9a-z]{10}$/,
  },
  {
    name: "encrypted(base62(7))",
    codec: encrypted(base62(7), { keys: { a: KEY_A }, tweak: "share" }),
    pattern: /^a[0-9A-Za-z]{7}$/,
  },
  {
    name: "offset(100000n, decimal(6))",
    codec: offset(100_000n, decimal(6)),
    pattern: /^[1-9]\d{5}$/,
  },
  {
    name: 'prefix("ORD", encrypted(decimal(6)))',
    codec: prefix("ORD", encrypted(decimal(6), { keys: { "7": KEY_A } })),
    pattern: /^ORD7\d{6}$/,
  },
];

Deno.test("plain forms: known values, the alphabets, zero padding", () => {
  assert.equal(BASE36, "0123456789abcdefghijklmnopqrstuvwxyz");
  assert.equal(BASE62, "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz");
  assert.equal(decimal(12).encode(42), "000000000042");
  assert.equal(decimal().encode(2n ** 63n - 1n), "9223372036854775807");
  assert.equal(base36().encode(1_000_000), "lfls");
  assert.equal(base36(13).encode(2n ** 63n - 1n), "1y2p0ij32e8e7");
  assert.equal(base62().encode(1_000_000), "4C92");
  assert.equal(base62().encode(0), "0");
  assert.equal(base62(11).encode(2n ** 63n - 1n), "AzL8n0Y58m7");
  assert.equal(base62().decode("AzL8n0Y58m7"), 2n ** 63n - 1n);
  assert.equal(radix("01", 8).encode(5), "00000101");
  // Fixed-width strings sort like their IDs (ASCII order of the alphabets).
  const ids = [0n, 9n, 10n, 35n, 36n, 61n, 62n, 3843n, 1_000_000n, 62n ** 7n - 1n];
  for (const form of [decimal(13), base36(9), base62(7)]) {
    const out = ids.map((id) => form.encode(id));
    assert.deepEqual([...out].sort(), out);
  }
  // The plain number and bigint forms, DailyId's.
  assert.equal(asNumber().encode(7n), 7);
  assert.equal(asBigInt().encode(7), 7n);
  assert.equal(dailyForm("string", 6).encode(20261130000001n), "20261130000001");
  assert.equal(dailyForm("number", 6).decode(20261130000001), 20261130000001n);
});

Deno.test("decode(encode(x)) = x at the domain's edges and random points, every output of its width and alphabet", () => {
  for (const { name, codec, pattern } of FORMS) {
    const edges = [0n, 1n, 2n, codec.max / 2n, codec.max - 1n, codec.max];
    for (const id of edges) {
      const text = codec.encode(id);
      assert.match(text, pattern, `${name} of ${id}`);
      assert.equal(codec.decode(text), id, `${name} of ${id}`);
    }
    fc.assert(
      fc.property(fc.bigInt({ min: 0n, max: codec.max }), (id) => {
        const text = codec.encode(id);
        assert.match(text, pattern, `${name} of ${id}`);
        assert.equal(codec.decode(text), id);
        // A number ID gives the same form as its bigint.
        if (id <= BigInt(Number.MAX_SAFE_INTEGER)) assert.equal(codec.encode(Number(id)), text);
      }),
      { seed: 26, numRuns: 500 },
    );
  }
});

Deno.test("DailyId's day forms equal its whole-ID forms: seq of a day, and the ID of that seq", () => {
  const days = fc.integer({ min: Date.UTC(1000, 0, 1), max: Date.UTC(9999, 11, 31) }).map((t) =>
    new Date(t).toISOString().slice(0, 10).replaceAll("-", "")
  );
  fc.assert(
    fc.property(
      days,
      fc.constantFrom("number", "bigint", "string") as fc.Arbitrary<"number" | "bigint" | "string">,
      fc.integer({ min: 1, max: 10 }),
      fc.double({ min: 0, max: 1, noNaN: true }),
      (day, format, digits, at) => {
        if (format === "number" && digits > 7) return;
        const seq = Math.max(1, Math.floor(at * (10 ** digits - 1)));
        const id = BigInt(day) * 10n ** BigInt(digits) + BigInt(seq);
        const whole = dailyForm(format, digits);
        const shown = dayForm(format, digits, day).encode(seq);
        assert.equal(shown, whole.encode(id));
        assert.equal(typeof shown, format);
        assert.equal(whole.decode(shown as never), id);
        assert.equal(String(shown), day + String(seq).padStart(digits, "0"));
      },
    ),
    { seed: 26, numRuns: 1000 },
  );
});

Deno.test("the keyed form is a bijection: all 10^6 IDs of 6 digits, every output once (exhaustive)", () => {
  // Radix 10, width 6: NIST's smallest domain, small enough to check every ID with a bitset.
  const codec = encrypted(decimal(6), { keys: { "1": KEY_A } });
  const seen = new Uint8Array(1_000_000 / 8);
  for (let id = 0; id < 1_000_000; id++) {
    const text = codec.encode(id);
    const out = Number(text.slice(1));
    assert.ok(text.length === 7 && out >= 0 && out < 1_000_000, text);
    const bit = 1 << (out & 7);
    if (seen[out >> 3] & bit) assert.fail(`ID ${id} collides: ${text}`);
    seen[out >> 3] |= bit;
  }
  assert.ok(seen.every((b) => b === 255), "every output taken");
  // And it decodes back, at random points of the domain.
  for (let id = 0; id < 1_000_000; id += 9973) {
    assert.equal(codec.decode(codec.encode(id)), BigInt(id));
  }
});

Deno.test("a different key or tweak gives a different permutation", () => {
  const base = encrypted(decimal(12), { keys: { "1": KEY_A } });
  const otherKey = encrypted(decimal(12), { keys: { "1": KEY_B } });
  const otherTweak = encrypted(decimal(12), { keys: { "1": KEY_A }, tweak: "invoice" });
  const ff1 = new Ff1(KEY_A, 10, 12);
  let sameKey = 0, sameTweak = 0;
  for (let id = 0; id < 2000; id++) {
    const a = base.encode(id);
    if (a === otherKey.encode(id)) sameKey++;
    if (a === otherTweak.encode(id)) sameTweak++;
    assert.equal(a.slice(1), decimal(12).encode(ff1.encrypt(BigInt(id)))); // FF1, nothing else
  }
  // Two independent permutations of 10^12 values agree on a given ID with probability 10^-12.
  assert.equal(sameKey, 0);
  assert.equal(sameTweak, 0);
  // The key actually decides: decoding with the wrong one gives another ID.
  assert.notEqual(otherKey.decode(base.encode(1001)), 1001n);
});

Deno.test("consecutive IDs do not look consecutive: rank correlation near 0, neighbours differ in ~90% of digits", () => {
  const N = 10_000;
  const first = 5_000_000; // a counter some way into its life
  const measure = (codec: Codec<string>, digitsOf: (s: string) => string) => {
    const outs: string[] = [];
    for (let i = 0; i < N; i++) outs.push(digitsOf(codec.encode(first + i)));
    // Spearman's rho between the ID's rank (i) and the output's rank.
    const order = outs.map((s, i) => [s, i] as const).sort((a, b) => (a[0] < b[0] ? -1 : 1));
    let d2 = 0;
    order.forEach(([, i], rank) => (d2 += (rank - i) ** 2));
    const rho = 1 - (6 * d2) / (N * (N * N - 1));
    let differing = 0;
    for (let i = 1; i < N; i++) {
      for (let k = 0; k < outs[i].length; k++) if (outs[i][k] !== outs[i - 1][k]) differing++;
    }
    return { rho, differ: differing / ((N - 1) * outs[0].length) };
  };
  const keyed = measure(encrypted(decimal(12), { keys: { "1": KEY_A } }), (s) => s.slice(1));
  // For a random permutation rho has a standard deviation of 1/sqrt(N - 1) = 0.01: 0.05 is five
  // of them. Uniform digits differ with probability 0.9, with a standard deviation of 0.001 here.
  assert.ok(Math.abs(keyed.rho) < 0.05, `rho ${keyed.rho}`);
  assert.ok(keyed.differ > 0.85 && keyed.differ < 0.95, `digits differing ${keyed.differ}`);
  // The check can fail: the plain form of the same IDs fails both.
  const plain = measure(decimal(12), (s) => s);
  assert.ok(plain.rho > 0.99 && plain.differ < 0.2, `plain: ${JSON.stringify(plain)}`);
});

Deno.test("key rotation: new IDs with the current key, old ones still decode, an unknown key id is refused", () => {
  const before = encrypted(decimal(12), { keys: { "1": KEY_A }, tweak: "order" });
  const after = encrypted(decimal(12), {
    keys: { "1": KEY_A, "2": KEY_B },
    current: "2",
    tweak: "order",
  });
  const old = before.encode(1001);
  assert.equal(after.decode(old), 1001n);
  const fresh = after.encode(1002);
  assert.match(fresh, /^2\d{12}$/);
  assert.equal(after.decode(fresh), 1002n);
  assert.deepEqual(after.keyIds, ["1", "2"]);
  throwsCode(() => before.decode(fresh), "malformed", /unknown key identifier "2" \(known: "1"\)/);
  // parseKeys: the first key listed is current.
  const ring = parseKeys(`2:${"ab".repeat(32)}, 1:${HEX_A}`);
  assert.equal(ring.current, "2");
  assert.equal(ring.keys["2"].length, 32);
  const fromEnv = encrypted(decimal(12), { ...parseKeys(HEX_A), tweak: "order" });
  assert.equal(fromEnv.encode(1001), old, "a bare hex key has key id 1");
});

Deno.test("bad input: typed errors naming what was wrong", () => {
  // An ID outside the domain: never wrapped.
  throwsCode(
    () => decimal(12).encode(10n ** 12n),
    "domain",
    /1000000000000 is outside the codec's domain 0\.\.999999999999/,
  );
  throwsCode(() => base62(7).encode(-1), "domain", /-1 is outside/);
  throwsCode(() => decimal(6).encode(1.5), "domain", /safe integer or a bigint, got number 1.5/);
  throwsCode(() => decimal(6).encode(2 ** 53), "domain", /safe integer/);
  throwsCode(() => asNumber().encode(2n ** 53n), "domain");
  throwsCode(() => FORMS[6].codec.encode(10n ** 12n), "domain", /0\.\.999999999999/);
  throwsCode(() => new Ff1(KEY_A, 10, 6).encrypt(1_000_000n), "domain");
  // A string not of the form.
  throwsCode(
    () => decimal(12).decode("00000000004x"),
    "malformed",
    /character "x" at 11 is not in the alphabet/,
  );
  throwsCode(() => decimal(12).decode("42"), "malformed", /not 12 characters long \(2\)/);
  throwsCode(() => base36(8).decode("0000LFLS"), "malformed", /"L" at 4/);
  throwsCode(() => base62().decode("04C92"), "malformed", /leading "0"/);
  throwsCode(() => base62().decode(""), "malformed", /empty/);
  throwsCode(() => base62().decode("AzL8n0Y58m8"), "malformed", /above the largest ID/);
  throwsCode(() => decimal(6).decode("٣٣٣٣٣٣"), "malformed", /not in the alphabet/);
  throwsCode(
    () => prefix("INV-", decimal(6)).decode("IMV-000001"),
    "malformed",
    /does not start with "INV-"/,
  );
  throwsCode(
    () => suffix("-EU", decimal(6)).decode("000001-US"),
    "malformed",
    /does not end with "-EU"/,
  );
  throwsCode(() => FORMS[6].codec.decode("1000"), "malformed", /not 13 characters long/);
  throwsCode(
    () => FORMS[6].codec.decode("9" + "0".repeat(12)),
    "malformed",
    /unknown key identifier "9"/,
  );
  throwsCode(() => FORMS[6].codec.decode("1" + "0".repeat(11) + "a"), "malformed", /"a" at 11/);
  throwsCode(() => decimal(6).decode(42 as unknown as string), "malformed", /not a string/);
  // Setup mistakes, at construction; key material never appears in a message.
  const wrongKey = (key: Uint8Array) => () => encrypted(decimal(12), { keys: { "1": key } });
  assert.throws(wrongKey(new Uint8Array(15)), {
    name: "RangeError",
    message: /key "1" must be 16, 24 or 32 bytes .*got 15 bytes/,
  });
  assert.throws(wrongKey(new Uint8Array(0)), /got 0 bytes/);
  assert.throws(
    () => encrypted(decimal(12), { keys: { "x": KEY_A } }),
    /key identifier "x" must be one character of the alphabet "0123456789"/,
  );
  assert.throws(
    () => encrypted(decimal(12), { keys: { "1": KEY_A, "2": KEY_B } }),
    /name the one to encrypt with: current/,
  );
  assert.throws(
    () => encrypted(decimal(12), { keys: { "1": KEY_A }, current: "3" }),
    /current key "3" is not among the keys/,
  );
  assert.throws(
    () => encrypted(decimal(5), { keys: { "1": KEY_A } }),
    /at least 1,000,000 \(NIST SP 800-38G Rev\. 1\), got 10\^5/,
  );
  assert.throws(() => encrypted(decimal(), { keys: { "1": KEY_A } }), /needs a fixed width/);
  assert.throws(() => decimal(31), /width must be an integer from 1 to 30, got number 31/);
  assert.throws(() => base62(17), /from 1 to 16/);
  assert.throws(() => radix("0120"), /"0" appears twice/);
  assert.throws(() => prefix("", decimal(6)), /non-empty string/);
  for (
    const bad of [
      HEX_A.slice(2),
      HEX_A + "zz",
      "1:" + HEX_A.slice(1),
      "1:" + HEX_A + ",1:" + HEX_A,
      "",
    ]
  ) {
    try {
      parseKeys(bad);
      assert.fail(`parseKeys accepted ${bad.length} characters`);
    } catch (err) {
      assert.ok(err instanceof TypeError || err instanceof RangeError, String(err));
      assert.ok(!err.message.includes(HEX_A.slice(2, 12)), `key material in: ${err.message}`);
    }
  }
  assert.throws(
    () => parseKeys(HEX_A.slice(2)),
    /must be 32, 48 or 64 hex digits .*got 30 characters/,
  );
});

Deno.test("withCodec on KvId and DailyId against a real server: public forms, raw IDs, and a counter past the domain", async () => {
  await using server = await startServer();
  await using client = await openClient("node-redis", server.url);
  const redis = client.redis;
  const codec = encrypted(decimal(6), { keys: { "1": KEY_A }, tweak: "order" });
  await using ORDER_ID = new KvId("codec:order", { redis, minStep: 10 });
  const ORDER_NO = withCodec(ORDER_ID, codec);
  const first = await ORDER_NO.next();
  assert.match(first, /^1\d{6}$/);
  assert.equal(ORDER_NO.decode(first), 1n);
  const { id, encoded } = await ORDER_NO.nextPair();
  const raw: number = id; // number mode: the raw type carries over
  assert.equal(raw, 2);
  assert.equal(codec.decode(encoded), 2n);
  const batch = await ORDER_NO.nextBatch(100);
  assert.deepEqual(
    batch.map((s) => Number(ORDER_NO.decode(s))),
    Array.from({ length: 100 }, (_, i) => i + 3),
  );
  assert.equal(new Set(batch).size, 100);
  await ORDER_ID.close();

  // A DailyId with a prefix: CosId's BIZ250319001 shape, here with the full date.
  await using BIZ = new DailyId("codec:biz", {
    redis,
    clock: () => Date.UTC(2026, 10, 30, 12),
    digits: 3,
  });
  const bizNo = withCodec(BIZ, prefix("BIZ", dailyForm("string", 3)));
  assert.deepEqual(await bizNo.nextBatch(2), ["BIZ20261130001", "BIZ20261130002"]);
  assert.equal(BIZ.parse(Number(bizNo.decode("BIZ20261130002"))).seq, 2);
  await BIZ.close();

  // A counter whose next IDs are past what 6 digits hold: the call fails, naming the counter.
  await command(server.url, "HSET", "kvid", "codec:full", "999998");
  await using FULL = new KvId("codec:full", { redis, minStep: 1, maxStep: 1 });
  const full = withCodec(FULL, codec);
  assert.match(await full.next(), /^1\d{6}$/); // 999999, the last one
  const err = await rejectsWith(
    full.next(),
    "domain",
    /1000000 is outside the codec's domain 0\.\.999999.*use a wider form \(hash "kvid", field "codec:full"\)/,
  );
  assert.equal(err.field, "codec:full");
  assert.ok(err.cause instanceof KvIdError);
});
