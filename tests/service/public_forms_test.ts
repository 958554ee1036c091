/**
 * The service with public forms: `codecs` (`KVID_FORMATS` and `KVID_ID_KEY` from the
 * environment) answers each raw ID of a name with its public form; the key is never logged.
 */

import "../support/deadline.ts"; // a time limit on every test of this file
import assert from "node:assert/strict";
import { createHandler, optionsFromEnv } from "../../src/service/mod.ts";
import { DenoKvStore } from "../../src/stores/deno_kv/deno_kv_store.ts";
import { decimal, encrypted, parseKeys } from "../../src/codec/mod.ts";

const KEY = "000102030405060708090a0b0c0d0e0f";

Deno.test("service: public forms per name from KVID_FORMATS, the key from KVID_ID_KEY", async () => {
  const env = new Map([
    ["KVID_KV_PATH", ":memory:"],
    ["KVID_AUTH", "none"],
    ["KVID_FORMATS", "order=decimal:12:encrypted,invoice=decimal:8"],
    ["KVID_ID_KEY", KEY],
  ]);
  const config = optionsFromEnv((name) => env.get(name));
  const logged: string[] = [];
  await using service = createHandler({ ...config.options, log: (l) => logged.push(l) });
  const order = encrypted(decimal(12), { ...parseKeys(KEY), tweak: "order" });

  const text = await service.fetch(
    new Request("http://localhost/v1/ids/order?count=3", { method: "POST" }),
  );
  assert.equal(text.status, 200);
  const lines = (await text.text()).trimEnd().split("\n").map((l) => l.split("\t"));
  assert.deepEqual(lines, [1, 2, 3].map((id) => [String(id), order.encode(id)]));

  const json = await service.fetch(
    new Request("http://localhost/v1/ids/invoice?count=2", {
      method: "POST",
      headers: { accept: "application/json" },
    }),
  );
  assert.deepEqual(await json.json(), {
    name: "invoice",
    ids: ["1", "2"],
    encoded: ["00000001", "00000002"],
  });
  // A name without a form answers as before.
  const plain = await service.fetch(
    new Request("http://localhost/v1/ids/user", { method: "POST" }),
  );
  assert.equal(await plain.text(), "1\n");
  assert.ok(logged.every((l) => !l.includes(KEY)), logged.join("\n"));
  await service.close();
  await config.close();
});

Deno.test("service: a bad KVID_FORMATS or KVID_ID_KEY refuses to start, naming it without the key", () => {
  const start = (vars: Record<string, string>) => () =>
    optionsFromEnv((name) =>
      ({ KVID_KV_PATH: ":memory:", ...vars } as Record<string, string>)[name]
    );
  assert.throws(
    start({ KVID_FORMATS: "order=decimal:12:encrypted" }),
    /no key is given \(KVID_ID_KEY\)/,
  );
  assert.throws(
    start({ KVID_FORMATS: "order=base64:8" }),
    /decimal, base36 or base62, got "base64"/,
  );
  try {
    start({ KVID_FORMATS: "order=decimal:12:encrypted", KVID_ID_KEY: KEY.slice(4) })();
    assert.fail("a 14-byte key was accepted");
  } catch (err) {
    assert.match(String(err), /32, 48 or 64 hex digits/);
    assert.ok(!String(err).includes(KEY.slice(4, 16)));
  }
});

Deno.test("service: a counter past its form's domain answers 409 domain and logs it, naming no key", async () => {
  using store = new DenoKvStore(":memory:");
  // Another writer took the counter to 999,998: 6 digits hold one more ID.
  await store.reserve("kvid", "order", 999_998, {
    floor: 0n,
    raiseTo: 0n,
    guard: false,
    exact: true,
  });
  const keys = parseKeys(KEY);
  const logged: string[] = [];
  await using service = createHandler({
    store,
    auth: "none",
    codecs: new Map([["order", encrypted(decimal(6), { ...keys, tweak: "order" })]]),
    log: (l) => logged.push(l),
  });
  const ok = await service.fetch(new Request("http://localhost/v1/ids/order", { method: "POST" }));
  assert.match(await ok.text(), /^999999\t1\d{6}\n$/);
  const past = await service.fetch(
    new Request("http://localhost/v1/ids/order", { method: "POST" }),
  );
  assert.equal(past.status, 409);
  assert.equal((await past.json()).error.code, "domain");
  assert.ok(
    logged.some((l) => /1000000 is outside the codec's domain 0\.\.999999/.test(l)),
    logged.join("\n"),
  );
  assert.ok(logged.every((l) => !l.includes(KEY)));
  await service.close();
});
