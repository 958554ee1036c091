/**
 * The store's own losses (issue 21), each staged for real on a redis-server the test starts:
 * snapshots without AOF and a `kill -9`, `allkeys-lru` eviction by cache writes, a TTL on the
 * hash, names that collide with the library's fields, and the independent floor. The default
 * (`durability: "strict"`) refuses or serves with 0 IDs re-issued; `"best-effort"`, chosen
 * explicitly, shows what is lost.
 */

import "../../support/deadline.ts"; // a time limit on every test of this file
import assert from "node:assert/strict";
import { DailyId, type ExpiryDetail, KvId, KvIdError, type RedisClient } from "../../../mod.ts";
import { RedisStore } from "../../../src/stores/redis/redis_store.ts";
import { type ClientKind, CLIENTS, openClient } from "../../support/redis_clients.ts";
import {
  command,
  redisOnly,
  startNoScriptingServer,
  startServer,
  type TestServer,
} from "../../support/redis_server.ts";
import { rejectsWith } from "../../support/assert.ts";
import { serveService } from "../../support/service.ts";
import { DenoKvStore } from "../../../src/stores/deno_kv/deno_kv_store.ts";
import { main as cliMain } from "../../../src/cli/mod.ts";

const CLI = new URL("../../../src/cli/mod.ts", import.meta.url).pathname;

/** Run the CLI in a process of its own: its exit code and output. */
async function kvid(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--quiet", CLI, ...args],
    env: { KVID_REDIS_URL: "" },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder();
  return { code: out.code, stdout: text.decode(out.stdout), stderr: text.decode(out.stderr) };
}

/** `n` IDs of `id`, one call each. */
async function take(id: KvId<number>, n: number): Promise<number[]> {
  const ids: number[] = [];
  for (let i = 0; i < n; i++) ids.push(await id.next());
  return ids;
}

/** How many of `ids` are in `issued`. */
function reissued(issued: Set<number>, ids: number[]): number {
  let n = 0;
  for (const x of ids) if (issued.has(x)) n++;
  return n;
}

/** Wait for a BGSAVE to finish (INFO persistence), bounded. */
async function snapshot(server: TestServer): Promise<void> {
  await command(server.url, "SAVE");
}

/** Fill memory with cache entries until the hash `kvid` is evicted (bounded). */
async function evictByCacheWrites(server: TestServer): Promise<number> {
  const value = "x".repeat(10_000);
  for (let i = 0; i < 5_000; i++) {
    await command(server.url, "SET", `cache:${i}`, value);
    if (i % 10 === 9 && await command(server.url, "EXISTS", "kvid") === 0) return i + 1;
  }
  return assert.fail("the hash was never evicted");
}

for (const kind of CLIENTS) {
  Deno.test({
    ...redisOnly(
      `durability: snapshots only (Debian's save) + kill -9 (${kind})`,
      "no AOF or save; tests/stores/redis/kvrocks_test.ts stages disable_wal yes",
    ),
    timeout: 60_000,
    fn: async (t) => {
      await using server = await startServer({ persistence: "snapshots" });
      await command(server.url, "CONFIG", "SET", "save", "3600 1 300 100 60 10000");
      await using client = await openClient(kind, server.url);
      const redis = client.redis;
      const fixed = { redis, minStep: 1_000, maxStep: 1_000, prefetchAt: 0 };

      await t.step("strict (the default) refuses, naming appendonly", async () => {
        await using id = new KvId("order", fixed);
        const err = await rejectsWith(id.next(), "config", /appendonly yes/);
        assert.match(err.message, /save "3600 1 300 100 60 10000"/);
        assert.match(err.message, /best-effort/);
        const s = id.stats();
        assert.equal(s.durability.durable, false);
        assert.equal(s.durability.settings.appendonly, "no");
        assert.equal(s.segments, 0);
        assert.equal(await command(server.url, "HGET", "kvid", "order"), null, "nothing reserved");
      });

      await t.step("best-effort: a fresh generator after the crash re-issues", async () => {
        const issued = new Set<number>();
        const live = new KvId("order", { ...fixed, durability: "best-effort" });
        for (const x of await take(live, 5_000)) issued.add(x);
        await snapshot(server);
        for (const x of await take(live, 5_000)) issued.add(x);
        await server.kill();
        await server.restart(); // from the dump: the counter is back at 5,000
        assert.equal(await command(server.url, "HGET", "kvid", "order"), "5000");
        await using fresh = new KvId("order", { ...fixed, durability: "best-effort" });
        const again = await take(fresh, 5_000);
        // The 5,000 IDs handed out after the snapshot are handed out again.
        assert.equal(reissued(issued, again), 5_000);
        // The generator alive across the crash stays above its own mark (guard): none of its
        // own again. (The fresh one took the counter back up to that mark first: no rollback
        // is seen; had the live one reserved first, it would have raised the counter and the
        // fresh one would have re-issued none: who reserves first decides.)
        const after = await take(live, 1_000);
        assert.equal(reissued(issued, after), 0);
        await live.close();
      });
    },
  });
}

Deno.test({
  name: "durability: AOF on serves, with the settings read and one probe round trip",
  timeout: 30_000,
  fn: async () => {
    await using server = await startServer(); // appendonly yes, appendfsync everysec
    await using client = await openClient("node-redis", server.url);
    await using id = new KvId("order", { redis: client.redis });
    assert.equal(await id.next(), 1);
    const d = id.stats().durability;
    assert.equal(d.mode, "strict");
    assert.equal(d.durable, true);
    assert.deepEqual(d.problems, []);
    if (server.kind === "kvrocks") {
      assert.equal(d.settings["rocksdb.write_options.disable_wal"], "no");
      assert.equal(d.settings["rocksdb.write_options.sync"], "no");
      assert.match(d.settings.server, /^kvrocks \d/);
      return;
    }
    assert.equal(d.settings.appendonly, "yes");
    assert.equal(d.settings.appendfsync, "everysec");
    assert.equal(d.settings.maxmemory_policy, "noeviction");
    assert.match(d.settings.server, /^(redis|valkey) \d/);
  },
});

Deno.test({
  ...redisOnly(
    "durability: a managed server that forbids CONFIG or INFO",
    "Redis' appendfsync and INFO persistence; the namespace test of tests/stores/redis/kvrocks_test.ts has CONFIG refused",
  ),
  timeout: 30_000,
  fn: async (t) => {
    await t.step("no CONFIG: served, appendfsync assumed and said", async () => {
      await using server = await startServer({ disable: ["CONFIG"] });
      await using client = await openClient("ioredis", server.url);
      await using id = new KvId("order", { redis: client.redis });
      assert.equal(await id.next(), 1);
      assert.match(id.stats().durability.settings.appendfsync, /everysec \(assumed/);
    });
    await t.step("no INFO: refused unless the user states the AOF", async () => {
      await using server = await startServer();
      // A managed server's user: everything but INFO and CONFIG (NOPERM).
      await command(server.url, "ACL", "SETUSER", "app", "on", ">app-password", "~*", "+@all");
      await command(server.url, "ACL", "SETUSER", "app", "-info", "-config");
      const url = server.url.replace("redis://", "redis://app:app-password@");
      await using client = await openClient("node-redis", url, { readyCheck: false });
      await using refused = new KvId("order", { redis: client.redis });
      await rejectsWith(refused.next(), "config", /serverSettings: \{ appendonly: "yes" \}/);
      await using stated = new KvId("order", {
        redis: client.redis,
        serverSettings: { appendonly: "yes" },
      });
      assert.equal(await stated.next(), 1);
      assert.equal(stated.stats().durability.settings.stated, "appendonly");
    });
  },
});

Deno.test({
  ...redisOnly(
    "durability: replicas confirming each reservation cover a server without AOF",
    "no WAIT",
  ),
  timeout: 30_000,
  fn: async () => {
    await using server = await startServer({ persistence: "snapshots" });
    await using client = await openClient("node-redis", server.url);
    // The replicas a reservation waits for are the store's (or a generator's) own option.
    const ask = (replicas: number) =>
      new RedisStore(client.redis, { replicas }).durability("kvid", {
        field: "order",
        mode: "strict",
        stated: {},
        judge: () => undefined,
      });
    assert.equal((await ask(0)).durable, false);
    const covered = await ask(1);
    assert.equal(covered.durable, true);
    assert.equal(covered.settings.appendonly, "no");
  },
});

Deno.test({
  ...redisOnly(
    "durability: allkeys-lru with cache writes evicting the hash is refused in both modes",
    "no maxmemory-policy, Kvrocks does not evict",
  ),
  timeout: 60_000,
  fn: async (t) => {
    await using server = await startServer({ persistence: "aof" }); // appendfsync always
    await command(server.url, "CONFIG", "SET", "maxmemory", "4mb");
    await command(server.url, "CONFIG", "SET", "maxmemory-policy", "allkeys-lru");
    await using client = await openClient("node-redis", server.url);

    await t.step("what is at stake: the hash is evicted, the counter restarts at 1", async () => {
      await command(server.url, "HINCRBY", "kvid", "order", "20000"); // 20,000 IDs handed out
      const writes = await evictByCacheWrites(server);
      assert.ok(writes > 0);
      assert.equal(await command(server.url, "HGET", "kvid", "order"), null);
      await command(server.url, "FLUSHALL");
    });
    for (const durability of ["strict", "best-effort"] as const) {
      await t.step(`${durability}: refused, naming noeviction`, async () => {
        await using id = new KvId("order", { redis: client.redis, durability });
        await rejectsWith(id.next(), "config", /maxmemory-policy noeviction/);
        assert.equal(id.stats().durability.settings.maxmemory_policy, "allkeys-lru");
      });
    }
    await t.step("noeviction again: served", async () => {
      await command(server.url, "CONFIG", "SET", "maxmemory-policy", "noeviction");
      await using id = new KvId("order", { redis: client.redis });
      assert.equal(await id.next(), 1);
    });
  },
});

Deno.test({
  ...redisOnly(
    "durability: a policy switched to allkeys-lru under a live generator is refused after",
    "no maxmemory-policy, Kvrocks does not evict",
  ),
  timeout: 60_000,
  fn: async () => {
    await using server = await startServer();
    await using client = await openClient("ioredis", server.url);
    await using id = new KvId("order", { redis: client.redis, minStep: 10, maxStep: 10 });
    const before = await take(id, 25);
    await command(server.url, "CONFIG", "SET", "maxmemory", "4mb");
    await command(server.url, "CONFIG", "SET", "maxmemory-policy", "allkeys-lru");
    await evictByCacheWrites(server);
    // The next reservation finds the counter gone (raised by the guard: a rollback), which
    // makes the generator read the server again: the one after is refused.
    const seen: number[] = [];
    const err = await (async () => {
      try {
        for (let i = 0; i < 100; i++) seen.push(await id.next());
      } catch (e) {
        return e;
      }
    })();
    assert.ok(err instanceof KvIdError && err.code === "config", String(err));
    assert.match(err.message, /noeviction/);
    assert.equal(id.stats().rollbacks, 1);
    assert.ok(seen.every((x) => x > before.at(-1)!), "nothing at or below the mark");
  },
});

async function ttlCase(
  kind: ClientKind,
  server: TestServer,
  options: { guard?: boolean } = {},
): Promise<void> {
  await using client = await openClient(kind, server.url);
  const fixed = { redis: client.redis, minStep: 20, maxStep: 20, prefetchAt: 0, ...options };
  await using id = new KvId("order", fixed);
  const expiries: ExpiryDetail[] = [];
  id.addEventListener("expiry", (e) => expiries.push(e.detail));
  const issued = new Set(await take(id, 100));
  await command(server.url, "PEXPIRE", "kvid", "3000"); // a maintenance script
  for (const x of await take(id, 1_000)) issued.add(x); // 50 reservations while it is set
  // The first reservation after it removed it: the hash never expires.
  assert.equal(await command(server.url, "PTTL", "kvid"), -1);
  assert.equal(expiries.length, 1);
  assert.equal(id.stats().ttlRemovals, 1);
  assert.ok(expiries[0].ttlMs === -1 || (expiries[0].ttlMs > 0 && expiries[0].ttlMs <= 3000));
  await using fresh = new KvId("order", fixed);
  assert.equal(reissued(issued, await take(fresh, 1_000)), 0);
}

for (const kind of CLIENTS) {
  Deno.test({
    name: `durability: PEXPIRE kvid 3000 during reservations: removed, 0 re-issued (${kind})`,
    timeout: 60_000,
    fn: async (t) => {
      await using server = await startServer();
      await t.step("the guard script removes it atomically", () => ttlCase(kind, server));
      await command(server.url, "DEL", "kvid");
      await t.step(
        "guard: false: PERSIST sent with the increment",
        () => ttlCase(kind, server, { guard: false }),
      );
    },
  });
}

Deno.test({
  name: "durability: a TTL on a server without scripting is removed too",
  timeout: 60_000,
  fn: async (t) => {
    const server = await startNoScriptingServer();
    if (server === undefined) {
      t.step({ name: "no server without scripting here", ignore: true, fn: () => {} });
      return;
    }
    await using _ = server;
    await ttlCase("node-redis", server);
  },
});

Deno.test({
  name: "durability: what no setting covers: the hash expired (or deleted) between reservations",
  timeout: 60_000,
  fn: async (t) => {
    await using server = await startServer();
    await using client = await openClient("node-redis", server.url);
    const fixed = { redis: client.redis, minStep: 1_000, maxStep: 1_000, prefetchAt: 0 };
    const issued = new Set<number>();
    {
      await using id = new KvId("order", fixed);
      for (const x of await take(id, 3_000)) issued.add(x);
    }
    const maxIssued = 3_000;
    // No generator lives: a TTL that runs out, a FLUSHALL or an empty replacement server.
    await command(server.url, "DEL", "kvid");

    await t.step("without a floor: a fresh generator re-issues", async () => {
      await using id = new KvId("order", { ...fixed, giveBack: false });
      assert.equal(reissued(issued, await take(id, 1_000)), 1_000);
      await command(server.url, "DEL", "kvid");
    });
    await t.step("with a floor: 0 re-issued, and a rollback event", async () => {
      let asked = 0;
      await using id = new KvId("order", {
        ...fixed,
        floor: () => {
          asked++;
          return Promise.resolve(BigInt(maxIssued)); // SELECT max(id) FROM orders
        },
      });
      const rollbacks: unknown[] = [];
      id.addEventListener("rollback", (e) => rollbacks.push(e.detail));
      const ids = await take(id, 3_000);
      assert.equal(reissued(issued, ids), 0);
      assert.equal(ids[0], maxIssued + 1);
      assert.equal(asked, 1, "consulted once: on the first reservation");
      assert.equal(rollbacks.length, 1);
    });
    await t.step("a floor that fails is retried; one that lies is a config error", async () => {
      await using failing = new KvId("order", {
        ...fixed,
        timeout: 300,
        failFast: false,
        floor: () => Promise.reject(new Error("database down")),
      });
      const err = await rejectsWith(failing.next(), "timeout");
      assert.match(String((err.cause as Error)?.message), /floor option failed/);
      await using lying = new KvId("order", { ...fixed, floor: () => -1 });
      await rejectsWith(lying.next(), "config", /floor option returned/);
      assert.throws(() => new KvId("x", { ...fixed, guard: false, floor: () => 0 }), TypeError);
    });
  },
});

Deno.test({
  name: "durability: names beginning with NUL are refused (internal fields)",
  fn: () => {
    for (const name of ["\0step:inv", "\0layout:order", "\0"]) {
      assert.throws(() => new KvId(name), /must not begin with a NUL byte/);
      assert.throws(() => new DailyId(name), /must not begin with a NUL byte/);
    }
    // NUL inside a name is a control character: refused too (issue 33, docs/security.md).
    assert.throws(() => new KvId("a\0b"), /must not hold a control character \(U\+0000 at index 1/);
  },
});

Deno.test({
  ...redisOnly(
    "durability: AOF turned off at run time is seen after a transient failure",
    "its WAL is set in its config file only",
  ),
  timeout: 60_000,
  fn: async () => {
    await using server = await startServer();
    await using client = await openClient("node-redis", server.url);
    await using id = new KvId("order", {
      redis: client.redis,
      minStep: 10,
      maxStep: 10,
      prefetchAt: 0,
      timeout: 300,
      failFast: false,
    });
    for (let i = 0; i < 10; i++) await id.next(); // one range, read as durable
    await command(server.url, "CONFIG", "SET", "appendonly", "no");
    // Writes held longer than the timeout: the reservation fails as a timeout (transient), so
    // the next one reads the server again, beside it.
    await command(server.url, "CLIENT", "PAUSE", "1000", "WRITE");
    await rejectsWith(id.next(), "timeout");
    const refused = await (async () => {
      for (let i = 0; i < 50; i++) {
        try {
          await id.next();
        } catch (err) {
          if (err instanceof KvIdError && err.code === "config") return err;
        }
      }
    })();
    assert.ok(refused !== undefined, "refused once the server said it keeps no AOF");
    assert.match(refused.message, /appendonly yes/);
    assert.equal(id.stats().durability.settings.appendonly, "no");
  },
});

Deno.test({
  name: "durability: interleaved servers: every member is read, one without AOF refuses",
  timeout: 60_000,
  fn: async () => {
    await using a = await startServer();
    await using b = await startServer({ persistence: "snapshots" });
    await using ca = await openClient("node-redis", a.url);
    await using cb = await openClient("node-redis", b.url);
    await using id = new KvId("order", { redis: [ca.redis, cb.redis], block: 10 });
    const lossy1 = /server 1: (AOF is off|the write-ahead log is off)/;
    const err = await rejectsWith(id.next(), "config", lossy1);
    assert.doesNotMatch(err.message, /server 0/);
    const setting = a.kind === "kvrocks" ? "rocksdb.write_options.disable_wal" : "appendonly";
    const [on, off] = a.kind === "kvrocks" ? ["no", "yes"] : ["yes", "no"];
    assert.equal(id.stats().durability.settings[`0.${setting}`], on);
    assert.equal(id.stats().durability.settings[`1.${setting}`], off);
    await using lossy = new KvId("order", {
      redis: [ca.redis, cb.redis],
      block: 10,
      durability: "best-effort",
    });
    assert.ok(await lossy.next() >= 1);
  },
});

Deno.test({
  name: "durability: the service (400 for NUL names, /readyz, /metrics, status) and the CLI",
  timeout: 60_000,
  fn: async (t) => {
    await using server = await startServer({ persistence: "snapshots" });
    await using client = await openClient("node-redis", server.url);
    const auth = { authorization: "Bearer admin-secret-0123456789" };
    const tokens = "admin-secret-0123456789:*";
    // What the server says it loses, and its fix: Redis' AOF, Kvrocks' write-ahead log.
    const kvrocks = server.kind === "kvrocks";
    const fix = kvrocks ? /disable_wal no/ : /appendonly yes/;
    const lost = kvrocks ? "the write-ahead log is off" : "AOF is off";
    await t.step("strict: /readyz 503 naming the fix, IDs refused", async () => {
      await using svc = serveService({ redis: client.redis, tokens });
      const ready = await fetch(`${svc.url}/readyz`);
      assert.equal(ready.status, 503);
      assert.match(await ready.text(), fix);
      const ids = await fetch(`${svc.url}/v1/ids/order`, { method: "POST", headers: auth });
      assert.equal(ids.status, 503); // said in the answer and the log, with the service's knob
      const said = await ids.text();
      assert.match(said, fix);
      assert.match(said, /KVID_DURABILITY=best-effort/);
      assert.ok(svc.logged.some((l) => fix.test(l)), svc.logged.join("\n"));
      const metrics = await (await fetch(`${svc.url}/metrics`, { headers: auth })).text();
      assert.match(metrics, /kvid_store_durable\{kind="ids",name="order"\} 0/);
      const bad = await fetch(`${svc.url}/v1/ids/%00layout%3Aorder`, {
        method: "POST",
        headers: auth,
      });
      assert.equal(bad.status, 400);
      assert.match(await bad.text(), /NUL/);
    });
    await t.step("best-effort: ready, served, and the status page says what is lost", async () => {
      await using svc = serveService({ redis: client.redis, tokens, durability: "best-effort" });
      const ready = await fetch(`${svc.url}/readyz`);
      assert.equal(ready.status, 200);
      await ready.body?.cancel();
      const ids = await fetch(`${svc.url}/v1/ids/order`, { method: "POST", headers: auth });
      assert.equal(ids.status, 200);
      await ids.body?.cancel();
      const login = await fetch(`${svc.url}/login`, {
        method: "POST",
        headers: { origin: svc.url, "content-type": "application/x-www-form-urlencoded" },
        body: `token=${tokens.split(":")[0]}`,
        redirect: "manual",
      });
      const cookie = login.headers.get("set-cookie")?.split(";")[0] ?? "";
      await login.body?.cancel();
      const page = await (await fetch(`${svc.url}/`, { headers: { cookie } })).text();
      assert.ok(page.includes(`the store can lose IDs: ${lost}`), page);
    });
    await t.step(
      "the CLI: kvid durability exits 1 naming the fix; a NUL name exits 1",
      async () => {
        const run = await kvid(["durability", "--url", server.url]);
        assert.equal(run.code, 1, run.stderr);
        assert.match(
          run.stdout,
          kvrocks ? /rocksdb\.write_options\.disable_wal\tyes/ : /appendonly\tno/,
        );
        assert.ok(run.stdout.includes(`problem: ${lost}`), run.stdout);
        // An argument cannot hold NUL (the OS refuses it): main() is called as a caller would.
        assert.equal(await cliMain(["get", "\0layout:order", "--url", server.url]), 1);
        // Fixed (Kvrocks' WAL is read from its config file at start: a server with it on).
        if (!kvrocks) await command(server.url, "CONFIG", "SET", "appendonly", "yes");
        await using durableServer = kvrocks ? await startServer() : undefined;
        const fixedUrl = durableServer?.url ?? server.url;
        const durable = await kvid(["durability", "--url", fixedUrl, "--json"]);
        assert.equal(durable.code, 0, durable.stderr);
        assert.equal(JSON.parse(durable.stdout).durable, true);
      },
    );
  },
});

Deno.test({
  name: "durability: a custom store without durability() is trusted; Deno KV says durable",
  fn: async () => {
    let counter = 0n;
    const client: RedisClient = {
      hincrby: () => Promise.resolve(String(counter += 1n)),
      eval: () => Promise.reject(new Error("no")),
      evalsha: () => Promise.reject(new Error("no")),
    };
    assert.ok(client);
    const store = {
      reserve: (_k: string, _f: string, n: number) => {
        counter += BigInt(n);
        return Promise.resolve({
          ranges: [{ first: counter - BigInt(n) + 1n, last: counter }],
          raised: false,
        });
      },
    };
    await using id = new KvId("order", { store });
    assert.equal(await id.next(), 1);
    assert.equal(id.stats().durability.durable, undefined);
    using kv = new DenoKvStore(":memory:");
    await using onKv = new KvId("order", { store: kv });
    assert.equal(await onKv.next(), 1);
    assert.equal(onKv.stats().durability.durable, true);
  },
});
