// A real-server smoke test of the bundled module (mod.ts as one ESM file) on Node or Bun.
//
// Usage: node smoke.mjs <bundle.mjs> <client>...   (clients: node-redis, bun)
// Run by .ci/runtimes from a directory where `redis` is installed from npm. Starts its own
// redis-server on a free loopback port unless KVID_SMOKE_URL names one.

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";

const [bundlePath, ...clients] = process.argv.slice(2);
if (!bundlePath || clients.length === 0) {
  console.error("usage: smoke.mjs <bundle.mjs> <node-redis|bun>...");
  process.exit(2);
}
const kvid = await import(pathToFileURL(resolve(bundlePath)).href);
const { KvId, KvIdError, fromNodeRedis, fromBunRedis } = kvid;
const runtime = process.versions.bun ? `Bun ${process.versions.bun}` : `Node ${process.version}`;
assert.equal(typeof globalThis.Deno, "undefined", "not on Deno");

/** A free loopback port (the OS picks one, then it is released for redis-server). */
function freePort() {
  return new Promise((ok, fail) => {
    const srv = createServer();
    srv.on("error", fail);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address();
      srv.close(() => ok(port));
    });
  });
}

/** Start redis-server and resolve once it logs that it accepts connections. */
async function startRedis(port, dir) {
  port ??= await freePort();
  dir ??= mkdtempSync(join(tmpdir(), "kvid-smoke-"));
  const child = spawn("redis-server", [
    "--port",
    String(port),
    "--bind",
    "127.0.0.1",
    "--save",
    "",
    "--appendonly",
    "yes",
    "--dir",
    dir,
  ], { stdio: ["ignore", "pipe", "inherit"] });
  await new Promise((ok, fail) => {
    let out = "";
    const timer = setTimeout(() => fail(new Error(`redis-server not ready: ${out}`)), 10_000);
    child.on("error", fail);
    child.on("exit", (code) => fail(new Error(`redis-server exited (${code}): ${out}`)));
    child.stdout.on("data", (chunk) => {
      out += chunk;
      if (/Ready to accept connections/.test(out)) {
        clearTimeout(timer);
        child.stdout.resume(); // keep draining its log
        ok();
      }
    });
  });
  const exited = new Promise((ok) => child.once("exit", ok));
  return {
    url: `redis://127.0.0.1:${port}`,
    /** SIGKILL the server; `start()` starts it again on the same port (empty). */
    async kill() {
      child.kill("SIGKILL");
      await exited;
    },
    async start() {
      const again = await startRedis(port, dir);
      Object.assign(this, { stop: again.stop, kill: again.kill, start: again.start });
    },
    async stop() {
      child.kill("SIGTERM");
      await exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Connect `kind` and return the adapted client, a raw command function and a close. */
async function open(kind, url) {
  if (kind === "node-redis") {
    const { createClient } = await import("redis");
    const client = await createClient({ url }).connect();
    return {
      redis: fromNodeRedis(client),
      command: (...args) => client.sendCommand(args),
      close: () => client.destroy(),
    };
  }
  if (kind === "bun") {
    assert.ok(process.versions.bun, "the bun client needs Bun");
    const { RedisClient } = await import("bun");
    const client = new RedisClient(url);
    await client.connect();
    return {
      redis: fromBunRedis(client),
      command: (cmd, ...args) => client.send(cmd, args),
      close: () => client.close(),
    };
  }
  throw new Error(`unknown client ${kind}`);
}

function assertIncreasing(ids, what) {
  for (let i = 1; i < ids.length; i++) {
    if (!(ids[i] > ids[i - 1])) assert.fail(`${what}: not increasing at ${i}`);
  }
}

async function smoke(kind, url, server = {}) {
  const c = await open(kind, url);
  try {
    const name = `smoke-${kind}-${Date.now()}`;
    const started = performance.now();
    const id = new KvId(name, { redis: c.redis });
    const ids = [];
    for (let i = 0; i < 10_000; i++) ids.push(await id.next());
    const ms = performance.now() - started;
    assert.equal(ids[0], 1, "a new name starts at 1");
    assertIncreasing(ids, "next()");
    assert.equal(new Set(ids).size, 10_000);
    const batch = await id.nextBatch(5_000);
    assertIncreasing([ids.at(-1), ...batch], "nextBatch()");
    const stats = id.stats();
    const stored = BigInt(String(await c.command("HGET", "kvid", name)));
    const high = BigInt(stats.high); // a decimal string in stats()
    // The counter holds what this generator reserved, plus a prefetch in flight if there is one.
    if (stats.reserving) {
      assert.ok(stored === high || stored === high + BigInt(stats.step));
    } else assert.equal(stored, high);

    // A second generator on the same counter never repeats an ID of the first.
    const other = new KvId(name, { redis: c.redis, minStep: 7, maxStep: 50 });
    const seen = new Set([...ids, ...batch]);
    for (let i = 0; i < 500; i++) {
      const a = await id.next();
      const b = await other.next();
      for (const x of [a, b]) {
        assert.ok(!seen.has(x), `${x} handed out twice`);
        seen.add(x);
      }
    }
    await other.close();
    await id.close();

    // bigint mode is exact above 2^53 whatever the client does with large integer replies.
    const big = `${name}-big`;
    await c.command("HSET", "kvid", big, "9007199254740990");
    const bigId = new KvId(big, { redis: c.redis, bigint: true, minStep: 4 });
    const bigs = [];
    for (let i = 0; i < 12; i++) bigs.push(await bigId.next());
    assert.deepEqual(bigs, Array.from({ length: 12 }, (_, i) => 9007199254740991n + BigInt(i)));
    await bigId.close();

    // A server refusal is a "reply" KvIdError, not a lost connection.
    const bad = `${name}-abc`;
    await c.command("HSET", "kvid", bad, "abc");
    const badId = new KvId(bad, { redis: c.redis });
    await assert.rejects(
      badId.next(),
      (err) => err instanceof KvIdError && err.code === "reply" && err.field === bad,
    );
    await badId.close();

    // The client as the README shows it (no error listener of ours) recovers after a restart.
    let recovered = "";
    if (server.kill) {
      const down = new KvId(`${name}-restart`, { redis: c.redis, prefetchAt: 0, timeout: 500 });
      await down.next();
      await server.kill();
      // The client sees the outage. Bun's client: until it has given up reconnecting (then it
      // fails every command until connect() is called, which the adapter does).
      await assert.rejects(down.next(), (err) => err instanceof KvIdError);
      for (const started = performance.now(); kind === "bun";) {
        const err = await c.command("PING").then(() => undefined, (e) => e);
        if (/Max reconnection attempts|Connection has failed/.test(String(err?.message))) break;
        assert.ok(performance.now() - started < 60_000, `bun never gave up: ${err}`);
        await new Promise((ok) => setTimeout(ok, 50)); // the client's state: poll
      }
      await server.start();
      const back = performance.now();
      for (let i = 0; !recovered; i++) {
        assert.ok(performance.now() - back < 60_000, `${kind}: no recovery after a restart`);
        try {
          await down.next();
          recovered = `, back ${(performance.now() - back).toFixed(0)} ms after a restart`;
        } catch (err) {
          assert.ok(err instanceof KvIdError, `not a KvIdError: ${err}`);
          await new Promise((ok) => setTimeout(ok, 20)); // the server coming back: poll
        }
      }
      await down.close();
    }

    console.log(
      `ok ${runtime} ${kind}: 10,000 IDs unique and increasing in ${ms.toFixed(0)} ms ` +
        `(${stats.segments} reservations), bigint exact above 2^53, refusals typed${recovered}`,
    );
  } finally {
    await c.close();
  }
}

const external = process.env.KVID_SMOKE_URL;
const server = external ? { url: external, stop: async () => {} } : await startRedis();
try {
  for (const kind of clients) await smoke(kind, server.url, external ? undefined : server);
} finally {
  await server.stop();
}
