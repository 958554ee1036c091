/** Bad input at construction: a TypeError or RangeError naming what was wrong, no I/O. */

import "../support/deadline.ts"; // a time limit on every test of this file
import assert from "node:assert/strict";
import {
  configure,
  fromIoredis,
  fromNodeRedis,
  KvId,
  type KvIdOptions,
  type RedisClient,
} from "../../mod.ts";

const redis: RedisClient = {
  hincrby: () => Promise.reject(new Error("no I/O expected")),
  eval: () => Promise.reject(new Error("no I/O expected")),
  evalsha: () => Promise.reject(new Error("no I/O expected")),
};

function throws(make: () => unknown, type: ErrorConstructor, message: RegExp): void {
  assert.throws(make, (e: unknown) => {
    assert.ok(e instanceof type, `expected ${type.name}, got ${e}`);
    assert.match((e as Error).message, message);
    return true;
  });
}

Deno.test("names: non-empty, well-formed strings of at most 4,096 UTF-8 bytes", () => {
  for (const bad of [undefined, null, 42, {}, ["a"], Symbol("x")]) {
    throws(() => new KvId(bad as unknown as string, { redis }), TypeError, /name must be a string/);
  }
  throws(() => new KvId("", { redis }), TypeError, /name must not be empty/);
  throws(() => new KvId("a\uD800b", { redis }), TypeError, /well-formed/);
  throws(() => new KvId("é".repeat(2049), { redis }), TypeError, /4098 UTF-8 bytes/);
  assert.equal(new KvId("é".repeat(2048), { redis }).name.length, 2048);
  // 3-byte characters either side of the bound (a name of at most 4,096 / 3 units is never encoded).
  assert.equal(new KvId("€".repeat(1365), { redis }).name.length, 1365);
  throws(() => new KvId("€".repeat(1366), { redis }), TypeError, /4098 UTF-8 bytes/);
  throws(() => new KvId("🙂".repeat(1025), { redis }), TypeError, /4100 UTF-8 bytes/);
  throws(() => new KvId("x", { redis, key: "" }), TypeError, /key must not be empty/);
  throws(() => new KvId("x", { redis, key: 7 as unknown as string }), TypeError, /key must be/);
});

Deno.test("options: wrong types are TypeErrors, out of range RangeErrors, each named", () => {
  const cases: [Record<string, unknown>, ErrorConstructor, RegExp][] = [
    [{ minStep: "10" }, TypeError, /minStep must be a number/],
    [{ minStep: 0 }, RangeError, /minStep must be between 1/],
    [{ minStep: 1.5 }, RangeError, /minStep must be an integer/],
    [{ minStep: NaN }, TypeError, /minStep must be a number/],
    [{ maxStep: 5, minStep: 10 }, RangeError, /maxStep must be between 10/],
    [{ maxStep: 2 ** 53 }, RangeError, /maxStep/],
    [{ initialStep: 0 }, RangeError, /initialStep must be between 1/],
    [{ initialStep: 2e6 }, RangeError, /initialStep must be between 1 and 1000000/],
    [{ initialStep: 5, minStep: 10 }, RangeError, /initialStep must be between 10/],
    [{ segmentDuration: 0 }, RangeError, /segmentDuration/],
    [{ segmentDuration: Infinity }, RangeError, /segmentDuration/],
    [{ prefetchAt: 1.5 }, RangeError, /prefetchAt must be between 0 and 1/],
    [{ prefetchAt: -0.1 }, RangeError, /prefetchAt/],
    [{ timeout: 0 }, RangeError, /timeout/],
    [{ timeout: 2 ** 31 }, RangeError, /timeout/],
    [{ timeout: "5s" }, TypeError, /timeout must be a number/],
    [{ bigint: "yes" }, TypeError, /bigint must be a boolean/],
    [{ guard: 1 }, TypeError, /guard must be a boolean/],
    [{ rollbackMargin: -1 }, RangeError, /rollbackMargin/],
    [{ clock: 5 }, TypeError, /clock must be a function/],
    [{ stepRule: "halving" }, TypeError, /stepRule must be "doubling" or "rate"/],
    [{ redis: {} }, TypeError, /redis must be a client with hincrby/],
    [{ redis: "redis://x" }, TypeError, /redis must be a client/],
    [{ store: {} }, TypeError, /store must have a reserve/],
    [{ store: { reserve() {} }, redis }, TypeError, /either the redis option or the store/],
    [{ maxstep: 10 }, TypeError, /unknown option "maxstep"/],
  ];
  for (const [options, type, message] of cases) {
    const all = "store" in options ? options : { redis, ...options };
    throws(() => new KvId("x", all as never), type, message);
  }
  throws(() => new KvId("x", null as never), TypeError, /options must be an object/);
});

Deno.test("nextBatch: the count must be an integer from 0 to 10,000,000", async () => {
  await using id = new KvId("x", { redis });
  for (const bad of [-1, 1.5, NaN, 10_000_001, "3"]) {
    await assert.rejects(id.nextBatch(bad as number), /nextBatch\(count\) must/);
  }
});

Deno.test("configure() and the adapters check what they are given", () => {
  throws(() => configure({ redis: {} as RedisClient }), TypeError, /configure\(\) option redis/);
  throws(() => configure(null as never), TypeError, /options object/);
  throws(() => fromNodeRedis({} as never), TypeError, /fromNodeRedis\(client\): .*hIncrBy/);
  throws(() => fromIoredis({ hincrby() {} } as never), TypeError, /fromIoredis\(client\): .*eval/);
});

Deno.test("options typed KvIdOptions are accepted; the ID type follows `bigint`", () => {
  const options: KvIdOptions = { redis, minStep: 10 };
  const either: KvId<number | bigint> = new KvId("x", options);
  const numbers: KvId<number> = new KvId("x", { redis });
  const bigints: KvId<bigint> = new KvId("x", { redis, bigint: true });
  assert.deepEqual([either.name, numbers.name, bigints.name], ["x", "x", "x"]);
});

Deno.test("construction does no I/O and starts no timer", () => {
  // The sanitizers fail this test if a timer or op were left behind.
  for (let i = 0; i < 100; i++) new KvId(`n${i}`, { redis });
});
