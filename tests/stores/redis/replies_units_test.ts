import "../../support/deadline.ts"; // a time limit on every test of this file
// How the Redis store reads its replies (src/stores/redis/replies.ts), no server: integers
// exactly, text, the range a counter reply stands for, RESERVE_SCRIPT's ARGV and its reply.
// The servers' side is in tests/stores/redis/redis_exact_replies_test.ts and
// tests/stores/redis/redis_first_reservation_test.ts.
import assert from "node:assert/strict";
import { MAX_ID, poolField, stepField } from "../../../src/contract/store.ts";
import {
  parseInteger,
  range,
  reservationFrom,
  reserveArgs,
  text,
} from "../../../src/stores/redis/replies.ts";
import type { RedisReserveOptions } from "../../../src/stores/redis/store_options.ts";

const bytes = (s: string) => new TextEncoder().encode(s);

Deno.test("text: bytes decoded as UTF-8, anything else as String() writes it", () => {
  assert.equal(text(bytes("héllo")), "héllo");
  assert.equal(text(bytes("")), "");
  assert.equal(text("plain"), "plain");
  assert.equal(text(42), "42");
  assert.equal(text(null), "null");
});

Deno.test("range: the counter reply V stands for V - count + 1 .. V", () => {
  assert.deepEqual(range(10n, 3), { first: 8n, last: 10n });
  assert.deepEqual(range(1n, 1), { first: 1n, last: 1n });
});

Deno.test("parseInteger: a bigint, as it is and exact", () => {
  assert.deepEqual(parseInteger(5n), { value: 5n, exact: true });
  assert.deepEqual(parseInteger(2n ** 62n), { value: 2n ** 62n, exact: true });
});

Deno.test("parseInteger: a number, exact only up to MAX_SAFE_INTEGER; a fraction is none", () => {
  assert.deepEqual(parseInteger(7), { value: 7n, exact: true });
  assert.deepEqual(parseInteger(-3), { value: -3n, exact: true });
  assert.deepEqual(parseInteger(Number.MAX_SAFE_INTEGER), {
    value: 9007199254740991n,
    exact: true,
  });
  assert.deepEqual(parseInteger(2 ** 60), { value: 2n ** 60n, exact: false });
  assert.equal(parseInteger(1.5), undefined);
  assert.equal(parseInteger(NaN), undefined);
});

Deno.test("parseInteger: decimal text or bytes, exact; other text and values are none", () => {
  assert.deepEqual(parseInteger("12"), { value: 12n, exact: true });
  assert.deepEqual(parseInteger("-5"), { value: -5n, exact: true });
  assert.deepEqual(parseInteger("9223372036854775807"), { value: MAX_ID, exact: true });
  assert.deepEqual(parseInteger(bytes("12")), { value: 12n, exact: true });
  assert.deepEqual(parseInteger(bytes("9223372036854775806")), {
    value: MAX_ID - 1n,
    exact: true,
  });
  for (const none of ["abc", "1.5", "12abc", "", bytes("x1"), null, undefined, false, {}]) {
    assert.equal(parseInteger(none), undefined, Deno.inspect(none));
  }
});

/** Options with only what reserveArgs reads. */
function options(over: Partial<RedisReserveOptions> = {}): RedisReserveOptions {
  return { floor: 0n, raiseTo: 0n, guard: true, exact: false, ...over };
}

Deno.test("reserveArgs: field, count, floor, raiseTo, step field, most, pool field", () => {
  assert.deepEqual(reserveArgs("f", 5, options({ floor: 90n, raiseTo: 100n })), [
    "f",
    "5",
    "90",
    "100",
    "",
    "5",
    "",
  ]);
  assert.deepEqual(
    reserveArgs("f", 5, options({ loadStep: true, maxCount: 50, pool: true })),
    ["f", "5", "0", "0", stepField("f"), "50", poolField("f")],
  );
  assert.deepEqual(
    reserveArgs("f", 5, options({ loadStep: false, pool: false, maxCount: 2 })),
    ["f", "5", "0", "0", "", "5", ""],
    "most is never below the count asked",
  );
});

Deno.test("reserveArgs: a raiseTo past 2^63-1 capped at it", () => {
  assert.equal(reserveArgs("f", 1, options({ raiseTo: MAX_ID + 5n }))[3], String(MAX_ID));
  assert.equal(reserveArgs("f", 1, options({ raiseTo: MAX_ID }))[3], String(MAX_ID));
  assert.equal(reserveArgs("f", 1, options({ raiseTo: MAX_ID - 1n }))[3], String(MAX_ID - 1n));
});

Deno.test("reservationFrom: the range, raised, step and TTL removed of a script reply", () => {
  assert.deepEqual(reservationFrom([10n, 0, 3n]), {
    ranges: [{ first: 8n, last: 10n }],
    raised: false,
    step: undefined,
    ttlRemovedMs: 0,
  });
  assert.deepEqual(reservationFrom(["10", "1", "3", null, "300", "250"]), {
    ranges: [{ first: 8n, last: 10n }],
    raised: true,
    step: 300,
    ttlRemovedMs: 250,
  });
  assert.deepEqual(reservationFrom([10, 1, 1, false, false, 0]), {
    ranges: [{ first: 10n, last: 10n }],
    raised: true,
    step: undefined,
    ttlRemovedMs: 0,
  }, "a range of one ID");
  assert.equal(reservationFrom([10n, 0, 3n, null, null, null]).ttlRemovedMs, 0);
  assert.equal(reservationFrom([10n, 0, 3n, null, null, "x"]).ttlRemovedMs, 0);
  assert.equal(reservationFrom([10n, 2, 3n]).raised, false);
});

Deno.test("reservationFrom: a pooled first ID read as the range's start when exact", () => {
  assert.deepEqual(reservationFrom([10n, 0, 3n, 5n]).ranges, [{ first: 5n, last: 10n }]);
  assert.deepEqual(reservationFrom([10n, 0, 3n, "10"]).ranges, [{ first: 10n, last: 10n }]);
  assert.deepEqual(
    reservationFrom([10n, 0, 3n, 2 ** 60]).ranges,
    [{ first: 8n, last: 10n }],
    "a rounded pooled start is not trusted: the count's range",
  );
});

Deno.test("reservationFrom: the remembered step, only a positive safe integer", () => {
  const step = (s: unknown) => reservationFrom([10n, 0, 3n, null, s]).step;
  assert.equal(step(300n), 300);
  assert.equal(step("1"), 1);
  assert.equal(step(9007199254740991n), Number.MAX_SAFE_INTEGER);
  assert.equal(step(9007199254740992n), undefined);
  assert.equal(step(0n), undefined);
  assert.equal(step(-5n), undefined);
  assert.equal(step(null), undefined);
  assert.equal(step(false), undefined);
});

/** reservationFrom(reply) throws exactly `unexpected script reply ${said}`. */
function refuses(reply: unknown, said: string) {
  assert.throws(() => reservationFrom(reply), (err: unknown) => {
    assert.ok(err instanceof Error, Deno.inspect(err));
    assert.equal(err.constructor, Error, Deno.inspect(err));
    assert.equal(err.message, `unexpected script reply ${said}`);
    return true;
  });
}

Deno.test("reservationFrom: a reply not an array of three or more refused, as it is", () => {
  refuses(null, "null");
  refuses(undefined, "undefined");
  refuses("oops", "oops");
  refuses(17, "17");
  refuses([], "");
  refuses([7n, 0], "7,0");
});

Deno.test("reservationFrom: a counter not an exact integer, or no count, refused", () => {
  refuses([null, 0, 3n], "null");
  refuses([false, 0, 3n], "false");
  refuses([2 ** 60, 0, 3], String(2 ** 60));
  refuses([10n, 0, null], "10");
  refuses([10n, 0, "x"], "10");
});

Deno.test("reservationFrom: a range starting above its end refused", () => {
  refuses([10n, 0, 3n, 12n], "10,0,3,12");
  refuses([10n, 0, 11n, 11n], "10,0,11,11");
  refuses([10n, 0, 0n], "10,0,0");
});
