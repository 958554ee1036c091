/**
 * Issue 33's smaller attacks on the clients of the service and on the codec: `HttpStore` against
 * a hostile service it is pointed at (a redirect to another origin, a range larger than asked),
 * key material in the codec's messages, and form lookups by own property. The hostile service is
 * a real HTTP server on loopback; no Redis server is started here.
 */

import "../support/deadline.ts"; // a time limit on every test of this file
import assert from "node:assert/strict";
import { KvIdError } from "../../mod.ts";
import { codecCommand } from "../../src/cli/codec.ts";
import { CliError } from "../../src/cli/exit.ts";
import { HttpStore } from "../../src/client/mod.ts";
import { decimal, encrypted, parseForms, parseKeys } from "../../src/codec/mod.ts";

const TOKEN = "client-token-0123456789abcdef";
const HEX = "00112233445566778899aabbccddeeff";

/** A loopback HTTP server answering with `answer`, and every request it got (method, path). */
function hostile(answer: (req: Request) => Response | Promise<Response>) {
  const seen: string[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
    seen.push(`${req.method} ${new URL(req.url).pathname} ${await req.text()}`);
    return answer(req);
  });
  return {
    url: `http://127.0.0.1:${server.addr.port}`,
    seen,
    [Symbol.asyncDispose]: () => server.shutdown(),
  };
}

const options = { floor: 0n, raiseTo: 0n, guard: true, exact: true };

Deno.test("security: HttpStore follows no redirect: a config error naming the Location", async () => {
  await using elsewhere = hostile(() =>
    Response.json({ name: "order", ranges: [], raised: false })
  );
  for (const status of [301, 302, 303, 307, 308]) {
    await using service = hostile(() =>
      new Response(null, {
        status,
        headers: { location: `${elsewhere.url}/v1/segments/order` },
      })
    );
    const store = new HttpStore(service.url, { token: TOKEN });
    for (
      const call of [
        () => store.reserve("kvid", "order", 10, options),
        () => store.saveStep("kvid", "order", 10),
        () => store.loadStep("kvid", "order"),
      ]
    ) {
      await assert.rejects(call, (err) => {
        assert.ok(err instanceof KvIdError, String(err));
        assert.equal(err.code, "config");
        assert.ok(err.message.includes(`${elsewhere.url}/v1/segments/order`), err.message);
        assert.ok(!err.message.includes(TOKEN), "the token in a message");
        return true;
      });
    }
    // (A release without a receipt of this store sends nothing: there is nothing to redirect.)
    assert.equal(service.seen.length, 3);
  }
  assert.deepEqual(elsewhere.seen, [], "the token and the body went to the redirect's target");
});

Deno.test("security: HttpStore refuses a segment of more (or fewer) IDs than it asked for", async () => {
  for (
    const [what, ranges] of [
      ["the whole ID space", [{ first: "1", last: "9223372036854775807" }]],
      ["one more", [{ first: "1", last: "11" }]],
      ["two ranges, one more", [{ first: "1", last: "5" }, { first: "7", last: "12" }]],
      ["one fewer", [{ first: "1", last: "9" }]],
    ] as const
  ) {
    await using service = hostile(() => Response.json({ name: "order", ranges, raised: false }));
    const store = new HttpStore(service.url, { token: TOKEN });
    await assert.rejects(
      () => store.reserve("kvid", "order", 10, options),
      (err) => err instanceof KvIdError && err.code === "reply" && /malformed/.test(err.message),
      what,
    );
  }
  await using exact = hostile(() =>
    Response.json({
      name: "order",
      ranges: [{ first: "1", last: "4" }, { first: "8", last: "13" }],
      raised: false,
    })
  );
  const store = new HttpStore(exact.url, { token: TOKEN });
  const r = await store.reserve("kvid", "order", 10, options);
  assert.deepEqual(r.ranges, [{ first: 1n, last: 4n }, { first: 8n, last: 13n }]);
});

Deno.test("security: no key material in any codec message, whatever its type", () => {
  const bytes = parseKeys(HEX).keys["1"];
  const givens: unknown[] = [
    HEX, // a hex string where bytes belong
    HEX.toUpperCase(),
    new TextEncoder().encode(HEX + "!"), // 33 bytes of text: no AES key length
    bytes.subarray(0, 15),
    [...bytes],
    Number.parseInt(HEX.slice(0, 12), 16),
    BigInt(`0x${HEX}`),
  ];
  const secret = (text: string) =>
    [HEX, HEX.toUpperCase(), HEX.slice(0, 12), String(BigInt(`0x${HEX}`)), [...bytes].join(",")]
      .some((s) => text.includes(s)) ||
    text.includes(String(Number.parseInt(HEX.slice(0, 12), 16)));
  for (const given of givens) {
    for (
      const make of [
        () => encrypted(decimal(12), { keys: { "1": given as Uint8Array } }),
        () => encrypted(decimal(12), { keys: given as Record<string, Uint8Array> }),
        () => encrypted(decimal(12), given as { keys: Record<string, Uint8Array> }),
        () => encrypted(decimal(12), { keys: { [String(given)]: bytes } }),
      ]
    ) {
      let message = "";
      try {
        make();
      } catch (err) {
        message = (err as Error).message;
      }
      assert.ok(message !== "", `accepted ${typeof given}`);
      assert.ok(!secret(message), message);
    }
  }
  for (const text of [`${HEX}:x`, `1:${HEX},${HEX}`, `1:${HEX.slice(1)}`, `1:${HEX}zz`]) {
    assert.throws(() => parseKeys(text), (err) => !secret((err as Error).message));
  }
  assert.throws(
    () => parseForms("order=decimal:12:encrypted", parseKeys(HEX)) && parseKeys(`${HEX}:x`),
    (err) => !secret((err as Error).message),
  );
});

Deno.test("security: form and command names are own properties only", async () => {
  const io = { out() {}, lines: async function* () {}, env: () => undefined };
  for (const form of ["constructor", "toString", "__proto__", "hasOwnProperty", "valueOf"]) {
    await assert.rejects(
      () => codecCommand("encode", ["--form", form, "1"], io),
      (err) =>
        err instanceof CliError && err.exit === 2 &&
        err.message.includes("--form must be decimal, base36 or base62"),
      form,
    );
    assert.throws(
      () => parseForms(`order=${form}`),
      /the form must be decimal, base36 or base62/,
      form,
    );
  }
  const { main } = await import("../../src/cli/mod.ts");
  for (const name of ["constructor", "toString", "__proto__"]) {
    assert.equal(await main([name]), 2, name); // unknown command: usage, exit 2
  }
});
