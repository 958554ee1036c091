/**
 * The `replicas` option on a real primary and replica: a range is handed out only once WAIT saw
 * it on enough replicas; an unconfirmed range is spent; a server without WAIT is a `config`
 * error at the first reservation.
 */

import "../../support/deadline.ts"; // a time limit on every test of this file
import assert from "node:assert/strict";
import { DailyId, KvId, KvIdError, type RedisClient } from "../../../mod.ts";
import { CLIENTS, openClient } from "../../support/redis_clients.ts";
import { startProxy } from "../../support/proxy.ts";
import { info, startRedis, until } from "../../support/redis_replication.ts";
import { command, redisBinaryMissing } from "../../support/redis_server.ts";

const ignore = redisBinaryMissing();

/** A primary behind a proxy, and one replica replicating through that proxy. */
async function primaryAndReplica(dir: string) {
  const primary = await startRedis(dir);
  const proxy = await startProxy({ host: "127.0.0.1", port: primary.port });
  const replica = await startRedis(dir, [["replicaof", `127.0.0.1 ${proxy.port}`]]);
  await until("the replica online", async () => {
    const r = await info(primary.url, "replication");
    return r.get("connected_slaves") === "1" && /state=online/.test(r.get("slave0") ?? "");
  });
  return {
    primary,
    proxy,
    replica,
    async [Symbol.asyncDispose]() {
      await replica.kill();
      await proxy.close();
      await primary.kill();
    },
  };
}

Deno.test("replicas: option checked at construction", () => {
  for (const bad of [-1, 1.5, 1_001, NaN]) {
    assert.throws(() => new KvId("x", { replicas: bad }), /replicas must be/);
  }
  assert.throws(() => new KvId("x", { replicas: "1" as unknown as number }), TypeError);
});

Deno.test({ name: "replicas: on a primary with a replica", ignore }, async (t) => {
  const dir = await Deno.makeTempDir({ prefix: "kvid-replicas-" });
  try {
    await using setup = await primaryAndReplica(dir);
    const { primary, replica, proxy } = setup;

    for (const kind of CLIENTS) {
      await t.step(`${kind}: IDs only once the replica has the counter`, async () => {
        await using client = await openClient(kind, primary.url);
        await using id = new KvId(`${kind}:confirmed`, {
          redis: client.redis,
          replicas: 1,
          minStep: 10,
          maxStep: 10,
          prefetchAt: 0,
        });
        for (let n = 1; n <= 25; n++) {
          assert.equal(await id.next(), n);
          // WAIT returned: the replica already holds the range this ID came from.
          const onReplica = Number(await command(replica.url, "HGET", "kvid", `${kind}:confirmed`));
          assert.ok(onReplica >= n, `replica counter ${onReplica} below handed-out ${n}`);
        }
        assert.equal(id.stats().failures, 0);
      });
    }

    await t.step("independent servers: each server's blocks wait for its replicas", async () => {
      const lone = await startRedis(dir);
      try {
        await using a = await openClient("ioredis", primary.url);
        await using b = await openClient("ioredis", lone.url);
        // Server 0 has a replica, server 1 none: only server 0's blocks (0, 2, 4, ...) confirm.
        await using id = new KvId("interleaved", {
          redis: [a.redis, b.redis],
          block: 10,
          replicas: 1,
          minStep: 10,
          maxStep: 10,
          timeout: 2_000,
        });
        const ids = await id.nextBatch(50);
        assert.ok(ids.every((n) => Math.floor((n - 1) / 10) % 2 === 0), `${ids}`);
        // Server 1 was asked and did not confirm: its blocks were spent, not handed out.
        assert.ok(Number(await command(lone.url, "HGET", "kvid", "interleaved")) > 0);
      } finally {
        await lone.kill();
      }
    });

    await t.step("DailyId passes replicas on", async () => {
      await using client = await openClient("node-redis", primary.url);
      await using daily = new DailyId("invoice", {
        redis: client.redis,
        replicas: 2,
        timeout: 2_000,
      });
      const err = await daily.next().then(() => undefined, (e) => e);
      assert.ok(err instanceof KvIdError && err.code === "timeout", String(err));
      assert.match(String((err.cause as Error)?.message), /reached 1 of 2 replicas/);
    });

    await t.step("strict refuses fewer replicas than the primary lists", async () => {
      for (const kind of CLIENTS) {
        await using client = await openClient(kind, primary.url);
        await using refused = new KvId(`${kind}:fewer`, { redis: client.redis, timeout: 2_000 });
        const err = await refused.next().then(() => undefined, (e) => e);
        assert.ok(err instanceof KvIdError && err.code === "config", String(err));
        assert.match(err.message, /the primary has 1 replica and replicas: 0 .*set replicas: 1/);
        await using accepted = new KvId(`${kind}:fewer`, {
          redis: client.redis,
          durability: "best-effort",
        });
        assert.ok(await accepted.next() >= 1);
      }
    });

    await t.step("more replicas than there are: timeout naming the count seen", async () => {
      await using client = await openClient("ioredis", primary.url);
      await using id = new KvId("two", { redis: client.redis, replicas: 2, timeout: 2_000 });
      const err = await id.next().then(() => undefined, (e) => e);
      assert.ok(err instanceof KvIdError && err.code === "timeout", String(err));
      assert.match(String((err.cause as Error)?.message), /reached 1 of 2 replicas/);
      // The unconfirmed ranges were taken from the counter: spent, never handed out.
      assert.ok(Number(await command(primary.url, "HGET", "kvid", "two")) >= 1);
    });

    await t.step("the replica's link cut: no ID, the range is spent", async () => {
      await using client = await openClient("node-redis", primary.url);
      // No prefetch: a WAIT of its own would block the shared connection while `other` runs.
      await using id = new KvId("cut", {
        redis: client.redis,
        replicas: 1,
        timeout: 300,
        prefetchAt: 0,
      });
      assert.equal(await id.next(), 1);
      proxy.cutReplication();
      await using other = new KvId("cut", { redis: client.redis, replicas: 1, timeout: 2_000 });
      const err = await other.next().then(() => undefined, (e) => e);
      assert.ok(err instanceof KvIdError && err.code === "timeout", String(err));
      assert.match(String((err.cause as Error)?.message), /reached 0 of 1 replicas/);
      const onPrimary = Number(await command(primary.url, "HGET", "kvid", "cut"));
      assert.ok(onPrimary >= 2, "the primary counted the unconfirmed range");
      assert.equal(await command(replica.url, "HGET", "kvid", "cut"), "1");
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

/** A server's error reply, as the store tells one (by its class's name). */
class ReplyError extends Error {}

Deno.test("replicas: a WAIT answered on another connection confirms nothing", async () => {
  // A client that reconnects while WAIT is pending and sends it again on the new connection,
  // where it answers at once (node-redis' Sentinel client does): CLIENT INFO names another
  // connection behind the WAIT than before the reservation.
  let counter = 0;
  let connection = 1;
  const sent: string[] = [];
  const client: RedisClient = {
    hincrby: (_key, _field, n) => (sent.push("HINCRBY"), Promise.resolve(counter += n)),
    eval: () => Promise.reject(new ReplyError("ERR unknown command 'EVAL'")),
    evalsha: () => Promise.reject(new ReplyError("ERR unknown command 'EVALSHA'")),
    clientInfo:
      () => (sent.push("CLIENT INFO"),
        Promise.resolve(`id=${connection} addr=127.0.0.1:5${connection} laddr=127.0.0.1:6379`)),
    waitReplicas: () => {
      sent.push("WAIT");
      connection++; // the connection dropped; the client re-sent WAIT on a new one
      return Promise.resolve(1);
    },
  };
  const options = { redis: client, replicas: 1, durability: "best-effort" as const, guard: false };
  await using id = new KvId("resent", { ...options, timeout: 300, prefetchAt: 0 });
  const err = await id.next().then(() => undefined, (e) => e);
  assert.ok(err instanceof KvIdError, String(err));
  assert.match(String((err.cause as Error)?.message ?? err.message), /another connection/);
  assert.deepEqual(sent.slice(0, 4), ["CLIENT INFO", "HINCRBY", "WAIT", "CLIENT INFO"]);
  // The same connection before and behind the WAIT: served.
  client.waitReplicas = () => Promise.resolve(1);
  await using same = new KvId("resent", { ...options, prefetchAt: 0 });
  assert.ok(await same.next() > 0);
});

Deno.test({ name: "replicas: a server without WAIT is a config error", ignore }, async () => {
  const dir = await Deno.makeTempDir({ prefix: "kvid-nowait-" });
  try {
    const server = await startRedis(dir, [["rename-command", 'WAIT ""']]);
    try {
      for (const kind of CLIENTS) {
        await using client = await openClient(kind, server.url);
        // A hang would end in a "timeout" error after 10 s.
        // waitAof off: WAIT alone is what this server lacks (Valkey has WAITAOF).
        await using id = new KvId("nowait", {
          redis: client.redis,
          replicas: 1,
          timeout: 10_000,
          waitAof: false,
        });
        const err = await id.next().then(() => undefined, (e) => e);
        assert.ok(err instanceof KvIdError && err.code === "config", `${kind}: ${err}`);
        assert.match(err.message, /no WAIT command/);
      }
    } finally {
      await server.kill();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("replicas: a client that cannot send WAIT is a config error", async () => {
  class ReplyError extends Error {}
  let counter = 0;
  // A server without scripting, as it answers (the durability probe then reads nothing; with
  // replicas the AOF it cannot see is not needed).
  const noScripting = () => Promise.reject(new ReplyError("ERR unknown command 'EVALSHA'"));
  const redis: RedisClient = {
    hincrby: (_k, _f, n) => Promise.resolve(counter += n),
    eval: noScripting,
    evalsha: noScripting,
  };
  await using id = new KvId("x", { redis, replicas: 1, guard: false });
  const err = await id.next().then(() => undefined, (e) => e);
  assert.ok(err instanceof KvIdError && err.code === "config", String(err));
  assert.match(err.message, /waitReplicas\(\) or sendCommand\(\)/);
});

Deno.test("replicas: a primary demoted while waiting is a transient failure", async () => {
  class ReplyError extends Error {}
  let counter = 0;
  const noScripting = () => Promise.reject(new ReplyError("ERR unknown command 'EVALSHA'"));
  const redis: RedisClient = {
    hincrby: (_k, _f, n) => Promise.resolve(counter += n),
    eval: noScripting,
    evalsha: noScripting,
    // What Redis answers a blocked WAIT when a failover turns its primary into a replica
    // (HEXISTS: no interleaved layout on this counter).
    sendCommand: (command) =>
      command === "HEXISTS" ? Promise.resolve(0) : Promise.reject(
        new ReplyError(
          "UNBLOCKED force unblock from blocking operation, instance state changed (master -> replica?)",
        ),
      ),
  };
  await using id = new KvId("x", { redis, replicas: 1, guard: false, timeout: 300 });
  const err = await id.next().then(() => undefined, (e) => e);
  // Retried until the deadline (not failed fast as a refusal), every range spent.
  assert.ok(err instanceof KvIdError && err.code === "timeout", String(err));
  const cause = err.cause as KvIdError;
  assert.ok(cause instanceof KvIdError && cause.code === "connection", String(cause));
  assert.match(cause.message, /became a replica/);
  assert.ok(id.stats().failures >= 1 && counter >= 1);
});
