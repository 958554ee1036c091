/**
 * Kvrocks' own settings and features, staged on a Kvrocks the test starts (issue 35). Run in the
 * Kvrocks pass (`KVID_TEST_SERVER=kvrocks`, `.ci/run`'s third pass); ignored by name elsewhere.
 *
 * - `rocksdb.write_options.disable_wal yes`: refused up front by default (the counter is never
 *   touched); with `durability: "best-effort"` chosen, a `kill -9` loses the counter and a
 *   fresh generator re-issues what was handed out (counted), while a clean restart keeps it.
 * - The write-ahead log on (the default, `sync no`): `kill -9` of the server with a generator
 *   alive across it and a fresh one after it: 0 IDs re-issued.
 * - `replicas: 1`: Kvrocks before 2.13 has no `WAIT`: a `config` error at the first
 *   reservation, 0 IDs served; a primary with a replica (`slaveof`) is refused by default, and
 *   only `"best-effort"` serves it.
 * - Namespaces: a namespace token as the client's password; two namespaces, the same counter
 *   name, separate counters.
 */

import "../../support/deadline.ts"; // a time limit on every test of this file
import assert from "node:assert/strict";
import { KvId, KvIdError } from "../../../mod.ts";
import { CLIENTS, openClient } from "../../support/redis_clients.ts";
import { command, KVROCKS_PASS, startServer } from "../../support/redis_server.ts";
import { duplicates, waitUntil } from "../../support/faults.ts";

/** A test of this file: run in the Kvrocks pass, else ignored, its name saying why. */
function onKvrocks(name: string): { name: string; ignore: boolean } {
  return KVROCKS_PASS ? { name: `kvrocks: ${name}`, ignore: false } : {
    name: `kvrocks: ${name} (ignored: runs in the Kvrocks pass, KVID_TEST_SERVER=kvrocks)`,
    ignore: true,
  };
}

const WAL = "rocksdb.write_options.disable_wal";

Deno.test({
  ...onKvrocks("disable_wal yes: refused up front; best-effort loses the counter to kill -9"),
  timeout: 120_000,
  fn: async (t) => {
    await using server = await startServer({ persistence: "snapshots" });
    assert.equal(server.kind, "kvrocks");
    assert.deepEqual(await command(server.url, "CONFIG", "GET", WAL), [WAL, "yes"]);
    const fixed = { minStep: 1_000, maxStep: 1_000, prefetchAt: 0 };

    await t.step("strict (the default) refuses before touching the counter", async () => {
      await using client = await openClient("node-redis", server.url);
      await using id = new KvId("order", { redis: client.redis, ...fixed });
      const err = await id.next().then(() => undefined, (e) => e);
      assert.ok(err instanceof KvIdError && err.code === "config", String(err));
      assert.match(err.message, /rocksdb\.write_options\.disable_wal yes/);
      assert.match(err.message, /kill -9/);
      assert.match(err.message, /best-effort/);
      const d = id.stats().durability!;
      assert.equal(d.durable, false);
      assert.equal(d.settings[WAL], "yes");
      assert.deepEqual(await command(server.url, "HGETALL", "kvid"), []);
    });

    await t.step("best-effort serves, says what it loses; a clean restart keeps it", async () => {
      await using client = await openClient("node-redis", server.url);
      const options = { redis: client.redis, durability: "best-effort" as const, ...fixed };
      {
        await using id = new KvId("clean", options);
        assert.equal(await id.next(), 1);
        assert.match(id.stats().durability!.problems.join(), /write-ahead log is off/);
      }
      const before = await command(server.url, "HGET", "kvid", "clean");
      assert.equal(before, "1"); // the close gave the rest of its range back
      await server.restart(); // SIGTERM: Kvrocks flushes its memtables on the way out
      assert.equal(await command(server.url, "HGET", "kvid", "clean"), before);
    });

    await t.step("best-effort, kill -9: a fresh generator re-issues every ID", async () => {
      const issued: number[] = [];
      {
        await using client = await openClient("node-redis", server.url);
        await using id = new KvId("order", {
          redis: client.redis,
          durability: "best-effort",
          ...fixed,
        });
        for (let i = 0; i < 5_000; i++) issued.push(await id.next());
      }
      await server.kill();
      await server.restart();
      await using client = await openClient("node-redis", server.url);
      await using fresh = new KvId("order", {
        redis: client.redis,
        durability: "best-effort",
        ...fixed,
      });
      const after: number[] = [];
      for (let i = 0; i < 5_000; i++) after.push(await fresh.next());
      const reissued = duplicates([Float64Array.from(issued), Float64Array.from(after)]);
      // The WAL is what keeps a write across a crash: without it, all 5,000 come again.
      assert.equal(reissued.length, 5_000, `re-issued ${reissued.length} of 5,000`);
    });
  },
});

Deno.test({
  ...onKvrocks("WAL on (sync no): kill -9 with a live and a fresh generator, 0 re-issued"),
  timeout: 120_000,
  fn: async () => {
    await using server = await startServer({ persistence: "everysec" });
    assert.deepEqual(await command(server.url, "CONFIG", "GET", WAL), [WAL, "no"]);
    assert.deepEqual(await command(server.url, "CONFIG", "GET", "rocksdb.write_options.sync"), [
      "rocksdb.write_options.sync",
      "no",
    ]);
    await using open = await openClient("node-redis", server.url);
    const live: number[] = [];
    // Small segments (many reservations); a timeout long enough to wait out the restart.
    await using id = new KvId("crash", {
      redis: open.redis,
      minStep: 50,
      maxStep: 50,
      timeout: 30_000,
    });
    const taking = (async () => {
      while (live.length < 20_000) live.push(await id.next());
    })();
    await waitUntil(() => live.length >= 5_000, "5,000 IDs before the crash");
    await server.kill();
    const atCrash = live.length;
    await server.restart();
    await taking;
    assert.ok(live.length === 20_000 && atCrash < 20_000, `crashed at ${atCrash}`);
    assert.equal(id.stats().durability?.durable, true);
    await using fresh = new KvId("crash", { redis: open.redis, minStep: 100, maxStep: 100 });
    const after = await fresh.nextBatch(10_000);
    const reissued = duplicates([Float64Array.from(live), Float64Array.from(after)]);
    assert.equal(reissued.length, 0, `re-issued: ${reissued.slice(0, 5)}`);
  },
});

for (const kind of CLIENTS) {
  Deno.test({
    ...onKvrocks(`replicas: 1 without WAIT: a config error at the first reservation (${kind})`),
    timeout: 60_000,
    fn: async () => {
      await using server = await startServer();
      const info = String(await command(server.url, "INFO", "server"));
      const m = /kvrocks_version:(\d+)\.(\d+)/.exec(info)!;
      // WAIT came in Kvrocks 2.13: on one that has it, this test has no subject.
      assert.ok(Number(m[1]) === 2 && Number(m[2]) < 13, `Kvrocks ${m[1]}.${m[2]} has WAIT`);
      await using client = await openClient(kind, server.url);
      await using id = new KvId("replicated", { redis: client.redis, replicas: 1 });
      for (let attempt = 0; attempt < 2; attempt++) {
        const err = await id.next().then(() => undefined, (e) => e);
        assert.ok(err instanceof KvIdError && err.code === "config", String(err));
        assert.match(err.message, /no WAIT command/);
        assert.match(err.message, /replicas option/);
      }
      const batch = await id.nextBatch(5).then(() => "served", (e) => (e as KvIdError).code);
      assert.equal(batch, "config");
      assert.equal(id.stats().remaining, 0);
      assert.equal(id.stats().lastError?.code, "config");
    },
  });
}

Deno.test({
  ...onKvrocks("namespaces: a token as the password, two namespaces, separate counters"),
  timeout: 60_000,
  fn: async (t) => {
    await using server = await startServer({
      password: "admin-secret",
      kvrocksConfig: ["namespace.alpha token-alpha", "namespace.beta token-beta"],
    });
    const as = (token: string) => `redis://:${token}@${server.host}:${server.port}`;

    await t.step("a token may not run CONFIG: strict refuses, naming what to state", async () => {
      await using client = await openClient("node-redis", as("token-alpha"));
      await using id = new KvId("order", { redis: client.redis });
      const err = await id.next().then(() => undefined, (e) => e);
      assert.ok(err instanceof KvIdError && err.code === "config", String(err));
      assert.match(err.message, /namespace token/);
      assert.match(
        err.message,
        /serverSettings: \{ "rocksdb\.write_options\.disable_wal": "no" \}/,
      );
      assert.equal(await command(as("token-alpha"), "HGETALL", "kvid").then(String), "");
    });

    await t.step("stated: each namespace counts on its own", async () => {
      const serverSettings = { [WAL]: "no" };
      await using a = await openClient("node-redis", as("token-alpha"));
      await using b = await openClient("ioredis", as("token-beta"));
      const fixed = { minStep: 10, maxStep: 10, prefetchAt: 0, serverSettings };
      await using inAlpha = new KvId("order", { redis: a.redis, ...fixed });
      await using inBeta = new KvId("order", { redis: b.redis, ...fixed });
      const alpha: number[] = [];
      const beta: number[] = [];
      for (let i = 0; i < 25; i++) alpha.push(await inAlpha.next());
      for (let i = 0; i < 12; i++) beta.push(await inBeta.next());
      assert.deepEqual(alpha, Array.from({ length: 25 }, (_, i) => i + 1));
      assert.deepEqual(beta, Array.from({ length: 12 }, (_, i) => i + 1));
      assert.equal(inAlpha.stats().durability?.settings.stated, WAL);
      assert.equal(await command(as("token-alpha"), "HGET", "kvid", "order"), "30");
      assert.equal(await command(as("token-beta"), "HGET", "kvid", "order"), "20");
      // The admin's own (default) namespace holds neither.
      assert.equal(await command(server.url, "HGET", "kvid", "order"), null);
    });
  },
});

Deno.test({
  ...onKvrocks("a primary with a replica (slaveof): refused, replicas: 1 has no WAIT"),
  timeout: 60_000,
  fn: async () => {
    await using primary = await startServer();
    await using replica = await startServer({
      kvrocksConfig: [`slaveof ${primary.host} ${primary.port}`],
    });
    await waitUntil(
      async () =>
        /connected_slaves:1/.test(String(await command(primary.url, "INFO", "replication"))),
      "the replica connected",
    );
    assert.match(String(await command(replica.url, "INFO", "replication")), /role:slave/);
    await using client = await openClient("node-redis", primary.url);
    // The default: a failover to the replica could miss the latest reservations.
    await using strict = new KvId("order", { redis: client.redis });
    const refused = await strict.next().then(() => undefined, (e) => e);
    assert.ok(refused instanceof KvIdError && refused.code === "config", String(refused));
    assert.match(refused.message, /the primary has 1 replica/);
    // Confirming on it needs WAIT, which this Kvrocks has not.
    await using confirmed = new KvId("order", { redis: client.redis, replicas: 1 });
    const noWait = await confirmed.next().then(() => undefined, (e) => e);
    assert.ok(noWait instanceof KvIdError && noWait.code === "config", String(noWait));
    assert.match(noWait.message, /no WAIT command/);
    // Accepted: served.
    await using lossy = new KvId("order", { redis: client.redis, durability: "best-effort" });
    assert.ok(await lossy.next() >= 1);
  },
});
