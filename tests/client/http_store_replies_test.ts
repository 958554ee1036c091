/**
 * HttpStore's checks of a segment answer, each fed in by a real HTTP server this test starts
 * (`Deno.serve` on a loopback port) that answers what a broken or hostile service could: a
 * reversed range, a bound that is not a decimal integer, fewer IDs than asked. Each is a
 * `"reply"` error; none reaches a generator as IDs. Starts no Redis server.
 */

import "../support/deadline.ts"; // a time limit on every test of this file
import assert from "node:assert/strict";
import { KvId, KvIdError } from "../../mod.ts";
import { HttpStore } from "../../src/client/mod.ts";

const TOKEN = "test-token-0123456789";

/** A service whose every segment answer is `body` (200, JSON). */
function fakeService(body: () => unknown) {
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    () => Response.json(body()),
  );
  return {
    url: `http://127.0.0.1:${server.addr.port}`,
    [Symbol.asyncDispose]: () => server.shutdown(),
  };
}

const OPTIONS = { floor: 0n, raiseTo: 0n, guard: true, exact: true };

const CASES: [string, { first: string; last: string }[]][] = [
  ["a reversed range", [{ first: "20", last: "11" }]],
  // Reversed by one it counts 0 IDs: the total is still the 10 asked for.
  ["a reversed range after a good one", [{ first: "1", last: "10" }, { first: "30", last: "29" }]],
  ["a hexadecimal bound", [{ first: "0x10", last: "0x19" }]],
  ["an exponent", [{ first: "1", last: "1e1" }]],
  ["a bound with a space", [{ first: " 1", last: "10" }]],
  ["a leading zero", [{ first: "01", last: "10" }]],
  ["a negative bound", [{ first: "-9", last: "0" }]],
  ["a bound above 2^63 - 1", [{ first: "9223372036854775799", last: "9223372036854775808" }]],
  ["a range shorter than asked", [{ first: "1", last: "9" }]],
  ["ranges shorter than asked in all", [{ first: "1", last: "4" }, { first: "6", last: "9" }]],
];

Deno.test("HttpStore: a segment answer that is not the IDs asked for is a reply error", async (t) => {
  let answer: unknown;
  await using service = fakeService(() => answer);
  const store = new HttpStore(service.url, { token: TOKEN });
  // The fake answers a well-formed segment: accepted.
  answer = { name: "order", ranges: [{ first: "1", last: "10" }], raised: false };
  assert.deepEqual((await store.reserve("kvid", "order", 10, OPTIONS)).ranges, [
    { first: 1n, last: 10n },
  ]);
  for (const [what, ranges] of CASES) {
    await t.step(what, async () => {
      answer = { name: "order", ranges, raised: false };
      const got = await store.reserve("kvid", "order", 10, OPTIONS).then((v) => v, (e) => e);
      assert.ok(got instanceof KvIdError, `accepted: ${JSON.stringify(ranges)}`);
      assert.equal(got.code, "reply");
    });
  }
  await t.step("a generator serves none of them", async () => {
    answer = { name: "order", ranges: [{ first: "0x10", last: "0x19" }], raised: false };
    await using id = new KvId("order", { store, timeout: 300, failFast: false });
    const got = await id.next().then((v) => v, (e) => e);
    assert.ok(got instanceof KvIdError, `served ${got}`);
  });
});

Deno.test("HttpStore: bad constructor arguments are refused, each by what is wrong", () => {
  assert.throws(() => new HttpStore("not a url", { token: TOKEN }), /HttpStore: not a URL/);
  assert.throws(() => new HttpStore("ftp://h", { token: TOKEN }), /must be http: or https:/);
  const noToken = /options\.token \(a service token\) is required/;
  for (const options of [null, undefined, "x", {}, { token: 1 }]) {
    assert.throws(
      () => new HttpStore("http://h", options as never),
      noToken,
      JSON.stringify(options),
    );
  }
  assert.throws(() => new HttpStore("http://h", { token: "short" }), /16 to 1,024/);
  for (const requestTimeout of [0, -1, 1.5, NaN]) {
    assert.throws(
      () => new HttpStore("http://h", { token: TOKEN, requestTimeout }),
      RangeError,
      String(requestTimeout),
    );
  }
  new HttpStore("http://h", { token: TOKEN, requestTimeout: 1 });
  new HttpStore("https://h/prefix/", { token: TOKEN });
});

Deno.test("HttpStore: a segment answer of JSON null is a reply error", async () => {
  await using service = fakeService(() => null);
  const store = new HttpStore(service.url, { token: TOKEN });
  const got = await store.reserve("kvid", "order", 10, OPTIONS).then((v) => v, (e) => e);
  assert.ok(got instanceof KvIdError, String(got));
  assert.equal(got.code, "reply");
});
