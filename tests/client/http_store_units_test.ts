import "../support/deadline.ts"; // a time limit on every test of this file
// HttpStore (src/client/http_store.ts) on a scripted `fetch` (its `fetch` option), no server:
// what each call sends, and what each answer of the service becomes. The real service is in
// tests/client/http_store_test.ts; answers from a real HTTP server in tests/client/http_store_replies_test.ts.
import assert from "node:assert/strict";
import { KvIdError } from "../../mod.ts";
import { HttpStore } from "../../src/client/mod.ts";

const TOKEN = "test-token-0123456789";
const OPTIONS = { floor: 0n, raiseTo: 0n, guard: true, exact: true };

interface Sent {
  method: string;
  url: string;
  headers: Record<string, string>;
  body: unknown;
  redirect: string;
}

/** A store whose fetch answers `answer(sent)`, recording what was sent. */
function scripted(answer: (s: Sent) => Response | Promise<Response>, url = "http://svc/base/") {
  const sent: Sent[] = [];
  const store = new HttpStore(url, {
    token: TOKEN,
    fetch: ((input: string, init: RequestInit) => {
      const s: Sent = {
        method: String(init.method),
        url: String(input),
        headers: init.headers as Record<string, string>,
        body: init.body === undefined ? undefined : JSON.parse(String(init.body)),
        redirect: String(init.redirect),
      };
      sent.push(s);
      return Promise.resolve(answer(s));
    }) as typeof fetch,
  });
  return { store, sent };
}

const json = (body: unknown, status = 200) => Response.json(body, { status });
const segment = (first: string, last: string, receipt?: string) =>
  json({ name: "order", ranges: [{ first, last }], raised: false, receipt });

async function code(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof KvIdError, String(err));
    return err.code;
  }
  return "none";
}

Deno.test("HttpStore units: a reservation's request and answer", async () => {
  const { store, sent } = scripted(() => segment("1", "10"));
  const r = await store.reserve("kvid", "order/x", 10, { ...OPTIONS, floor: 5n, raiseTo: 7n });
  assert.deepEqual(r, { ranges: [{ first: 1n, last: 10n }], raised: false });
  assert.deepEqual(sent[0], {
    method: "POST",
    url: "http://svc/base/v1/segments/order%2Fx",
    headers: {
      authorization: `Bearer ${TOKEN}`,
      accept: "application/json",
      "content-type": "application/json",
    },
    body: { count: 10, floor: "5", raiseTo: "7", guard: true },
    redirect: "manual",
  });
  const raised = scripted(() => json({ ranges: [{ first: "1", last: "2" }], raised: true }));
  assert.equal((await raised.store.reserve("kvid", "o", 2, OPTIONS)).raised, true);
  const notTrue = scripted(() => json({ ranges: [{ first: "1", last: "2" }], raised: "yes" }));
  assert.equal((await notTrue.store.reserve("kvid", "o", 2, OPTIONS)).raised, false);
  // Two ranges, increasing.
  const two = scripted(() =>
    json({ ranges: [{ first: "1", last: "4" }, { first: "9", last: "14" }] })
  );
  assert.deepEqual((await two.store.reserve("kvid", "o", 10, OPTIONS)).ranges, [
    { first: 1n, last: 4n },
    { first: 9n, last: 14n },
  ]);
  // The largest ID is served.
  const top = scripted(() => segment("9223372036854775806", "9223372036854775807"));
  assert.equal((await top.store.reserve("kvid", "o", 2, OPTIONS)).ranges[0].last, 2n ** 63n - 1n);
});

Deno.test("HttpStore units: the constructor refuses a bad URL, token or timeout", () => {
  const ok = { token: TOKEN };
  assert.throws(() => new HttpStore("not a url", ok), /HttpStore: not a URL: "not a url"/);
  for (const url of ["ftp://svc/", "file:///tmp/x", "ws://svc/"]) {
    assert.throws(() => new HttpStore(url, ok), /must be http: or https:/, url);
  }
  assert.equal(
    new HttpStore("https://svc/a/", ok).describe("kvid", "o"),
    'service https://svc/a, name "o"',
  );
  assert.equal(
    new HttpStore(new URL("http://svc"), ok).describe("kvid", "o"),
    'service http://svc, name "o"',
  );
  const options = [null, undefined, "token", {}, { token: 12345678901234567890 }, { token: null }];
  for (const o of options) {
    assert.throws(
      () => new HttpStore("http://svc", o as unknown as { token: string }),
      /options\.token \(a service token\) is required/,
      String(o),
    );
  }
  const tokens = ["short", "x".repeat(15), "x".repeat(1025), `${TOKEN} with a space`, `${TOKEN}é`];
  for (const token of tokens) {
    assert.throws(
      () => new HttpStore("http://svc", { token }),
      /16 to 1,024 printable ASCII/,
      token,
    );
  }
  for (const token of ["x".repeat(16), "x".repeat(1024), "!~".repeat(8)]) {
    new HttpStore("http://svc", { token }); // the bounds themselves are tokens
  }
  for (const requestTimeout of [0, -1, 1.5, 0.5, Number.NaN, Infinity]) {
    assert.throws(
      () => new HttpStore("http://svc", { token: TOKEN, requestTimeout }),
      (err: unknown) => err instanceof RangeError && /positive integer/.test(err.message),
      String(requestTimeout),
    );
  }
  new HttpStore("http://svc", { token: TOKEN, requestTimeout: 1 });
});

Deno.test("HttpStore units: refused before anything is sent", async () => {
  const { store, sent } = scripted(() => segment("1", "10"));
  assert.equal(await code(store.reserve("other", "o", 10, OPTIONS)), "config");
  await assert.rejects(
    store.reserve("other", "o", 10, OPTIONS),
    /serves the service's hash "kvid" only, not "other": leave KvId's key option out/,
  );
  assert.equal(
    await code(store.reserve("kvid", "o", 10, { ...OPTIONS, generator: { replicas: 1 } })),
    "config",
  );
  await assert.rejects(
    store.reserve("kvid", "o", 10, { ...OPTIONS, generator: { replicas: 1 } }),
    /cannot wait for replicas/,
  );
  assert.equal(await code(store.loadStep("other", "o")), "config");
  assert.equal(await code(store.saveStep("other", "o", 5)), "config");
  assert.equal(await code(store.release("other", "o", { first: 1n, last: 2n })), "config");
  assert.deepEqual(sent, []);
  await store.reserve("kvid", "o", 10, { ...OPTIONS, generator: { replicas: 0 } });
  assert.equal(sent.length, 1);
});

Deno.test("HttpStore units: malformed segment answers are reply errors", async () => {
  const bodies: unknown[] = [
    null,
    {},
    { ranges: "1-10" },
    { ranges: [] },
    { ranges: [null] },
    { ranges: [{ first: 1, last: 10 }] },
    { ranges: [{ first: "1" }] },
    { ranges: [{ first: "0", last: "9" }] },
    { ranges: [{ first: "1", last: "5" }, { first: "5", last: "9" }] },
    { ranges: [{ first: "6", last: "10" }, { first: "1", last: "5" }] },
    { ranges: [{ first: "1", last: "11" }] },
    // A range shorter than asked.
    { ranges: [{ first: "1", last: "9" }] },
    // A bound past 2^63-1 (decimal, 19 digits).
    { ranges: [{ first: "9223372036854775800", last: "9223372036854775809" }] },
    // A reversed range whose negative length (30..27: -2) makes the total come out right:
    // 1..12 is 12 IDs, 2 more than asked.
    { ranges: [{ first: "1", last: "12" }, { first: "30", last: "27" }] },
    // One bound a string, the other a number (DECIMAL.test would pass the number's digits).
    { ranges: [{ first: "1", last: 10 }] },
    { ranges: [{ first: 1, last: "10" }] },
    // Bounds BigInt() reads but that are not the service's decimals.
    { ranges: [{ first: "0x1", last: "0xa" }] },
    { ranges: [{ first: "1", last: "0xa" }] },
    { ranges: [{ first: "01", last: "10" }] },
    { ranges: [{ first: "1", last: " 10" }] },
    { ranges: [{ first: "+1", last: "10" }] },
  ];
  for (const body of bodies) {
    const { store } = scripted(() => json(body));
    assert.equal(
      await code(store.reserve("kvid", "o", 10, OPTIONS)),
      "reply",
      JSON.stringify(body),
    );
  }
  const { store } = scripted(() => new Response("not json", { status: 200 }));
  assert.equal(await code(store.reserve("kvid", "o", 10, OPTIONS)), "reply");
  // A one-ID range passes; a malformed answer names the counter and the service.
  const one = scripted(() => segment("5", "5"));
  assert.deepEqual((await one.store.reserve("kvid", "o", 1, OPTIONS)).ranges, [
    { first: 5n, last: 5n },
  ]);
  await assert.rejects(
    scripted(() => json(null)).store.reserve("kvid", "o", 10, OPTIONS),
    (err: unknown) => {
      assert.ok(err instanceof KvIdError);
      assert.match(err.message, /segment answer is malformed/);
      assert.equal(err.key, "kvid");
      assert.equal(err.field, "o");
      assert.equal(err.where, 'service http://svc/base, name "o"');
      return true;
    },
  );
});

Deno.test("HttpStore units: each status of the service becomes its error", async () => {
  const err = (status: number, code?: string) =>
    code === undefined
      ? new Response("<html>proxy</html>", { status })
      : json({ error: { code, message: "m" } }, status);
  const cases: [Response, string][] = [
    [err(401, "unauthorized"), "config"],
    [err(403, "forbidden"), "config"],
    [err(409, "overflow"), "overflow"],
    [err(409, "release_refused"), "reply"], // no segment in it
    [err(409, "other"), "config"],
    [err(500, "store_config"), "config"],
    [err(500, "internal"), "reply"],
    [err(500, "other"), "unavailable"],
    [err(503), "unavailable"],
    [err(502), "unavailable"],
    [err(429, "busy"), "unavailable"],
    [err(404, "not_found"), "config"],
    [err(400, "bad"), "config"],
    [err(499), "config"],
    [new Response(null, { status: 302, headers: { location: "http://else/" } }), "config"],
    [new Response(null, { status: 399 }), "config"],
  ];
  for (const [res, want] of cases) {
    const { store } = scripted(() => res.clone());
    assert.equal(await code(store.reserve("kvid", "o", 10, OPTIONS)), want, `HTTP ${res.status}`);
  }
  const redirect = scripted(() =>
    new Response(null, { status: 301, headers: { location: "http://else/x" } })
  );
  await assert.rejects(
    redirect.store.reserve("kvid", "o", 10, OPTIONS),
    /redirect \(HTTP 301\) to "http:\/\/else\/x"/,
  );
  const nowhere = scripted(() => new Response(null, { status: 307 }));
  await assert.rejects(nowhere.store.reserve("kvid", "o", 10, OPTIONS), /to an unknown location/);
  const said = scripted(() => err(400, "bad_count"));
  await assert.rejects(said.store.reserve("kvid", "o", 10, OPTIONS), /HTTP 400 bad_count: m/);
  const token = scripted(() => err(401, "unauthorized"));
  await assert.rejects(token.store.reserve("kvid", "o", 10, OPTIONS), /refused the token/);
  const multiple = scripted(() => new Response(null, { status: 300 }));
  await assert.rejects(
    multiple.store.reserve("kvid", "o", 10, OPTIONS),
    /answered a redirect \(HTTP 300\)/,
  );
  const cut = scripted(() =>
    new Response(new ReadableStream({ start: (c) => c.error(new Error("reset")) }), { status: 200 })
  );
  assert.equal(await code(cut.store.reserve("kvid", "o", 10, OPTIONS)), "connection");
  const unreachable = new HttpStore("http://svc", {
    token: TOKEN,
    fetch: () => Promise.reject(new TypeError("connection refused")),
  });
  assert.equal(await code(unreachable.reserve("kvid", "o", 10, OPTIONS)), "connection");
  await assert.rejects(
    unreachable.reserve("kvid", "o", 10, OPTIONS),
    /could not be reached: connection refused/,
  );
  const odd = new HttpStore("http://svc", { token: TOKEN, fetch: () => Promise.reject("down") });
  await assert.rejects(odd.reserve("kvid", "o", 10, OPTIONS), /could not be reached: down/);
});

Deno.test("HttpStore units: the step, optional where the service has none", async () => {
  let answer: () => Response = () => json({ step: 64 });
  const { store, sent } = scripted(() => answer());
  assert.equal(await store.loadStep("kvid", "o"), 64);
  assert.equal(sent[0].method, "GET");
  assert.equal(sent[0].url, "http://svc/base/v1/segments/o/step");
  assert.equal(sent[0].body, undefined);
  assert.deepEqual(sent[0].headers, {
    authorization: `Bearer ${TOKEN}`,
    accept: "application/json",
  });
  for (const step of [0, -1, 1.5, "64", null, 2 ** 53]) {
    answer = () => json({ step });
    assert.equal(await store.loadStep("kvid", "o"), undefined, String(step));
  }
  answer = () => json({ step: 1 });
  assert.equal(await store.loadStep("kvid", "o"), 1);
  answer = () => json({ error: { code: "not_found", message: "m" } }, 404);
  assert.equal(await store.loadStep("kvid", "o"), undefined);
  answer = () => new Response("", { status: 501 });
  assert.equal(await store.loadStep("kvid", "o"), undefined);
  answer = () => json({ error: { code: "forbidden", message: "m" } }, 404);
  assert.equal(await code(store.loadStep("kvid", "o")), "config");
  answer = () => json({}, 200);
  await store.saveStep("kvid", "o", 128);
  const last = sent[sent.length - 1];
  assert.equal(last.method, "PUT");
  assert.deepEqual(last.body, { step: 128 });
  answer = () => new Response("", { status: 501 });
  await store.saveStep("kvid", "o", 128); // a service without it: nothing to save, no error
  answer = () => json({ error: { code: "not_found", message: "m" } }, 404);
  await store.saveStep("kvid", "o", 128);
  // A reservation is not optional: 404 and 501 fail it.
  answer = () => new Response("", { status: 501 });
  assert.equal(await code(store.reserve("kvid", "o", 10, OPTIONS)), "unavailable");
});

Deno.test("HttpStore units: a release shows the receipts of the segments it overlaps, once", async () => {
  let n = 0;
  let release: () => Response = () => json({ released: true });
  const { store, sent } = scripted((s) => {
    if (s.url.endsWith("/release")) return release();
    n++;
    return segment(String(n * 10 + 1), String(n * 10 + 10), `r${n}`);
  });
  await store.reserve("kvid", "o", 10, OPTIONS); // 11..20, r1
  await store.reserve("kvid", "o", 10, OPTIONS); // 21..30, r2
  assert.equal(await store.release("kvid", "o", { first: 41n, last: 50n }), false, "no receipt");
  assert.equal(await store.release("kvid", "o", { first: 20n, last: 21n }), true);
  assert.deepEqual(sent[2].body, { first: "20", last: "21", receipts: ["r1", "r2"] });
  assert.equal(sent[2].url, "http://svc/base/v1/segments/o/release");
  assert.equal(await store.release("kvid", "o", { first: 20n, last: 21n }), false, "used once");
  assert.equal(sent.length, 3);
  await store.reserve("kvid", "o", 10, OPTIONS); // 31..40, r3
  await store.reserve("kvid", "o", 10, OPTIONS); // 41..50, r4
  assert.equal(await store.release("kvid", "o", { first: 50n, last: 50n }), true);
  assert.deepEqual((sent[sent.length - 1].body as { receipts: string[] }).receipts, ["r4"]);
  assert.equal(await store.release("kvid", "o", { first: 31n, last: 31n }), true, "r3 kept");
  release = () => json({ error: { code: "release_refused", message: "m" } }, 409);
  await store.reserve("kvid", "o", 10, OPTIONS); // 51..60, r5
  assert.equal(await store.release("kvid", "o", { first: 60n, last: 60n }), false, "refused");
  release = () => json({ released: "yes" });
  await store.reserve("kvid", "o", 10, OPTIONS); // 61..70, r6
  assert.equal(await store.release("kvid", "o", { first: 70n, last: 70n }), false);
  // Without a receipt in the answer nothing is held.
  const bare = scripted(() => segment("1", "10"));
  await bare.store.reserve("kvid", "o", 10, OPTIONS);
  assert.equal(await bare.store.release("kvid", "o", { first: 10n, last: 10n }), false);
  assert.equal(bare.sent.length, 1, "no release sent");
  // A service without releases (404, 501): not given back, no error.
  release = () => new Response("", { status: 501 });
  await store.reserve("kvid", "o", 10, OPTIONS); // 71..80, r7
  assert.equal(await store.release("kvid", "o", { first: 80n, last: 80n }), false);
  release = () => json({ error: { code: "not_found", message: "m" } }, 404);
  await store.reserve("kvid", "o", 10, OPTIONS); // 81..90, r8
  assert.equal(await store.release("kvid", "o", { first: 90n, last: 90n }), false);
});

Deno.test("HttpStore units: the newest 8 receipts of a counter are held", async () => {
  let n = 0;
  const { store, sent } = scripted((s) => {
    if (s.url.endsWith("/release")) return json({ released: true });
    n++;
    return segment(String(n * 10 + 1), String(n * 10 + 10), `r${n}`);
  });
  for (let i = 0; i < 9; i++) await store.reserve("kvid", "o", 10, OPTIONS); // r1..r9
  assert.equal(await store.release("kvid", "o", { first: 11n, last: 20n }), false, "r1 dropped");
  assert.equal(await store.release("kvid", "o", { first: 21n, last: 100n }), true);
  assert.deepEqual((sent[sent.length - 1].body as { receipts: string[] }).receipts, [
    "r2",
    "r3",
    "r4",
    "r5",
    "r6",
    "r7",
    "r8",
    "r9",
  ]);
});

Deno.test("HttpStore units: a counter given back in full holds no place among the 10,000 kept", async () => {
  let n = 0;
  const { store } = scripted((s) => {
    if (s.url.endsWith("/release")) return json({ released: true });
    n++;
    return segment(String(n * 10 + 1), String(n * 10 + 10), `r${n}`);
  });
  await store.reserve("kvid", "first", 10, OPTIONS); // 11..20
  await store.reserve("kvid", "gone", 10, OPTIONS); // 21..30
  assert.equal(await store.release("kvid", "gone", { first: 21n, last: 30n }), true);
  for (let i = 0; i < 9_999; i++) await store.reserve("kvid", `f${i}`, 10, OPTIONS);
  // 10,000 counters held: "first" and 9,999 others; "gone" is not one of them.
  assert.equal(await store.release("kvid", "first", { first: 11n, last: 20n }), true);
});

Deno.test("HttpStore units: receipts of 10,000 counters are kept, the oldest counter dropped", async () => {
  let n = 0;
  const { store } = scripted((s) => {
    if (s.url.endsWith("/release")) return json({ released: true });
    n++;
    return segment(String(n * 10 + 1), String(n * 10 + 10), `r${n}`);
  });
  await store.reserve("kvid", "old", 10, OPTIONS); // 11..20
  await store.reserve("kvid", "next", 10, OPTIONS); // 21..30
  for (let i = 0; i < 9_999; i++) await store.reserve("kvid", `f${i}`, 10, OPTIONS);
  assert.equal(await store.release("kvid", "old", { first: 11n, last: 20n }), false, "dropped");
  assert.equal(await store.release("kvid", "next", { first: 21n, last: 30n }), true, "kept");
});
