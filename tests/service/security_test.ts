/**
 * Issue 33's attacks on names, routing, the unauthenticated mode, scoped metrics and failed
 * logins, each against the service on a Redis server the test starts, through the service's own
 * listener and raw TCP where the request must be sent as written: refused with its status, the
 * counter untouched, the name still serving (docs/security.md links each test).
 */

import "../support/deadline.ts"; // a time limit on every test of this file
import assert from "node:assert/strict";
import { createClient } from "redis";
import { DailyId, fromNodeRedis, KvId } from "../../mod.ts";
import { main as cliMain } from "../../src/cli/mod.ts";
import { HttpStore } from "../../src/client/mod.ts";
import { FailedAuth } from "../../src/service/auth_limit.ts";
import { createHandler, type ServiceOptions } from "../../src/service/mod.ts";
import { listen } from "../../src/service/serve.ts";
import { command, startServer, type TestServer } from "../support/redis_server.ts";

const ALL = "security-token-all-0123456789";
const ORDERS = "security-token-orders-0123456";
const TOKENS = `${ALL}:*,${ORDERS}:order|invoice`;

/** The service on `server`'s Redis behind its own listener, with what it was asked. */
async function serve(server: TestServer, options: Partial<ServiceOptions>) {
  const client = await createClient({ url: server.url }).connect();
  const service = createHandler({
    redis: fromNodeRedis(client),
    log: () => {},
    ...options,
  } as ServiceOptions);
  const l = listen({ hostname: "127.0.0.1", port: 0, handler: service.fetch, log() {} });
  const port = l.addr.port;
  return {
    port,
    url: `http://127.0.0.1:${port}`,
    async [Symbol.asyncDispose]() {
      await l.shutdown();
      await service.close();
      client.destroy();
    },
  };
}

/** Send `text` as written on a new connection; the status and the body of the answer. */
async function raw(port: number, text: string): Promise<{ status: number; body: string }> {
  const c = await Deno.connect({ hostname: "127.0.0.1", port });
  try {
    await c.write(new TextEncoder().encode(text));
    const chunks: Uint8Array[] = [];
    const buf = new Uint8Array(65_536);
    for (;;) {
      const n = await c.read(buf);
      if (n === null) break;
      chunks.push(buf.slice(0, n));
    }
    const all = new TextDecoder().decode(new Uint8Array(chunks.flatMap((b) => [...b])));
    const [head, ...body] = all.split("\r\n\r\n");
    return { status: Number(head.split(" ")[1]), body: body.join("\r\n\r\n") };
  } finally {
    c.close();
  }
}

/** A request as text: `line`, a Host of the listener unless `headers` names one, Connection: close. */
function request(port: number, line: string, headers: string[] = [], body = ""): string {
  const all = headers.some((h) => /^host:/i.test(h))
    ? headers
    : [`Host: 127.0.0.1:${port}`, ...headers];
  if (body !== "") all.push(`Content-Length: ${new TextEncoder().encode(body).length}`);
  return `${line} HTTP/1.1\r\n${[...all, "Connection: close"].join("\r\n")}\r\n\r\n${body}`;
}

const bearer = (token: string) => `Authorization: Bearer ${token}`;
const JSON_TYPE = "Content-Type: application/json";

/**
 * The name still serves: the service's IDs, two `HttpStore` clients (the `*` token and the
 * scoped one; any token without tokens) and a `KvId` on the same counter, each giving back its
 * unused top on close and the next ones reserving after it, no ID twice.
 */
async function stillServing(server: TestServer, url: string, name: string): Promise<void> {
  const all: bigint[] = [];
  const fromService = async () => {
    const res = await fetch(`${url}/v1/ids/${name}?count=3`, {
      method: "POST",
      headers: { authorization: `Bearer ${ALL}`, "content-type": "application/json" },
    });
    assert.equal(res.status, 200);
    all.push(...(await res.text()).trim().split("\n").map(BigInt));
  };
  const edge = (token: string) =>
    new KvId(name, {
      store: new HttpStore(url, { token }),
      bigint: true,
      minStep: 5,
      maxStep: 5,
    });
  const client = await createClient({ url: server.url }).connect();
  try {
    await fromService();
    for (let round = 0; round < 2; round++) {
      await using first = edge(ALL);
      await using second = edge(ORDERS);
      await using direct = new KvId(name, { redis: fromNodeRedis(client), bigint: true });
      all.push(await first.next(), await second.next(), await direct.next());
      all.push(...await second.nextBatch(3), ...await first.nextBatch(3));
      await fromService();
    }
    assert.equal(new Set(all).size, all.length, `a duplicate among ${all.join(",")}`);
  } finally {
    client.destroy();
  }
}

Deno.test("security: one name rule for KvId, DailyId, the CLI and every route", async (t) => {
  await using server = await startServer();
  const bad = ["\0step:order", "\0pool:order", "a\nb", "a\rb", "or\x1bder", "a\x7fb", "a\x9bb"];
  const rule = /must not (begin with a NUL byte|hold a control character)/;

  await t.step("the library: KvId and DailyId throw a TypeError naming the rule", () => {
    for (const name of bad) {
      assert.throws(() => new KvId(name), (e) => e instanceof TypeError && rule.test(e.message));
      assert.throws(() => new DailyId(name), (e) => e instanceof TypeError && rule.test(e.message));
    }
    // Not control characters: a space, a no-break space, letters of any script, emoji.
    for (const name of ["a b", "a\u00a0b", "заказ", "注文", "🧾"]) {
      assert.equal(new KvId(name).name, name);
    }
  });

  await t.step("the CLI: exit 1 for each", async () => {
    for (const name of bad) {
      assert.equal(await cliMain(["get", name, "--url", server.url]), 1, JSON.stringify(name));
    }
  });

  await t.step("every route: 400 bad_name, the library's words, nothing written", async () => {
    await using s = await serve(server, { tokens: TOKENS });
    for (const name of bad) {
      const path = encodeURIComponent(name);
      const message = (() => {
        try {
          new KvId(name);
        } catch (err) {
          return `bad name: ${(err as Error).message.replace(/^KvId /, "")}`;
        }
      })();
      for (
        const [method, route, body] of [
          ["POST", `/v1/ids/${path}`, ""],
          ["POST", `/v1/daily/${path}`, ""],
          ["POST", `/v1/segments/${path}`, '{"count":5}'],
          ["POST", `/v1/segments/${path}/release`, '{"first":"1","last":"5"}'],
          ["GET", `/v1/segments/${path}/step`, ""],
          ["PUT", `/v1/segments/${path}/step`, '{"step":7}'],
        ]
      ) {
        const a = await raw(
          s.port,
          request(s.port, `${method} ${route}`, [bearer(ALL), JSON_TYPE], body),
        );
        assert.equal(a.status, 400, `${method} ${route}: ${a.body}`);
        const error = JSON.parse(a.body).error;
        assert.equal(error.code, "bad_name");
        assert.equal(error.message, message, `${method} ${route}`);
      }
    }
    // Nothing reached the store: no field of the hash holds a control character.
    const fields = (await command(server.url, "HKEYS", "kvid")) as string[];
    assert.ok(fields.every((f) => !/\p{Cc}/u.test(f)), JSON.stringify(fields));
    assert.equal(await command(server.url, "HGET", "kvid", "\0step:order"), null);
    // Nor a label of /metrics.
    const m =
      await (await fetch(`${s.url}/metrics`, { headers: { authorization: `Bearer ${ALL}` } }))
        .text();
    assert.ok(!/\p{Cc}/u.test(m.replaceAll("\n", "")), "a control character in /metrics");
    await stillServing(server, s.url, "order");
  });
});

Deno.test("security: the route comes from the request target only (raw TCP)", async (t) => {
  await using server = await startServer();
  await using s = await serve(server, { tokens: TOKENS });
  const p = s.port;

  await t.step("a Host that is not host[:port] is 400, never a route", async () => {
    for (
      const host of [
        "x/v1/ids/order?",
        "x?/v1/ids/order",
        "x#/v1/ids/order",
        "user@x",
        "x y",
        "x:99999",
        "x, y",
      ]
    ) {
      const a = await raw(p, request(p, "GET /healthz", [`Host: ${host}`, bearer(ALL)]));
      assert.equal(a.status, 400, `Host ${host}: ${a.body}`);
      assert.match(a.body, /host\[:port\]/);
    }
    const two = await raw(
      p,
      request(p, "GET /healthz", [`Host: 127.0.0.1:${p}`, "Host: x/v1/ids/order?"]),
    );
    assert.equal(two.status, 400, two.body);
    const none = await raw(p, "GET /healthz HTTP/1.1\r\nConnection: close\r\n\r\n");
    assert.equal(none.status, 400, none.body);
    assert.equal(await command(server.url, "HGET", "kvid", "order"), null, "an ID was made");
  });

  await t.step("origin-form as is; absolute-form checked against the listener", async () => {
    assert.equal((await raw(p, request(p, "GET /healthz"))).body, "ok\n");
    const same = await raw(
      p,
      `GET http://127.0.0.1:${p}/healthz HTTP/1.1\r\nConnection: close\r\n\r\n`,
    );
    assert.equal(same.body, "ok\n");
    const query = await raw(p, `GET http://127.0.0.1:${p}?x HTTP/1.1\r\nConnection: close\r\n\r\n`);
    assert.equal(query.status, 200, query.body); // the status page's sign-in form, path "/"
    for (
      const [line, host] of [
        [`GET http://127.0.0.1:${p + 1}/v1/ids/order`, undefined], // another port
        [`GET http://127.0.0.1/v1/ids/order`, undefined], // port 80
        [`GET http://127.0.0.1:${p}/healthz`, "Host: x/v1/ids/order?"], // Host differs
        [`GET https://127.0.0.1:${p}/healthz`, undefined], // not http
        [`GET *`, undefined],
        [`CONNECT 127.0.0.1:${p}`, undefined],
      ] as const
    ) {
      const a = await raw(
        p,
        `${line} HTTP/1.1\r\n${host ? `${host}\r\n` : ""}${
          bearer(ALL)
        }\r\nConnection: close\r\n\r\n`,
      );
      assert.equal(a.status, 400, `${line}: ${a.body}`);
    }
    assert.equal(await command(server.url, "HGET", "kvid", "order"), null, "an ID was made");
  });

  await t.step("a path the URL parser would rewrite (dot segments, backslashes): 400", async () => {
    // A proxy allowing /healthz or /v1/ids/ by prefix passed these on, and the URL parser made
    // them /v1/ids/order and /v1/segments/order (before: 200, an ID; 400 bad_segment).
    for (
      const target of [
        "/healthz/../v1/ids/order",
        "/healthz/%2e%2e/v1/ids/order",
        "/healthz/.%2E/v1/ids/order",
        "/healthz\\..\\v1\\ids\\order",
        "/v1/ids/x\\..\\..\\segments\\order",
        "/v1/ids/./order",
        "/v1/ids/order/..",
        "/healthz#/../v1/ids/order",
        `http://127.0.0.1:${p}/healthz/../v1/ids/order`,
      ]
    ) {
      const a = await raw(p, request(p, `POST ${target}`, [bearer(ALL)], "{}"));
      assert.equal(a.status, 400, `${target}: ${a.body}`);
      assert.match(a.body, /bad_request/, target);
    }
    assert.equal(await command(server.url, "HGET", "kvid", "order"), null, "an ID was made");
    // What stays: a name holding dots, percent-encoded slashes and backslashes.
    for (const name of ["a..b", "...", "a%2Fb", "a%5Cb", "v1.2"]) {
      const a = await raw(p, request(p, `POST /v1/ids/${name}`, [bearer(ALL)]));
      assert.equal(a.status, 200, `${name}: ${a.body}`);
    }
  });

  await t.step("behind Deno.serve (which pastes the Host in front of the path): 400", async () => {
    await using direct = await (async () => {
      const client = await createClient({ url: server.url }).connect();
      const service = createHandler({ redis: fromNodeRedis(client), tokens: TOKENS, log() {} });
      const d = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, service.fetch);
      return {
        port: d.addr.port,
        async [Symbol.asyncDispose]() {
          await d.shutdown();
          await service.close();
          client.destroy();
        },
      };
    })();
    const a = await raw(
      direct.port,
      request(direct.port, "GET /healthz", ["Host: x/v1/ids/order?", bearer(ALL)]),
    );
    assert.equal(a.status, 400, a.body);
    assert.equal(await command(server.url, "HGET", "kvid", "order"), null, "an ID was made");
  });
  await stillServing(server, s.url, "order");
});

Deno.test("security: the unauthenticated mode answers no request a web page can send", async (t) => {
  await using server = await startServer();
  await using s = await serve(server, { auth: "none", allowedHosts: ["ids.internal"] });
  const p = s.port;
  await command(server.url, "HSET", "kvid", "order", "100");
  const counters = async () => JSON.stringify(await command(server.url, "HGETALL", "kvid"));
  const before = await counters();
  const evil = "Origin: http://evil.example";

  await t.step("each cross-site request: refused with its status, no counter changed", async () => {
    const cases: [string, string, number][] = [
      // A fetch in no-cors mode: text/plain, a JSON body.
      [
        "release",
        request(
          p,
          "POST /v1/segments/order/release",
          ["Content-Type: text/plain", evil],
          '{"first":"1","last":"100"}',
        ),
        403,
      ],
      [
        "raise",
        request(
          p,
          "POST /v1/segments/order",
          ["Content-Type: text/plain", evil],
          '{"count":1,"floor":"9223372036854775806"}',
        ),
        403,
      ],
      ["step", request(p, "PUT /v1/segments/order/step", [JSON_TYPE, evil], '{"step":1}'), 403],
      // The same without Origin (a browser always sends one with a POST): still not JSON.
      [
        "raise, no Origin",
        request(
          p,
          "POST /v1/segments/order",
          ["Content-Type: text/plain"],
          '{"count":1,"floor":"9223372036854775806"}',
        ),
        415,
      ],
      [
        "release, form",
        request(p, "POST /v1/segments/order/release", [
          "Content-Type: application/x-www-form-urlencoded",
        ], "first=1&last=100"),
        415,
      ],
      [
        "ids, multipart",
        request(
          p,
          "POST /v1/ids/order",
          ["Content-Type: multipart/form-data; boundary=x"],
          "--x--",
        ),
        415,
      ],
      // A form posted from another site, an <img>, a page of the same host on another port.
      [
        "ids, form",
        request(p, "POST /v1/ids/order?count=10000", [
          "Content-Type: application/x-www-form-urlencoded",
          evil,
        ], "a=b"),
        403,
      ],
      [
        "ids, img",
        request(p, "GET /v1/ids/order?count=10000", [
          "Sec-Fetch-Site: cross-site",
          "Sec-Fetch-Dest: image",
        ]),
        403,
      ],
      [
        "ids, img of an old browser",
        request(p, "GET /v1/ids/order?count=10000", ["Accept: image/*"]),
        405,
      ],
      ["daily, img", request(p, "GET /v1/daily/order", []), 405],
      [
        "ids, same site",
        request(p, "POST /v1/ids/order", [JSON_TYPE, "Sec-Fetch-Site: same-site"]),
        403,
      ],
      [
        "ids, another port",
        request(p, "POST /v1/ids/order", [JSON_TYPE, `Origin: http://127.0.0.1:${p + 1}`]),
        403,
      ],
      ["ids, Origin null", request(p, "POST /v1/ids/order", [JSON_TYPE, "Origin: null"]), 403],
      // DNS rebinding: the page's own name, pointed at 127.0.0.1, same origin as far as it knows.
      [
        "rebinding, ids",
        request(p, "POST /v1/ids/order", [`Host: evil.example:${p}`, JSON_TYPE]),
        403,
      ],
      ["rebinding, page", request(p, "GET /", [`Host: evil.example:${p}`]), 403],
      ["rebinding, metrics", request(p, "GET /metrics", [`Host: evil.example:${p}`]), 403],
      [
        "rebinding, step",
        request(p, "GET /v1/segments/order/step", [`Host: evil.example:${p}`]),
        403,
      ],
    ];
    for (const [what, text, status] of cases) {
      const a = await raw(p, text);
      assert.equal(a.status, status, `${what}: ${a.body}`);
    }
    assert.equal(await counters(), before, "a counter changed");
  });

  await t.step("behind Deno.serve: the guard reads the path as the router does", async () => {
    // Deno.serve hands the target on as sent; the guard read it through new URL(), which made
    // /v1/ids/x\..\..\..\healthz the probe path /healthz and skipped every check (before: 200,
    // 3 IDs for evil.example). Browsers send no raw backslash; a local program might.
    const client = await createClient({ url: server.url }).connect();
    const service = createHandler({ redis: fromNodeRedis(client), auth: "none", log() {} });
    const d = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, service.fetch);
    try {
      const dp = d.addr.port;
      for (
        const target of [
          "GET /v1/ids/x\\..\\..\\..\\healthz?count=3",
          "GET /v1/ids/x\\..\\..\\..\\readyz",
        ]
      ) {
        const a = await raw(dp, request(dp, target, [`Host: evil.example:${dp}`, evil]));
        assert.equal(a.status, 403, `${target}: ${a.body}`);
      }
      assert.equal(await counters(), before, "a counter changed");
    } finally {
      await d.shutdown();
      await service.close();
      client.destroy();
    }
  });

  await t.step(
    "honest clients: POST with JSON or no body, HttpStore, an allowed host",
    async () => {
      const json = await raw(p, request(p, "POST /v1/ids/order?count=2", [JSON_TYPE]));
      assert.equal(json.body, "101\n102\n");
      const bare = await raw(p, request(p, "POST /v1/ids/order", []));
      assert.equal(bare.status, 200, bare.body);
      const same = await raw(
        p,
        request(p, "POST /v1/ids/order", [
          JSON_TYPE,
          `Origin: http://127.0.0.1:${p}`,
          "Sec-Fetch-Site: same-origin",
        ]),
      );
      assert.equal(same.status, 200, same.body);
      const named = await raw(p, request(p, "POST /v1/ids/order", [`Host: ids.internal:${p}`]));
      assert.equal(named.status, 200, named.body);
      for (const host of ["localhost", "127.0.0.2", "[::1]"]) {
        const a = await raw(p, request(p, "GET /healthz", [`Host: ${host}:${p}`]));
        assert.equal(a.status, 200, `${host}: ${a.body}`);
      }
      // Probes answer any host (they tell nothing): a load balancer addresses the service by IP.
      assert.equal((await raw(p, request(p, "GET /readyz", [`Host: 10.0.0.5:${p}`]))).status, 200);
      const store = new HttpStore(s.url, { token: "no-token-needed-0123" });
      await using edge = new KvId("order", { store, minStep: 10, maxStep: 10 });
      assert.ok((await edge.next()) > 100);
    },
  );
  await stillServing(server, s.url, "order");
});

Deno.test("security: failed authentication is limited per peer (429, Retry-After, counted)", async (t) => {
  await using server = await startServer();
  await using s = await serve(server, { tokens: TOKENS });
  // Each request claims another client address: a header any client can send, never the peer.
  let n = 0;
  const ask = (token: string, path = "/v1/ids/order") => {
    const ip = `10.0.${n >> 8}.${n++ & 255}`;
    return fetch(`${s.url}${path}`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${token}`,
        "x-forwarded-for": ip,
        "x-real-ip": ip,
        forwarded: `for=${ip}`,
      },
    });
  };

  await t.step("10 failures a minute are 401; then 429 until the minute is over", async () => {
    for (let i = 0; i < 10; i++) {
      const res = await ask(`wrong-token-${i}-0123456789`);
      await res.body?.cancel();
      assert.equal(res.status, 401);
    }
    const throttled = await ask("wrong-token-x-0123456789");
    const body = await throttled.json();
    assert.equal(throttled.status, 429);
    assert.equal(body.error.code, "too_many_failures");
    const wait = Number(throttled.headers.get("retry-after"));
    assert.ok(wait >= 1 && wait <= 60, `Retry-After ${wait}`);
    // The token is not even compared while throttled, the right one neither: no guess is tried.
    const right = await ask(ALL);
    await right.body?.cancel();
    assert.equal(right.status, 429);
    // The sign-in form too.
    const login = await fetch(`${s.url}/login`, {
      method: "POST",
      body: new URLSearchParams({ token: ALL }),
      redirect: "manual",
    });
    await login.body?.cancel();
    assert.equal(login.status, 429);
    // The probes still answer.
    assert.equal(await (await fetch(`${s.url}/healthz`)).text(), "ok\n");
  });

  await t.step("the table: bounded, a minute per window, counted", () => {
    const limit = new FailedAuth(2, 3);
    for (const peer of ["a", "b", "c", "d", "e"]) limit.failed(peer, 0);
    assert.equal(limit.size, 3, "the table is bounded");
    limit.failed("e", 1);
    assert.equal(limit.throttle("e", 2)?.status, 429);
    assert.equal(limit.throttle("e", 60_001), undefined, "the minute is over");
    const lines = limit.metrics().join("\n");
    assert.match(lines, /^kvid_auth_failures_total 6$/m);
    assert.match(lines, /^kvid_auth_throttled_total 1$/m);
  });
});

Deno.test("security: the failed-authentication series on /metrics, for tokens of every name", async () => {
  await using server = await startServer();
  // Two failures a minute, so the metrics request (from the same 127.0.0.1) is not throttled.
  await using s = await serve(server, { tokens: TOKENS, authFailuresPerMinute: 3 });
  for (let i = 0; i < 2; i++) {
    const res = await fetch(`${s.url}/metrics`, {
      headers: { authorization: "Bearer nope-0123456789abcdef" },
    });
    await res.body?.cancel();
    assert.equal(res.status, 401);
  }
  const all =
    await (await fetch(`${s.url}/metrics`, { headers: { authorization: `Bearer ${ALL}` } })).text();
  assert.match(all, /^kvid_auth_failures_total 2$/m);
  assert.match(all, /^kvid_auth_failing_peers 1$/m);
  const scoped =
    await (await fetch(`${s.url}/metrics`, { headers: { authorization: `Bearer ${ORDERS}` } }))
      .text();
  assert.ok(!scoped.includes("kvid_auth_"), "a scoped token sees the service-wide series");
});
