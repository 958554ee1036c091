/**
 * The service as a program (src/service/serve.ts, `deno task serve`) and its listener
 * (src/service/listener.ts): flags and variables, start-up mistakes, and the attacks that ended
 * or wedged `Deno.serve`: file descriptors running out, connection floods, slowloris.
 * Every child runs on 127.0.0.1 with a lowered file-descriptor limit where it matters, so the
 * floods stay small; every wait is bounded.
 */

import "../support/deadline.ts"; // a time limit on every test of this file
import assert from "node:assert/strict";
import { DenoKvStore } from "../../src/stores/deno_kv/deno_kv_store.ts";
import { listen, listenConfig } from "../../src/service/serve.ts";
import { serveService, startProcess, startServiceProcess } from "../support/service.ts";

const TOKEN = "serve-test-token-0123456789";
const ENV = { KVID_TOKENS: `${TOKEN}:*`, KVID_KV_PATH: ":memory:", KVID_REDIS_URL: "" };

/** One ID request: its status and body. */
async function getId(base: string): Promise<{ status: number; body: string }> {
  const res = await fetch(`${base}/v1/ids/order`, {
    method: "POST",
    headers: { authorization: `Bearer ${TOKEN}` },
    signal: AbortSignal.timeout(10_000),
  });
  return { status: res.status, body: await res.text() };
}

/** Open `n` TCP connections to `port` (bounded), each sending `first` if given. */
async function openConnections(port: number, n: number, first?: string): Promise<Deno.Conn[]> {
  const conns: Deno.Conn[] = [];
  for (let i = 0; i < n; i++) {
    try {
      const c = await Deno.connect({ hostname: "127.0.0.1", port });
      conns.push(c);
      if (first !== undefined) await c.write(new TextEncoder().encode(first));
    } catch {
      break; // the backlog is full: enough
    }
  }
  return conns;
}

/** Resolves true when the server closes `conn` within `ms`, false when it is still open then. */
async function closedWithin(conn: Deno.Conn, ms: number): Promise<boolean> {
  const buf = new Uint8Array(1024);
  let timer: ReturnType<typeof setTimeout> | undefined;
  let timedOut = false;
  const timeout = new Promise<void>((resolve) =>
    timer = setTimeout(() => {
      timedOut = true;
      resolve();
    }, ms)
  );
  try {
    for (;;) {
      const n = await Promise.race([conn.read(buf), timeout.then(() => "timeout" as const)]);
      if (n === "timeout") return false;
      if (n === null) return true;
    }
  } catch {
    return !timedOut;
  } finally {
    clearTimeout(timer);
  }
}

function closeAll(conns: Deno.Conn[]): void {
  for (const c of conns) {
    try {
      c.close();
    } catch {
      // closed by the server
    }
  }
}

Deno.test("listenConfig: flags win over variables; an open service stays on loopback", () => {
  const env = (vars: Record<string, string>) => (name: string) => vars[name];
  assert.deepEqual(
    listenConfig(["--host", "127.0.0.2", "--port=18001"], env({ KVID_PORT: "9" })),
    {
      hostname: "127.0.0.2",
      port: 18001,
      limits: { maxConnections: undefined, headersTimeoutMs: undefined, idleTimeoutMs: undefined },
    },
  );
  const fromEnv = listenConfig([], env({ KVID_HOST: "::1", KVID_PORT: "9000" }));
  assert.equal(fromEnv.hostname, "::1");
  assert.equal(fromEnv.port, 9000);
  assert.equal(listenConfig([], env({})).hostname, "0.0.0.0");
  assert.equal(listenConfig([], env({})).port, 8000);
  assert.equal(listenConfig([], env({ KVID_AUTH: "none" })).hostname, "127.0.0.1");
  for (const host of ["0.0.0.0", "::", "10.0.0.1"]) {
    assert.throws(
      () => listenConfig(["--host", host], env({ KVID_AUTH: "none" })),
      /loopback only.*--open-network/,
    );
    assert.throws(() => listenConfig([], env({ KVID_AUTH: "none", KVID_HOST: host })), TypeError);
  }
  assert.equal(
    listenConfig(["--host", "0.0.0.0", "--open-network"], env({ KVID_AUTH: "none" })).hostname,
    "0.0.0.0",
  );
  assert.equal(
    listenConfig([], env({ KVID_AUTH: "none", KVID_HOST: "0.0.0.0", KVID_OPEN_NETWORK: "1" }))
      .hostname,
    "0.0.0.0",
  );
  for (const args of [["--port", "70000"], ["--port"], ["--nope"], ["8000"], ["--port", "x"]]) {
    assert.throws(() => listenConfig(args, env({})), TypeError, args.join(" "));
  }
  assert.deepEqual(
    listenConfig(
      ["--max-connections", "50", "--headers-timeout=500", "--idle-timeout", "700"],
      env({}),
    )
      .limits,
    { maxConnections: 50, headersTimeoutMs: 500, idleTimeoutMs: 700 },
  );
});

Deno.test("deno task serve: --host and --port, or KVID_HOST and KVID_PORT", async () => {
  {
    await using p = await startServiceProcess(ENV, ["--host", "127.0.0.1", "--port", "0"]);
    assert.equal((await getId(p.url)).status, 200);
    assert.ok(p.stderr.some((l) => /listening on http:\/\/127\.0\.0\.1:\d+\//.test(l)));
  }
  {
    await using p = await startServiceProcess(
      { ...ENV, KVID_HOST: "127.0.0.1", KVID_PORT: "0" },
      [],
    );
    assert.ok(p.stderr.some((l) => /listening on http:\/\/127\.0\.0\.1:\d+\//.test(l)));
    assert.equal((await getId(p.url)).body, "1\n");
  }
  {
    // KVID_AUTH=none without a host: loopback.
    await using p = await startServiceProcess(
      { KVID_AUTH: "none", KVID_TOKENS: "", KVID_KV_PATH: ":memory:", KVID_PORT: "0" },
      [],
    );
    assert.ok(p.stderr.some((l) => /listening on http:\/\/127\.0\.0\.1:/.test(l)), p.stderr.join());
    assert.equal(await (await fetch(`${p.url}/healthz`)).text(), "ok\n");
  }
});

Deno.test("start-up mistakes: one line, exit code 78, no stack (both entry points)", async (t) => {
  const cases: [string, Record<string, string>, string[], RegExp][] = [
    ["no tokens", { KVID_TOKENS: "", KVID_AUTH: "" }, [], /KVID_TOKENS.*refusing to start/],
    ["a short token", { KVID_TOKENS: "short:*" }, [], /shorter than 16/],
    ["a bad port", {}, ["--port", "99999"], /--port/],
    [
      "open on the network",
      { KVID_AUTH: "none", KVID_TOKENS: "" },
      ["--host", "0.0.0.0"],
      /loopback only/,
    ],
  ];
  for (const [what, env, args, re] of cases) {
    await t.step(`deno task serve: ${what}`, async () => {
      const out = await new Deno.Command(Deno.execPath(), {
        args: [
          "run",
          "-A",
          "--unstable-kv",
          new URL("../../src/service/serve.ts", import.meta.url).pathname,
          ...args,
        ],
        env: { NO_COLOR: "1", ...ENV, ...env },
        stdout: "null",
        stderr: "piped",
      }).output();
      const lines = new TextDecoder().decode(out.stderr).trim().split("\n");
      assert.equal(out.code, 78, lines.join("\n"));
      assert.equal(lines.length, 1, lines.join("\n"));
      assert.match(lines[0], /^kvid service: /);
      assert.match(lines[0], re);
      assert.doesNotMatch(lines[0], /\bat |Uncaught|Error:/);
    });
  }
  await t.step("deno serve: no tokens", async () => {
    const out = await new Deno.Command(Deno.execPath(), {
      args: [
        "serve",
        "-A",
        "--unstable-kv",
        "--host",
        "127.0.0.1",
        "--port",
        "0",
        new URL("../../src/service/mod.ts", import.meta.url).pathname,
      ],
      env: { NO_COLOR: "1", ...ENV, KVID_TOKENS: "" },
      stdout: "null",
      stderr: "piped",
    }).output();
    const text = new TextDecoder().decode(out.stderr).trim();
    assert.equal(out.code, 78, text);
    assert.equal(text.split("\n").length, 1, text);
    assert.match(text, /^kvid service: no tokens/);
  });
  await t.step("deno serve: KVID_AUTH=none on 0.0.0.0 is refused", async () => {
    const out = await new Deno.Command(Deno.execPath(), {
      // No --host: deno serve's default, 0.0.0.0.
      args: [
        "serve",
        "-A",
        "--unstable-kv",
        "--port",
        "0",
        new URL("../../src/service/mod.ts", import.meta.url).pathname,
      ],
      env: { NO_COLOR: "1", ...ENV, KVID_TOKENS: "", KVID_AUTH: "none" },
      stdout: "null",
      stderr: "piped",
    }).output();
    const text = new TextDecoder().decode(out.stderr).trim();
    assert.equal(out.code, 78, text);
    assert.match(text, /loopback only/);
    // Refused before binding (the command line says where it would listen), not after.
    assert.doesNotMatch(text, /listening/);
  });
});

Deno.test("attack: out of file descriptors (ulimit 256), the service lives and serves", async () => {
  await using p = await startServiceProcess(ENV, undefined, 256);
  const port = Number(new URL(p.url).port);
  // More idle connections than descriptors: accept fails with EMFILE (Deno.serve exits here).
  const idle = await openConnections(port, 400);
  try {
    assert.ok(idle.length >= 256, `only ${idle.length} connections`);
    // Served during the flood: the oldest idle connections are shed to make room.
    const during = await getId(p.url);
    assert.equal(during.status, 200);
    assert.match(during.body, /^\d+\n$/);
  } finally {
    closeAll(idle);
  }
  const after = await getId(p.url);
  assert.equal(after.status, 200);
  const metrics = await (await fetch(`${p.url}/metrics`, {
    headers: { authorization: `Bearer ${TOKEN}` },
  })).text();
  assert.match(metrics, /^process_max_fds 256$/m);
  assert.match(metrics, /^kvid_http_connections_closed_total\{reason="over_cap"\} [1-9]/m);
  const exited = await Promise.race([p.status, Promise.resolve(undefined)]);
  assert.equal(exited, undefined, "the service exited");
});

Deno.test("attack: slowloris and idle connections are closed after the limits", async () => {
  await using p = await startServiceProcess(ENV, [
    "--host",
    "127.0.0.1",
    "--port",
    "0",
    "--headers-timeout",
    "500",
    "--idle-timeout",
    "500",
  ]);
  const port = Number(new URL(p.url).port);
  const slow = await openConnections(port, 100, "POST /v1/ids/order HTTP/1.1\r\nHost: x\r\nX-a");
  const silent = await openConnections(port, 100);
  try {
    // A valid client meanwhile is served.
    assert.equal((await getId(p.url)).status, 200);
    // Every one is closed by the server well within 10 s of a 0.5 s limit.
    const closed = await Promise.all([...slow, ...silent].map((c) => closedWithin(c, 10_000)));
    assert.equal(closed.filter((x) => !x).length, 0);
    // A kept-alive connection that answered a request is closed once idle.
    const [kept] = await openConnections(port, 1);
    await kept.write(new TextEncoder().encode(
      `POST /v1/ids/order HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${TOKEN}\r\n\r\n`,
    ));
    const buf = new Uint8Array(4096);
    const n = await kept.read(buf);
    assert.match(new TextDecoder().decode(buf.subarray(0, n ?? 0)), /^HTTP\/1\.1 200 /);
    assert.ok(await closedWithin(kept, 10_000), "an idle keep-alive connection stayed open");
    kept.close();
  } finally {
    closeAll([...slow, ...silent]);
  }
  const metrics = await (await fetch(`${p.url}/metrics`, {
    headers: { authorization: `Bearer ${TOKEN}` },
  })).text();
  const closedBy = (reason: string) =>
    Number(
      new RegExp(`^kvid_http_connections_closed_total\\{reason="${reason}"\\} (\\d+)$`, "m")
        .exec(metrics)?.[1],
    );
  assert.ok(closedBy("headers_timeout") >= 200, metrics);
  assert.ok(closedBy("idle_timeout") >= 1, metrics);
  assert.equal((await getId(p.url)).status, 200);
});

Deno.test("listener: keep-alive, pipelining, chunked bodies, HEAD, limits", async (t) => {
  using store = new DenoKvStore(":memory:");
  await using s = serveService({ store, tokens: `${TOKEN}:*` }, "listener");
  const port = Number(new URL(s.url).port);
  const exchange = async (bytes: string, until: RegExp): Promise<string> => {
    using c = await Deno.connect({ hostname: "127.0.0.1", port });
    await c.write(new TextEncoder().encode(bytes));
    let reply = "";
    const buf = new Uint8Array(65_536);
    const deadline = performance.now() + 10_000;
    while (!until.test(reply) && performance.now() < deadline) {
      const n = await c.read(buf);
      if (n === null) break;
      reply += new TextDecoder().decode(buf.subarray(0, n));
    }
    return reply;
  };
  const auth = `Authorization: Bearer ${TOKEN}\r\n`;
  await t.step("two pipelined requests on one connection, answered in order", async () => {
    const req = `POST /v1/ids/pipe HTTP/1.1\r\nHost: x\r\n${auth}\r\n`;
    const reply = await exchange(req + req, /\r\n\r\n1\n[^]*\r\n\r\n2\n/);
    assert.match(
      reply,
      /^HTTP\/1\.1 200 OK\r\n[^]*\r\n\r\n1\nHTTP\/1\.1 200 OK\r\n[^]*\r\n\r\n2\n$/,
    );
  });
  await t.step("a chunked sign-in form; an oversized one is 413", async () => {
    const body = `token=${TOKEN}`;
    const chunked = `${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`;
    const reply = await exchange(
      `POST /login HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n${chunked}`,
      /\r\n\r\n/,
    );
    assert.match(reply, /^HTTP\/1\.1 303 /);
    assert.match(reply, /set-cookie: kvid_session=/);
    const big = "a".repeat(5000);
    const tooBig = await exchange(
      `POST /login HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n${
        big.length.toString(16)
      }\r\n${big}\r\n0\r\n\r\n`,
      /\r\n\r\n.*\n/,
    );
    assert.match(tooBig, /^HTTP\/1\.1 413 /);
  });
  await t.step("HEAD has headers only; 414, 431, 413, 400 for bad requests", async () => {
    const head = await exchange(
      "HEAD /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
      /\r\n\r\n/,
    );
    assert.match(head, /^HTTP\/1\.1 200 [^]*content-length: 3\r\n[^]*\r\n\r\n$/);
    assert.match(
      await exchange(`GET /${"a".repeat(40_000)} HTTP/1.1\r\n\r\n`, /\r\n\r\n/),
      /^HTTP\/1\.1 414 /,
    );
    assert.match(
      await exchange(`GET / HTTP/1.1\r\nX: ${"a".repeat(40_000)}\r\n\r\n`, /\r\n\r\n/),
      /^HTTP\/1\.1 431 /,
    );
    assert.match(
      await exchange(
        `POST /v1/ids/x HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999\r\n\r\n`,
        /\r\n\r\n/,
      ),
      /^HTTP\/1\.1 413 /,
    );
    assert.match(await exchange("NOT A REQUEST\r\n\r\n", /\r\n\r\n/), /^HTTP\/1\.1 400 /);
    assert.match(
      await exchange("GET / HTTP/1.1\r\nbad header\r\n\r\n", /\r\n\r\n/),
      /^HTTP\/1\.1 400 /,
    );
  });
  await t.step(
    "a body announced and not sent: the ID is answered, the connection closed",
    async () => {
      const reply = await exchange(
        `POST /v1/ids/order HTTP/1.1\r\nHost: x\r\n${auth}Content-Length: 1000\r\n\r\nabc`,
        /\r\n\r\n\d+\n/,
      );
      assert.match(reply, /^HTTP\/1\.1 200 [^]*connection: close/);
    },
  );
  await t.step("HTTP/1.0 closes after the answer", async () => {
    const reply = await exchange(`GET /healthz HTTP/1.0\r\n\r\n`, /ok\n/);
    assert.match(reply, /^HTTP\/1\.1 200 [^]*connection: close\r\n\r\nok\n$/);
  });
});

Deno.test("listener: the same service contract as behind Deno.serve (sizes, names, JSON)", async () => {
  using store = new DenoKvStore(":memory:");
  await using s = serveService({ store, tokens: `${TOKEN}:*` }, "listener");
  const res = await fetch(`${s.url}/v1/ids/big?count=10000`, {
    method: "POST",
    headers: { authorization: `Bearer ${TOKEN}`, accept: "application/json" },
  });
  const json = await res.json();
  assert.equal(json.ids.length, 10_000);
  assert.equal(json.ids[9_999], "10000");
  const tooLong = await fetch(`${s.url}/v1/ids/${"n".repeat(20_000)}`, {
    headers: { authorization: `Bearer ${TOKEN}` },
  });
  assert.equal(tooLong.status, 414);
  await tooLong.body?.cancel();
  const l = listen({
    hostname: "127.0.0.1",
    port: 0,
    handler: () => new Response("x"),
    onListen() {},
  });
  assert.ok(l.limits.maxConnections >= 1);
  await l.shutdown();
  // startProcess is the harness the attack tests use; a missing program is an error, not a hang.
  await assert.rejects(startProcess("/nonexistent/program", [], {}));
});

Deno.test("deno task serve: SIGTERM answers the request in flight, then exits 0", async () => {
  const { startServer } = await import("../support/redis_server.ts");
  const { startProxy } = await import("../support/proxy.ts");
  await using server = await startServer();
  await using proxy = await startProxy(server);
  await using p = await startServiceProcess({
    ...ENV,
    KVID_REDIS_URL: proxy.url,
    KVID_TIMEOUT_MS: "60000",
  });
  assert.equal((await getId(p.url)).status, 200); // connected
  proxy.pause();
  const inFlight = fetch(`${p.url}/v1/ids/other`, {
    method: "POST",
    headers: { authorization: `Bearer ${TOKEN}` },
    signal: AbortSignal.timeout(30_000),
  });
  for (;;) {
    const m = await (await fetch(`${p.url}/metrics`, {
      headers: { authorization: `Bearer ${TOKEN}` },
    })).text();
    if (/^kvid_http_requests_in_flight [2-9]/m.test(m)) break;
  }
  p.child.kill("SIGTERM");
  await p.waitForLine(/stopping/);
  proxy.resume();
  const a = await inFlight;
  assert.equal(a.status, 200);
  assert.match(await a.text(), /^\d+\n$/);
  assert.equal((await p.status).code, 0, p.stderr.join("\n"));
  assert.ok(p.stderr.some((l) => /stopped/.test(l)));
});

Deno.test("listener: a body trickling in is cut off at the body limit, in all", async () => {
  using store = new DenoKvStore(":memory:");
  const { createHandler } = await import("../../src/service/mod.ts");
  await using service = createHandler({ store, tokens: `${TOKEN}:*`, log: () => {} });
  const l = listen({
    hostname: "127.0.0.1",
    port: 0,
    handler: service.fetch,
    ioTimeoutMs: 500,
    onListen() {},
  });
  try {
    using c = await Deno.connect({ hostname: "127.0.0.1", port: l.addr.port });
    await c.write(new TextEncoder().encode(
      "POST /login HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n",
    ));
    // One byte every 50 ms: each read progresses, yet the whole body is due within 0.5 s.
    const t0 = performance.now();
    let cut = false;
    for (let i = 0; i < 200 && !cut; i++) {
      try {
        await c.write(new Uint8Array([0x61]));
      } catch {
        cut = true;
      }
      await new Promise((r) => setTimeout(r, 50));
      if (l.stats().closed.ioTimeout > 0) cut = true;
    }
    assert.ok(cut, "a trickling body kept the connection");
    assert.ok(performance.now() - t0 < 8_000);
  } finally {
    await l.shutdown();
  }
});
