/**
 * The ID service's HTTP contract (src/service/mod.ts), against real Redis servers and Deno KV.
 * (tests/support/redis_server.ts is the Redis test harness; this file tests the service.)
 */

import "../support/deadline.ts"; // a time limit on every test of this file
import assert from "node:assert/strict";
import parsePrometheus from "parse-prometheus-text-format";
import { DenoKvStore } from "../../src/stores/deno_kv/deno_kv_store.ts";
import type { ServiceOptions } from "../../src/service/mod.ts";
import { createHandler } from "../../src/service/mod.ts";
import { openClient } from "../support/redis_clients.ts";
import { startProxy } from "../support/proxy.ts";
import { command, redisOnly, startServer } from "../support/redis_server.ts";
import { serveService, startServeProcess } from "../support/service.ts";

const ALL = "test-token-all-0123456789";
const ORDERS = "test-token-orders-012345";
const TOKENS = `${ALL}:*,${ORDERS}:order|invoice`;

interface Answer {
  status: number;
  headers: Headers;
  body: string;
}

async function call(
  base: string,
  path: string,
  init: { method?: string; token?: string | null; accept?: string; headers?: HeadersInit } = {},
): Promise<Answer> {
  const headers = new Headers(init.headers);
  const token = init.token === undefined ? ALL : init.token;
  if (token !== null) headers.set("authorization", `Bearer ${token}`);
  if (init.accept) headers.set("accept", init.accept);
  const res = await fetch(base + path, { method: init.method ?? "POST", headers });
  return { status: res.status, headers: res.headers, body: await res.text() };
}

function assertError(a: Answer, status: number, code: string): void {
  assert.equal(a.status, status, a.body);
  assert.match(a.headers.get("content-type") ?? "", /^application\/json/);
  const body = JSON.parse(a.body);
  assert.equal(body.error.code, code);
  assert.equal(typeof body.error.message, "string");
  assert.doesNotMatch(a.body, /\bat .*:\d+:\d+|Error:/, "a stack trace or error name leaked");
}

const ids = (a: Answer) => a.body.split("\n").slice(0, -1).map(BigInt);

function assertIncreasingIds(list: bigint[]): void {
  for (let i = 1; i < list.length; i++) {
    assert.ok(list[i] > list[i - 1], `${list[i]} <= ${list[i - 1]}`);
  }
}

function dayIn(timeZone: string, ms: number): string {
  const p = new Intl.DateTimeFormat("en-CA", {
    timeZone,
    year: "numeric",
    month: "2-digit",
    day: "2-digit",
  })
    .format(ms);
  return p.replace(/-/g, "");
}

/** Send one request as raw bytes (as no URL parser would) and read the whole reply. */
async function rawRequest(base: string, requestLine: string): Promise<string> {
  using conn = await Deno.connect({ hostname: "127.0.0.1", port: Number(new URL(base).port) });
  const head =
    `${requestLine}\r\nHost: x\r\nAuthorization: Bearer ${ALL}\r\nConnection: close\r\n\r\n`;
  await conn.write(new TextEncoder().encode(head));
  let reply = "";
  const buf = new Uint8Array(4096);
  for (let n = await conn.read(buf); n !== null; n = await conn.read(buf)) {
    reply += new TextDecoder().decode(buf.subarray(0, n));
  }
  return reply;
}

/** The contract steps every store must pass. */
async function contract(
  t: Deno.TestContext,
  options: ServiceOptions,
  setCounter: (name: string, value: bigint) => Promise<void>,
): Promise<void> {
  await using s = serveService({ ...options, tokens: TOKENS });
  await t.step("one ID: text/plain, a newline, no-store; GET too", async () => {
    const a = await call(s.url, "/v1/ids/order");
    assert.equal(a.status, 200);
    assert.match(a.body, /^[1-9][0-9]*\n$/);
    // The standard type of a string body (`text/plain;charset=UTF-8`), UTF-8 said either way.
    assert.match(a.headers.get("content-type") ?? "", /^text\/plain; ?charset=utf-8$/i);
    assert.equal(a.headers.get("cache-control"), "no-store");
    const b = await call(s.url, "/v1/ids/order", { method: "GET" });
    assert.equal(b.status, 200);
    assert.ok(ids(b)[0] > ids(a)[0]);
  });
  await t.step("?count=N: N increasing IDs, one a line", async () => {
    const a = await call(s.url, "/v1/ids/invoice?count=5");
    assert.equal(a.status, 200);
    assert.equal(ids(a).length, 5);
    assertIncreasingIds(ids(a));
    const big = await call(s.url, "/v1/ids/invoice?count=10000");
    assert.equal(ids(big).length, 10_000);
    assertIncreasingIds([...ids(a), ...ids(big)]);
  });
  await t.step("Accept: application/json: IDs as strings, exact above 2^53", async () => {
    await setCounter("big", 2n ** 53n); // the next ID is 2^53+1, which a double cannot hold
    const a = await call(s.url, "/v1/ids/big?count=3", { accept: "application/json" });
    assert.equal(a.status, 200);
    assert.match(a.headers.get("content-type") ?? "", /^application\/json/);
    assert.equal(a.headers.get("cache-control"), "no-store");
    assert.deepEqual(JSON.parse(a.body), {
      name: "big",
      ids: ["9007199254740993", "9007199254740994", "9007199254740995"],
    });
  });
  await t.step("/v1/daily: yyyymmdd + 6-digit seq of the UTC day, text and JSON", async () => {
    const before = Date.now();
    const a = await call(s.url, "/v1/daily/order?count=2");
    const b = await call(s.url, "/v1/daily/order", { accept: "application/json" });
    const days = [dayIn("UTC", before), dayIn("UTC", Date.now())];
    assert.equal(a.status, 200);
    const lines = a.body.split("\n").slice(0, -1);
    assert.equal(lines.length, 2);
    for (const line of lines) {
      assert.match(line, /^\d{14}$/);
      assert.ok(days.includes(line.slice(0, 8)), `${line} is not dated ${days}`);
    }
    assert.equal(a.headers.get("cache-control"), "no-store");
    const json = JSON.parse(b.body);
    assert.equal(json.name, "order");
    assert.equal(typeof json.ids[0], "string");
    assert.ok(BigInt(json.ids[0]) > BigInt(lines[1]));
  });
  await t.step(
    "a name of 4,096 UTF-8 bytes is a name (Redis; Deno KV keys stop at 2 KiB)",
    async () => {
      const a = await call(s.url, `/v1/ids/${"%C3%A9".repeat(2048)}`);
      assert.equal(a.status, options.store === undefined ? 200 : 400, a.body);
    },
  );
  await t.step("/healthz and /readyz answer 200 without a token", async () => {
    const h = await call(s.url, "/healthz", { method: "GET", token: null });
    assert.equal(h.status, 200);
    assert.equal(h.body, "ok\n");
    const r = await call(s.url, "/readyz", { method: "GET", token: null });
    assert.equal(r.status, 200, r.body);
  });
}

Deno.test("service contract on Redis (node-redis client)", async (t) => {
  await using server = await startServer();
  await using client = await openClient("node-redis", server.url);
  await contract(t, { redis: client.redis }, async (name, value) => {
    await command(server.url, "HSET", "kvid", name, String(value));
  });
});

Deno.test("service contract on Deno KV", async (t) => {
  using kv = await Deno.openKv(":memory:");
  using store = new DenoKvStore(kv);
  await contract(t, { store, ready: () => kv.get(["ready"]) }, async (name, value) => {
    await kv.set(["kvid", name], new Deno.KvU64(value));
  });
});

Deno.test("service: KVID_TIME_ZONE dates the daily serials", async () => {
  using store = new DenoKvStore(":memory:");
  await using s = serveService({ store, tokens: TOKENS, timeZone: "Pacific/Kiritimati" });
  const before = Date.now();
  const a = await call(s.url, "/v1/daily/order");
  const days = [dayIn("Pacific/Kiritimati", before), dayIn("Pacific/Kiritimati", Date.now())];
  assert.ok(days.includes(a.body.slice(0, 8)), `${a.body} is not dated ${days}`);
  assert.throws(
    () => createHandler({ store, tokens: TOKENS, timeZone: "Mars/Olympus" }),
    RangeError,
  );
});

Deno.test("service: bad names, counts, paths, methods and sizes", async (t) => {
  using store = new DenoKvStore(":memory:");
  await using s = serveService({ store, tokens: TOKENS });
  await t.step(
    "400 bad_name: a lone surrogate, bad escapes, a slash, over 4,096 bytes",
    async () => {
      for (
        const path of [
          "/v1/ids/%ED%A0%80", // U+D800 in (invalid) UTF-8
          "/v1/ids/a%ED%B0%80b",
          "/v1/daily/%ED%A0%80",
          "/v1/ids/%",
          "/v1/ids/%zz",
          "/v1/ids/a/b",
          `/v1/ids/${"n".repeat(4097)}`,
          `/v1/ids/${"%C3%A9".repeat(2049)}`, // 4,098 bytes of é
          `/v1/daily/${"n".repeat(4097)}`,
        ]
      ) {
        assertError(await call(s.url, path), 400, "bad_name");
      }
      // "." and "..": URL parsers resolve them away (%2E too), so only a raw request carries them.
      for (const name of [".", "..", "%2E", "%2e%2E"]) {
        const reply = await rawRequest(s.url, `POST /v1/ids/${name} HTTP/1.1`);
        assert.match(reply, /^HTTP\/1\.1 400 .*"bad_name"/s);
      }
      // Within KvId's 4,096 bytes but over Deno KV's 2 KiB keys: refused by the store, still 400.
      assertError(await call(s.url, `/v1/ids/${"n".repeat(3000)}`), 400, "bad_name");
      assert.ok(!s.logged.some((l) => l.includes("nnnnnnnnnn")), "a client mistake was logged");
    },
  );
  await t.step(
    "400 bad_count: 0, negative, non-integer, over 10,000, repeated, empty",
    async () => {
      for (
        const q of [
          "0",
          "-1",
          "1.5",
          "1e3",
          "10001",
          "99999999999999999999",
          "abc",
          "",
          "0x10",
          " 5",
        ]
      ) {
        assertError(
          await call(s.url, `/v1/ids/order?count=${encodeURIComponent(q)}`),
          400,
          "bad_count",
        );
      }
      assertError(await call(s.url, "/v1/ids/order?count=1&count=2"), 400, "bad_count");
      assertError(await call(s.url, "/v1/daily/order?count=10001"), 400, "bad_count");
    },
  );
  await t.step("404 unknown paths", async () => {
    for (
      const path of ["/v1/ids/", "/v1/ids", "/v2/ids/order", "/nope", "/v1/daily/", "/metrics/x"]
    ) {
      assertError(await call(s.url, path, { method: "GET" }), 404, "not_found");
    }
  });
  await t.step("405 with Allow for other methods, odd ones included", async () => {
    for (const method of ["PUT", "DELETE", "PATCH", "OPTIONS", "PROPFIND", "BREW"]) {
      const a = await call(s.url, "/v1/ids/order", { method });
      assertError(a, 405, "method_not_allowed");
      assert.equal(a.headers.get("allow"), "GET, POST");
    }
    const head = await fetch(`${s.url}/v1/ids/order`, { method: "HEAD" });
    assert.equal(head.status, 405);
    assert.equal(head.headers.get("allow"), "GET, POST");
    const h = await call(s.url, "/healthz", { method: "POST" });
    assertError(h, 405, "method_not_allowed");
    assert.equal(h.headers.get("allow"), "GET, HEAD");
  });
  await t.step("414 and 413 request_too_large: a huge URL or body", async () => {
    assertError(await call(s.url, `/v1/ids/${"n".repeat(20_000)}`), 414, "request_too_large");
    const res = await fetch(`${s.url}/v1/ids/order`, {
      method: "POST",
      headers: { authorization: `Bearer ${ALL}` },
      body: new Uint8Array(100_000),
    });
    assertError(
      { status: res.status, headers: res.headers, body: await res.text() },
      413,
      "request_too_large",
    );
  });
});

Deno.test("service: tokens (401, 403), never echoed or logged; no start without them", async (t) => {
  using store = new DenoKvStore(":memory:");
  // More 401s than a peer may have a minute: the limit has a test of its own (security_test).
  await using s = serveService({ store, tokens: TOKENS, authFailuresPerMinute: 0 });
  const presented: string[] = [];
  await t.step(
    "401 with WWW-Authenticate: missing, unknown, near-miss, malformed, huge",
    async () => {
      const bad = [
        null,
        "",
        "nope",
        ALL.slice(0, -1),
        ALL + "x",
        ALL.toUpperCase(),
        `${ALL} ${ALL}`,
        "x".repeat(10_000),
      ];
      for (const token of bad) {
        if (token) presented.push(token);
        const a = await call(s.url, "/v1/ids/order", { token });
        assertError(a, 401, "unauthorized");
        assert.match(a.headers.get("www-authenticate") ?? "", /^Bearer/);
        if (token) assert.ok(!a.body.includes(token), "the token was echoed");
      }
      for (const header of [`Basic ${btoa(`u:${ALL}`)}`, ALL, `Bearer`, `Token ${ALL}`]) {
        const a = await call(s.url, "/v1/ids/order", {
          token: null,
          headers: { authorization: header },
        });
        assertError(a, 401, "unauthorized");
      }
      assertError(
        await call(s.url, "/metrics", { method: "GET", token: null }),
        401,
        "unauthorized",
      );
    },
  );
  await t.step("403 for a name outside the token's scope; the scope works", async () => {
    assert.equal((await call(s.url, "/v1/ids/order", { token: ORDERS })).status, 200);
    assert.equal((await call(s.url, "/v1/daily/invoice", { token: ORDERS })).status, 200);
    assertError(await call(s.url, "/v1/ids/user", { token: ORDERS }), 403, "forbidden");
    assertError(await call(s.url, "/v1/ids/orderx", { token: ORDERS }), 403, "forbidden");
    // /metrics needs a token of any scope.
    assert.equal((await call(s.url, "/metrics", { method: "GET", token: ORDERS })).status, 200);
  });
  await t.step(
    "the status page's sign-in form: wrong, oversized (even chunked), right",
    async () => {
      const login = (body: BodyInit) =>
        fetch(`${s.url}/login`, { method: "POST", body, redirect: "manual" });
      const wrong = await login(new URLSearchParams({ token: "wrong-token-0123456789" }));
      assert.equal(wrong.status, 401);
      assert.equal(wrong.headers.get("set-cookie"), null);
      assert.ok(!(await wrong.text()).includes("wrong-token-0123456789"));
      const chunk = new Uint8Array(1024).fill(0x61);
      let sent = 0;
      const endless = new ReadableStream<Uint8Array>({
        pull(controller) {
          // Stops by itself: far past the cap, never unbounded.
          if (++sent > 1024) controller.close();
          else controller.enqueue(chunk);
        },
      });
      const big = await login(endless);
      assertError(
        { status: big.status, headers: big.headers, body: await big.text() },
        413,
        "request_too_large",
      );
      const forged = await fetch(`${s.url}/login`, {
        method: "POST",
        body: new URLSearchParams({ token: ORDERS }),
        headers: { origin: "https://evil.example" },
        redirect: "manual",
      });
      assertError(
        { status: forged.status, headers: forged.headers, body: await forged.text() },
        403,
        "forbidden",
      );
      assert.equal(forged.headers.get("set-cookie"), null);
      const right = await login(new URLSearchParams({ token: ORDERS }));
      await right.body?.cancel();
      assert.equal(right.status, 303);
      assert.match(
        right.headers.get("set-cookie") ?? "",
        /^kvid_session=[\w-]{43}; .*HttpOnly; SameSite=Strict$/,
      );
      const page = await fetch(`${s.url}/`, {
        headers: { cookie: right.headers.get("set-cookie")!.split(";")[0] },
      });
      assert.match(await page.text(), /live generator/);
    },
  );
  await t.step("no token in any log line", () => {
    const log = s.logged.join("\n");
    for (const token of [ALL, ORDERS, ...presented]) assert.ok(!log.includes(token));
  });
  await t.step("refuses to start without tokens unless auth none, which it logs loudly", () => {
    assert.throws(() => createHandler({ store, log: () => {} }), /KVID_TOKENS.*refusing to start/);
    assert.throws(() => createHandler({ store, tokens: "short:*", log: () => {} }), TypeError);
    assert.throws(() => createHandler({ store, tokens: `${ALL}`, log: () => {} }), TypeError);
    for (
      const tokens of [`${ALL}:*,${ALL}:order`, `tökentökentökentöken:*`, `a b-0123456789abcdef:*`]
    ) {
      assert.throws(() => createHandler({ store, tokens, log: () => {} }), TypeError, tokens);
    }
    const logged: string[] = [];
    createHandler({ store, auth: "none", log: (l) => logged.push(l) });
    assert.match(logged.join("\n"), /WARNING: authentication is OFF/);
  });
});

Deno.test("service: 503 + Retry-After while the store hangs, 500 without a stack", async (t) => {
  await using server = await startServer();
  await using proxy = await startProxy(server);
  await using client = await openClient("node-redis", proxy.url);
  await using s = serveService({ redis: client.redis, tokens: TOKENS, timeout: 300 });
  await t.step("the store hangs: 503 unavailable, Retry-After; /readyz 503", async () => {
    proxy.pause();
    const a = await call(s.url, "/v1/ids/order");
    assertError(a, 503, "unavailable");
    assert.match(a.headers.get("retry-after") ?? "", /^[1-9][0-9]*$/);
    const d = await call(s.url, "/v1/daily/order");
    assertError(d, 503, "unavailable");
    const r = await call(s.url, "/readyz", { method: "GET", token: null });
    assert.equal(r.status, 503);
    proxy.resume();
    // The generator retries after its backoff: the next call gets an ID.
    assert.equal((await call(s.url, "/v1/ids/order")).status, 200);
    assert.equal((await call(s.url, "/readyz", { method: "GET", token: null })).status, 200);
  });
  await t.step(
    "the store is down (connection refused): 503, then IDs once it is back",
    async () => {
      await server.kill();
      const a = await call(s.url, "/v1/ids/down?count=10");
      assertError(a, 503, "unavailable");
      assert.ok(a.headers.get("retry-after"));
      assert.equal((await call(s.url, "/readyz", { method: "GET", token: null })).status, 503);
      await server.restart();
      // The client reconnects and the generator's probe (failFast: meanwhile calls get 503 at
      // once) finds the store back: polled, at most 20 s.
      let status = 0;
      for (const until = performance.now() + 20_000; status !== 200 && performance.now() < until;) {
        status = (await call(s.url, "/v1/ids/down")).status;
        if (status !== 200) await new Promise((r) => setTimeout(r, 20));
      }
      assert.equal(status, 200);
    },
  );
  await t.step({
    ...redisOnly(
      "the server refuses writes for now (OOM): 503 + Retry-After, not 500",
      "no maxmemory; it writes to disk",
    ),
    fn: async () => {
      await command(server.url, "CONFIG", "SET", "maxmemory-policy", "noeviction");
      await command(server.url, "CONFIG", "SET", "maxmemory", "1");
      try {
        const a = await call(s.url, "/v1/ids/oom?count=5");
        assertError(a, 503, "unavailable");
        assert.match(a.headers.get("retry-after") ?? "", /^[1-9][0-9]*$/);
      } finally {
        await command(server.url, "CONFIG", "SET", "maxmemory", "0");
      }
      let status = 0;
      for (const until = performance.now() + 20_000; status !== 200 && performance.now() < until;) {
        status = (await call(s.url, "/v1/ids/oom")).status;
        if (status !== 200) await new Promise((r) => setTimeout(r, 20));
      }
      assert.equal(status, 200);
    },
  });
  await t.step("the store refuses (not an integer): 500 internal, logged, no stack", async () => {
    await command(server.url, "HSET", "kvid", "broken", "not-a-number");
    const a = await call(s.url, "/v1/ids/broken");
    assertError(a, 500, "internal");
    assert.ok(!a.body.includes("not-a-number"));
    assert.match(s.logged.join("\n"), /ids "broken" failed: KvIdError/);
  });
});

Deno.test("service: a flood of new names hits the live-generator cap (429)", async (t) => {
  using store = new DenoKvStore(":memory:");
  await t.step("past maxGenerators a new name answers 429; known names still work", async () => {
    await using s = serveService({ store, tokens: TOKENS, maxGenerators: 3, idleMs: 3_600_000 });
    for (const name of ["a", "b", "c"]) {
      assert.equal((await call(s.url, `/v1/ids/${name}`)).status, 200);
    }
    const flood = await Promise.all(
      Array.from({ length: 50 }, (_, i) => call(s.url, `/v1/ids/flood-${i}`)),
    );
    for (const a of flood) {
      assertError(a, 429, "too_many_generators");
      assert.ok(a.headers.get("retry-after"));
    }
    assert.equal((await call(s.url, "/v1/ids/a")).status, 200);
    assert.equal((await call(s.url, "/v1/daily/a")).status, 429); // a daily generator is another one
    const metrics = await call(s.url, "/metrics", { method: "GET" });
    assert.match(metrics.body, /^kvid_generators 3$/m);
  });
  await t.step("an idle generator is closed to make room", async () => {
    await using s = serveService({ store, tokens: TOKENS, maxGenerators: 1, idleMs: 1 });
    // The service's clock is moved by the test: x is idle for 2 ms however fast the machine.
    const realNow = Date.now;
    let ahead = 0;
    Date.now = () => realNow() + ahead;
    try {
      const first = ids(await call(s.url, "/v1/ids/x"));
      ahead += 2; // idle ≥ 1 ms
      assert.equal((await call(s.url, "/v1/ids/y")).status, 200);
      ahead += 2;
      const again = ids(await call(s.url, "/v1/ids/x"));
      assert.ok(again[0] > first[0], "a new generator of x went backwards");
    } finally {
      Date.now = realNow;
    }
  });
});

Deno.test("service: /metrics parses as Prometheus text with the kvid_ series", async () => {
  await using server = await startServer();
  await using client = await openClient("node-redis", server.url);
  await using s = serveService({ redis: client.redis, tokens: TOKENS });
  await call(s.url, "/v1/ids/order?count=3");
  await call(s.url, "/v1/ids/we%22ird%5Cname");
  // A newline (a control character) is not a name: it never reaches a label (issue 33).
  assertError(await call(s.url, "/v1/ids/we%22ird%5Cname%0A"), 400, "bad_name");
  await call(s.url, "/v1/daily/order?count=2");
  const a = await call(s.url, "/metrics", { method: "GET" });
  assert.equal(a.status, 200);
  assert.match(a.headers.get("content-type") ?? "", /^text\/plain; version=0\.0\.4/);
  type Family = {
    name: string;
    type: string;
    metrics: {
      labels?: Record<string, string>;
      value?: string;
      buckets?: Record<string, string>;
      count?: string;
    }[];
  };
  const families = (parsePrometheus as (text: string) => Family[])(a.body);
  const byName = new Map(families.map((f) => [f.name, f]));
  const value = (metric: string, kind: string, name: string) => {
    const m = byName.get(metric)?.metrics.find((x) =>
      x.labels?.kind === kind && x.labels?.name === name
    );
    assert.ok(m, `${metric}{kind=${kind},name=${name}} is missing`);
    return m;
  };
  for (
    const [metric, type] of [
      ["kvid_ids_issued_total", "COUNTER"],
      ["kvid_reservations_total", "COUNTER"],
      ["kvid_reservation_failures_total", "COUNTER"],
      ["kvid_stalls_total", "COUNTER"],
      ["kvid_rollbacks_total", "COUNTER"],
      ["kvid_step", "GAUGE"],
      ["kvid_remaining", "GAUGE"],
      ["kvid_reservation_duration_seconds", "HISTOGRAM"],
      ["kvid_generators", "GAUGE"],
    ]
  ) {
    assert.equal(byName.get(metric)?.type, type, metric);
  }
  assert.equal(value("kvid_ids_issued_total", "ids", "order").value, "3");
  assert.equal(value("kvid_ids_issued_total", "daily", "order").value, "2");
  assert.equal(value("kvid_ids_issued_total", "ids", 'we"ird\\name').value, "1");
  const reservations = Number(value("kvid_reservations_total", "ids", "order").value);
  assert.ok(reservations >= 1);
  assert.ok(Number(value("kvid_stalls_total", "ids", "order").value) >= 1); // the first call waits
  // The parser merges a histogram's labelled series into one (it keeps `le` only): read the
  // per-name series from the text, which the parser accepted above.
  const series = (suffix: string) =>
    Number(
      new RegExp(
        `^kvid_reservation_duration_seconds_${suffix}\\{kind="ids",name="order"(,le="\\+Inf")?\\} (\\S+)$`,
        "m",
      )
        .exec(a.body)?.[2],
    );
  assert.equal(series("count"), reservations);
  assert.equal(series("bucket"), reservations);
  assert.ok(series("sum") > 0);
  assert.equal(value("kvid_rollbacks_total", "ids", "order").value, "0");
  assert.equal(byName.get("kvid_generators")?.metrics[0].value, "3");
});

Deno.test("service: slow clients do not hold up others", async () => {
  using store = new DenoKvStore(":memory:");
  await using s = serveService({ store, tokens: TOKENS });
  const port = Number(new URL(s.url).port);
  // One client stops halfway through its headers, another announces a body it never sends.
  using stalled = await Deno.connect({ hostname: "127.0.0.1", port });
  await stalled.write(new TextEncoder().encode("POST /v1/ids/order HTTP/1.1\r\nHost: x\r\nAuthor"));
  using bodiless = await Deno.connect({ hostname: "127.0.0.1", port });
  await bodiless.write(
    new TextEncoder().encode(
      `POST /v1/ids/order HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${ALL}\r\n` +
        "Content-Length: 1000\r\n\r\nabc",
    ),
  );
  // The ID does not wait for a body the service never reads.
  const buf = new Uint8Array(4096);
  let reply = "";
  while (!/\r\n\r\n\d+\n/.test(reply)) {
    const n = await bodiless.read(buf);
    assert.ok(n !== null, `closed after ${JSON.stringify(reply)}`);
    reply += new TextDecoder().decode(buf.subarray(0, n));
  }
  assert.match(reply, /^HTTP\/1\.1 200/);
  const answers = await Promise.all(Array.from({ length: 20 }, () => call(s.url, "/v1/ids/order")));
  for (const a of answers) assert.equal(a.status, 200);
});

Deno.test("deno serve: refuses to start without KVID_TOKENS", async () => {
  await assert.rejects(
    startServeProcess({ KVID_TOKENS: "", KVID_AUTH: "", KVID_KV_PATH: ":memory:" }),
    /refusing to start/,
  );
});

Deno.test("deno serve: Deno KV by default; SIGTERM exits 0", async () => {
  const dir = await Deno.makeTempDir({ prefix: "kvid-service-" });
  try {
    await using p = await startServeProcess({
      KVID_TOKENS: `${ALL}:*`,
      KVID_KV_PATH: `${dir}/ids.sqlite3`,
      KVID_REDIS_URL: "",
    });
    const a = await call(p.url, "/v1/ids/order?count=2");
    assert.equal(a.body, "1\n2\n");
    assert.equal((await call(p.url, "/readyz", { method: "GET", token: null })).status, 200);
    p.child.kill("SIGTERM");
    assert.equal((await p.status).code, 0, p.stderr.join("\n"));
    assert.ok(p.stderr.some((l) => /store Deno KV/.test(l)));
    assert.ok(!p.stderr.join("\n").includes(ALL));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("deno serve: SIGTERM answers the request in flight, then exits 0", async () => {
  await using server = await startServer();
  await using proxy = await startProxy(server);
  await using p = await startServeProcess({
    KVID_AUTH: "none",
    KVID_TOKENS: "",
    KVID_REDIS_URL: proxy.url,
    KVID_TIMEOUT_MS: "60000",
  });
  assert.ok(p.stderr.some((l) => /WARNING: authentication is OFF/.test(l)));
  assert.equal((await call(p.url, "/v1/ids/warm", { token: null })).status, 200); // connected
  proxy.pause();
  const inFlight = call(p.url, "/v1/ids/order", { token: null });
  // Wait until the service holds it (a metrics request counts itself too).
  for (;;) {
    const m = await call(p.url, "/metrics", { method: "GET", token: null });
    if (/^kvid_http_requests_in_flight [2-9]/m.test(m.body)) break;
  }
  p.child.kill("SIGTERM");
  await p.waitForLine(/stopping/);
  // Stopped accepting: a new request is turned away, the one in flight still gets its ID.
  const late = await call(p.url, "/v1/ids/order", { token: null }).catch((err) => err);
  if (!(late instanceof Error)) assertError(late, 503, "shutting_down");
  proxy.resume();
  const a = await inFlight;
  assert.equal(a.status, 200, a.body);
  assert.match(a.body, /^\d+\n$/);
  assert.equal((await p.status).code, 0, p.stderr.join("\n"));
  assert.ok(p.stderr.some((l) => /stopped/.test(l)));
});

Deno.test("service: its generators give back on close and start from the remembered step", async (t) => {
  await t.step(
    "the timing wrapper forwards the store's optional methods, and only those",
    async () => {
      const { Entry, timedStore } = await import("../../src/service/generators.ts");
      using kv = new DenoKvStore(":memory:");
      const entry = new Entry("ids", "x", {
        store: kv,
        max: 1,
        idleMs: 1,
        timeout: 1000,
        timeZone: "UTC",
        durability: "strict",
      });
      const full = timedStore(kv, entry, 1000);
      const methods = [
        "release",
        "loadStep",
        "saveStep",
        "deleteDaysBefore",
        "durability",
      ] as const;
      for (const m of methods) {
        assert.equal(typeof full[m], "function", m);
      }
      const bare = timedStore({ reserve: kv.reserve.bind(kv) }, entry, 1000);
      assert.deepEqual(Object.keys(bare), ["reserve"]);
      await entry.gen.close();
    },
  );
  await t.step("on Redis: the unused tail is given back, the step is loaded", async () => {
    await using server = await startServer();
    await using client = await openClient("node-redis", server.url);
    await command(server.url, "HSET", "kvid", "\0step:order", "5000");
    const s = serveService({ redis: client.redis, tokens: TOKENS });
    try {
      assert.equal((await call(s.url, "/v1/ids/order?count=3")).body, "1\n2\n3\n");
      const metrics = await call(s.url, "/metrics", { method: "GET" });
      // Started from the remembered 5,000 rather than minStep: the first segment held 5,000.
      assert.match(metrics.body, /^kvid_remaining\{kind="ids",name="order"\} 4997$/m);
    } finally {
      await s.close();
    }
    assert.equal(await command(server.url, "HGET", "kvid", "order"), "3");
  });
});

/** The value of one sample of `/metrics` text, e.g. `kvid_store_up` or `x{name="a"}`. */
function sample(metrics: string, series: string): number | undefined {
  for (const line of metrics.split("\n")) {
    if (line.startsWith(series + " ")) return Number(line.slice(series.length + 1));
  }
  return undefined;
}

Deno.test("service: an outage counts as failures everywhere an alert looks", async () => {
  await using server = await startServer();
  await using proxy = await startProxy(server);
  proxy.pause(); // unreachable from the start, as a service started before its Redis
  const { optionsFromEnv } = await import("../../src/service/mod.ts");
  const env = new Map([["KVID_REDIS_URL", proxy.url], ["KVID_TOKENS", TOKENS]]);
  const config = optionsFromEnv((name) => env.get(name));
  try {
    await using s = serveService({ ...config.options, timeout: 300 });
    for (let i = 0; i < 3; i++) {
      const a = await call(s.url, "/v1/ids/order");
      assertError(a, 503, "unavailable");
      assert.match(a.headers.get("retry-after") ?? "", /^[1-9][0-9]*$/);
    }
    const m = (await call(s.url, "/metrics", { method: "GET" })).body;
    assert.equal(sample(m, 'kvid_request_failures_total{kind="ids",name="order"}'), 3);
    assert.ok(sample(m, 'kvid_reservation_failures_total{kind="ids",name="order"}')! >= 1, m);
    assert.equal(sample(m, "kvid_store_up"), 0);
    assert.equal(sample(m, "kvid_store_config_error"), 0);
    assert.equal(sample(m, 'kvid_http_responses_total{code="503"}'), 3);
    proxy.resume();
    let status = 0;
    for (const until = performance.now() + 20_000; status !== 200 && performance.now() < until;) {
      status = (await call(s.url, "/v1/ids/order")).status;
    }
    assert.equal(status, 200);
    const after = (await call(s.url, "/metrics", { method: "GET" })).body;
    assert.equal(sample(after, "kvid_store_up"), 1);
  } finally {
    await config.close();
  }
});

Deno.test("service: a wrong Redis password is a configuration error, named as such", async () => {
  await using server = await startServer({ password: "right-password-0123" });
  const { optionsFromEnv } = await import("../../src/service/mod.ts");
  const url = new URL(server.url);
  url.password = "wrong-password-0123";
  const env = new Map([["KVID_REDIS_URL", url.toString()], ["KVID_TOKENS", TOKENS]]);
  const config = optionsFromEnv((name) => env.get(name));
  try {
    await using s = serveService({ ...config.options, timeout: 1000 });
    const a = await call(s.url, "/v1/ids/order");
    assertError(a, 500, "store_config");
    assert.ok(!a.body.includes("wrong-password"));
    const r = await call(s.url, "/readyz", { method: "GET", token: null });
    assert.equal(r.status, 503);
    assert.match(r.body, /configuration/);
    const m = (await call(s.url, "/metrics", { method: "GET" })).body;
    assert.equal(sample(m, "kvid_store_up"), 0);
    assert.equal(sample(m, "kvid_store_config_error"), 1);
    assert.equal(sample(m, 'kvid_request_failures_total{kind="ids",name="order"}'), 1);
    assert.ok(!s.logged.join("\n").includes("wrong-password"));
  } finally {
    await config.close();
  }
});

Deno.test("service: a scoped token sees only its names (metrics, page, chart)", async () => {
  using store = new DenoKvStore(":memory:");
  await using s = serveService({ store, tokens: TOKENS });
  await call(s.url, "/v1/ids/order?count=7");
  await call(s.url, "/v1/ids/secret-name?count=10000");
  await call(s.url, "/v1/daily/other-secret");
  const scoped = (await call(s.url, "/metrics", { method: "GET", token: ORDERS })).body;
  assert.equal(sample(scoped, 'kvid_ids_issued_total{kind="ids",name="order"}'), 7);
  assert.doesNotMatch(scoped, /secret/);
  assert.equal(sample(scoped, "kvid_generators"), 1);
  const all = (await call(s.url, "/metrics", { method: "GET" })).body;
  assert.match(all, /secret-name/);
  assert.equal(sample(all, "kvid_generators"), 3);
  // Process, build, store and HTTP series are service-wide: for tokens of every name only.
  assert.equal(sample(all, "process_open_fds")! > 0, true);
  assert.match(all, /^kvid_build_info\{version="[^"]+",runtime="deno",/m);
  for (const wide of ["process_", "kvid_build_info", "kvid_store_up", "kvid_http_", "kvid_auth_"]) {
    assert.ok(!scoped.includes(wide), `a scoped token sees ${wide}`);
  }
  // The page of the scoped token: its rows, and a chart of its traffic (7 IDs/s at most).
  const login = await fetch(`${s.url}/login`, {
    method: "POST",
    body: new URLSearchParams({ token: ORDERS }),
    redirect: "manual",
  });
  await login.body?.cancel();
  const cookie = login.headers.get("set-cookie")!.split(";")[0];
  // The chart covers full seconds only: read it until the second of the requests is in it.
  let peak = 0;
  let html = "";
  for (const until = performance.now() + 5_000; peak === 0 && performance.now() < until;) {
    html = await (await fetch(`${s.url}/`, { headers: { cookie } })).text();
    peak = Number(/peak (\d+)/.exec(html)?.[1]);
    if (peak === 0) await new Promise((r) => setTimeout(r, 100));
  }
  assert.equal(peak, 7, html);
  assert.doesNotMatch(html, /secret/);
});

Deno.test("service: mounted under a base path (an existing app's prefix)", async () => {
  using store = new DenoKvStore(":memory:");
  await using service = createHandler({ store, tokens: TOKENS, basePath: "/ids", log: () => {} });
  const app = (req: Request) =>
    new URL(req.url).pathname.startsWith("/ids/") || new URL(req.url).pathname === "/ids"
      ? service.fetch(req)
      : Promise.resolve(new Response("app"));
  const ask = (path: string, init: RequestInit = {}) =>
    app(
      new Request(`http://localhost${path}`, {
        method: "POST",
        ...init,
        headers: { authorization: `Bearer ${ALL}`, ...init.headers },
      }),
    );
  assert.equal(await (await ask("/ids/v1/ids/order?count=2")).text(), "1\n2\n");
  assert.equal(await (await ask("/ids/healthz", { method: "GET" })).text(), "ok\n");
  // (A name of its own: the generator of "order" may be prefetching on the same counter.)
  const seg = await ask("/ids/v1/segments/seg", { body: JSON.stringify({ count: 3 }) });
  assert.deepEqual((await seg.json()).ranges, [{ first: "1", last: "3" }]);
  assert.equal((await ask("/v1/ids/order")).status, 200); // the app's, not the service's
  assert.equal(await (await ask("/v1/ids/order")).text(), "app");
  // Paths outside the prefix reach the handler only by mistake: 404, not another route.
  const outside = await service.fetch(new Request("http://localhost/v1/ids/order"));
  assert.equal(outside.status, 404);
  await outside.body?.cancel();
  const lookalike = await service.fetch(new Request("http://localhost/idsx/healthz"));
  assert.equal(lookalike.status, 404);
  await lookalike.body?.cancel();
  // The status page: its forms post below the prefix, its cookie is scoped to it.
  const login = await ask("/ids/login", { body: new URLSearchParams({ token: ALL }) });
  assert.equal(login.status, 303);
  assert.equal(login.headers.get("location"), "/ids/");
  assert.match(login.headers.get("set-cookie") ?? "", /; Path=\/ids;/);
  await login.body?.cancel();
  const form = await (await app(new Request("http://localhost/ids/"))).text();
  assert.match(form, /action="\/ids\/login"/);
  const doc = await (await ask("/ids/openapi.json", { method: "GET" })).json();
  assert.deepEqual(doc.servers, [{ url: "/ids" }]);
  for (const bad of ["ids", "/ids/", "/a b"]) {
    assert.throws(
      () => createHandler({ store, tokens: TOKENS, basePath: bad, log: () => {} }),
      TypeError,
    );
  }
});

Deno.test("service: per-name options from configuration (KVID_NAMES)", async () => {
  const { optionsFromEnv } = await import("../../src/service/mod.ts");
  const env = new Map([
    ["KVID_KV_PATH", ":memory:"],
    ["KVID_TOKENS", TOKENS],
    [
      "KVID_NAMES",
      JSON.stringify({ order: { minStep: 500 }, ticket: { digits: 8 }, "*": { maxStep: 7 } }),
    ],
  ]);
  const config = optionsFromEnv((name) => env.get(name));
  try {
    await using s = serveService(config.options);
    assert.equal((await call(s.url, "/v1/ids/order")).body, "1\n");
    assert.equal((await call(s.url, "/v1/ids/other?count=20")).status, 200);
    const m = (await call(s.url, "/metrics", { method: "GET" })).body;
    assert.equal(sample(m, 'kvid_remaining{kind="ids",name="order"}'), 499); // a 500-ID segment
    assert.ok(sample(m, 'kvid_step{kind="ids",name="other"}')! <= 7, m); // "*": maxStep 7
    const serial = (await call(s.url, "/v1/daily/ticket")).body.trim();
    assert.match(serial, /^\d{8}00000001$/); // 8 digits of sequence
  } finally {
    await config.close();
  }
  using store = new DenoKvStore(":memory:");
  for (
    const names of [
      { order: { nope: 1 } },
      { order: { minStep: 0 } },
      { order: { minStep: 10, maxStep: 5 } },
      { ticket: { digits: 99 } },
      { ticket: { timeZone: "Mars/Olympus" } },
      { order: 5 },
    ]
  ) {
    assert.throws(
      () => createHandler({ store, tokens: TOKENS, names: names as never, log: () => {} }),
      TypeError,
      JSON.stringify(names),
    );
  }
  assert.throws(
    () => optionsFromEnv((name) => name === "KVID_NAMES" ? "{not json" : undefined),
    /KVID_NAMES is not JSON/,
  );
});

Deno.test("service: segment requests: at most 64 at the store at once, the rest 503", async () => {
  await using server = await startServer();
  await using proxy = await startProxy(server);
  await using client = await openClient("node-redis", proxy.url);
  await using s = serveService({ redis: client.redis, tokens: TOKENS, timeout: 10_000 });
  const segment = (name: string) =>
    fetch(`${s.url}/v1/segments/${name}`, {
      method: "POST",
      headers: { authorization: `Bearer ${ALL}` },
      body: JSON.stringify({ count: 10 }),
    });
  const warm = await segment("warm"); // connected
  assert.equal(warm.status, 200);
  await warm.body?.cancel();
  proxy.pause();
  const held = Array.from({ length: 64 }, (_, i) => segment(`held-${i}`));
  // Once all 64 are at the store (in flight), the next is turned away at once.
  let answer: Answer | undefined;
  for (const until = performance.now() + 10_000; performance.now() < until;) {
    const res = await segment("one-more");
    answer = { status: res.status, headers: res.headers, body: await res.text() };
    if (/too many segment requests/.test(answer.body)) break;
  }
  assert.ok(answer);
  assertError(answer, 503, "unavailable");
  assert.match(answer.body, /too many segment requests/);
  assert.equal(answer.headers.get("retry-after"), "1");
  proxy.resume();
  for (const res of await Promise.all(held)) {
    assert.equal(res.status, 200);
    await res.body?.cancel();
  }
});
