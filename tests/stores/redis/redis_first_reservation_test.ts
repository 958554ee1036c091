/**
 * A generator's first reservation on the Redis store (issue 27, cold start): the server's
 * durability and the guarded reservation in one script call, the `CONFIG GET`s and the `WAITAOF`
 * probe pipelined beside it: one round trip for a client's first ID; a refused server's counter
 * untouched. Against a redis-server (or `KVID_TEST_SERVER`) the test starts.
 *
 * @module
 */

import "../../support/deadline.ts"; // a time limit on every test of this file
import assert from "node:assert/strict";
import { KvId, type RedisClient } from "../../../mod.ts";
import {
  type AnyReserveOptions,
  type DurabilityOptions,
  poolField,
  stepField,
} from "../../../src/contract/store.ts";
import { durabilityRefusal } from "../../../src/engine/durability_gate.ts";
import { RedisStore } from "../../../src/stores/redis/redis_store.ts";
import { CLIENTS, openClient } from "../../support/redis_clients.ts";
import { command, redisOnly, startServer } from "../../support/redis_server.ts";

/** A client recording, in order, each command it sends and each reply it gets. */
class Timeline implements RedisClient {
  events: string[] = [];
  readonly #inner: RedisClient;
  constructor(inner: RedisClient) {
    this.#inner = inner;
  }
  #track(name: string, reply: Promise<unknown>): Promise<unknown> {
    this.events.push(`> ${name}`);
    return reply.finally(() => this.events.push(`< ${name}`));
  }
  hincrby(key: string, field: string, n: number): Promise<unknown> {
    return this.#track("HINCRBY", this.#inner.hincrby(key, field, n));
  }
  eval(script: string, keys: string[], args: string[]): Promise<unknown> {
    return this.#track(`EVAL/${args.length} ${args[0]}`, this.#inner.eval(script, keys, args));
  }
  evalsha(sha: string, keys: string[], args: string[]): Promise<unknown> {
    const name = `EVALSHA/${args.length} ${args[0]}`;
    return this.#track(name, this.#inner.evalsha(sha, keys, args));
  }
  sendCommand(name: string, args: string[] = []): Promise<unknown> {
    return this.#track(`${name} ${args[0] ?? ""}`.trim(), this.#inner.sendCommand!(name, args));
  }
  waitAof(key: string, local: number, replicas: number, ms: number): Promise<unknown> {
    return this.#track(
      `WAITAOF ${local} ${replicas}`,
      this.#inner.waitAof!(key, local, replicas, ms),
    );
  }
}

/** True when the server has `WAITAOF` (Valkey, Redis >= 7.2). */
async function hasWaitAof(url: string): Promise<boolean> {
  const info = String(await command(url, "INFO", "server"));
  const m = /redis_version:(\d+)\.(\d+)/.exec(info);
  return /valkey_version/.test(info) ||
    (m !== null && (Number(m[1]) > 7 || (Number(m[1]) === 7 && Number(m[2]) >= 2)));
}

for (const kind of CLIENTS) {
  Deno.test({
    name: `first reservation (${kind}): a client's first ID is one round trip`,
    timeout: 30_000,
    fn: async () => {
      await using server = await startServer(); // appendonly yes
      await using client = await openClient(kind, server.url);
      const timeline = new Timeline(client.redis);
      await using id = new KvId("order", { redis: timeline });
      assert.equal(await id.next(), 1);
      const events = timeline.events;
      const firstReply = events.findIndex((e) => e.startsWith("<"));
      const sentBefore = events.slice(0, firstReply);
      const sentAfter = events.slice(firstReply).filter((e) => e.startsWith(">"));
      // Sent at once: the one script (6 arguments: the reservation's and the verdict's flags),
      // the three CONFIG GETs and the probe of WAITAOF (which waits for nothing).
      assert.deepEqual(
        sentBefore.toSorted(),
        [
          "> CONFIG GET",
          "> CONFIG GET",
          "> CONFIG GET",
          "> EVAL/6 order",
          "> WAITAOF 0",
        ].toSorted(),
        events.join(" | "),
      );
      // After the first reply: nothing, or the range's confirmation where the server has it.
      const confirm = await hasWaitAof(server.url) ? ["> WAITAOF 1 0"] : [];
      assert.deepEqual(sentAfter, confirm, events.join(" | "));
      const d = id.stats().durability;
      assert.equal(d.durable, true);
      if (server.kind === "kvrocks") {
        // Read inside the script (Kvrocks runs CONFIG there), not by a CONFIG GET apart.
        assert.equal(d.settings["rocksdb.write_options.disable_wal"], "no");
        assert.match(d.settings.server, /^kvrocks \d/);
      } else {
        assert.equal(d.settings.appendonly, "yes");
        assert.equal(d.settings.appendfsync, "everysec");
        assert.equal(d.settings.maxmemory_policy, "noeviction");
        assert.match(d.settings.server, /^(redis|valkey) \d/);
      }
      assert.equal(d.settings.ttl_ms, "none");

      // A second generator of the client: the read is shared, its reservation alone is sent.
      timeline.events = [];
      await using other = new KvId("user", { redis: timeline });
      assert.equal(await other.next(), 1);
      const sent = timeline.events.filter((e) => e.startsWith(">"));
      // (the reserve script whole if this is its first use on the client, else by its SHA)
      const user = sent.filter((e) => e.endsWith(" user"));
      assert.equal(user.length, 1, sent.join());
      assert.match(user[0], /^> EVAL(SHA)?\/7 user$/);
      assert.ok(!sent.some((e) => e.startsWith("> CONFIG") || e.startsWith("> EVAL/6")));
    },
  });
}

Deno.test({
  name: "first reservation: generators starting together on a new client share one read",
  timeout: 30_000,
  fn: async () => {
    await using server = await startServer();
    await using client = await openClient("node-redis", server.url);
    const timeline = new Timeline(client.redis);
    // No prefetch: a generator served early could send its next reservation before the last
    // one is served, and those are not what is counted here.
    const gens = Array.from(
      { length: 20 },
      (_, i) => new KvId(`n${i}`, { redis: timeline, prefetchAt: 0 }),
    );
    try {
      assert.deepEqual(await Promise.all(gens.map((g) => g.next())), gens.map(() => 1));
      const sent = timeline.events.filter((e) => e.startsWith(">"));
      const first = sent.filter((e) => e.startsWith("> EVAL/6"));
      assert.equal(first.length, 1, sent.join());
      assert.equal(sent.filter((e) => e === "> CONFIG GET").length, 3, sent.join());
      assert.equal(sent.filter((e) => e === "> WAITAOF 0").length, 1, sent.join());
      // The other 19: the reserve script, each once, sent whole once and by its SHA after.
      const firstName = first[0].split(" ")[2];
      const reserve = sent.filter((e) => e.includes("/7 ") && !e.endsWith(` ${firstName}`));
      assert.equal(new Set(reserve.map((e) => e.split(" ")[2])).size, 19, sent.join());
      assert.equal(reserve.length, 19, sent.join());
      assert.equal(reserve.filter((e) => e.startsWith("> EVAL/7")).length, 1, sent.join());
    } finally {
      await Promise.all(gens.map((g) => g.close()));
    }
  },
});

// The stores below are made with { waitAof: true }, what a generator's default asks.
const RESERVE: AnyReserveOptions = {
  floor: 0n,
  raiseTo: 0n,
  guard: true,
  exact: false,
  loadStep: true,
  maxCount: 1_000,
  pool: true,
};
/** What a generator in `mode` asks: its verdict, the engine's. */
function asked(mode: "strict" | "best-effort" = "strict"): DurabilityOptions {
  const judge = (d: Parameters<DurabilityOptions["judge"]>[0]) =>
    durabilityRefusal(d, mode, "kvid", "order");
  return { field: "order", mode, stated: {}, judge };
}
const ASKED = asked();

Deno.test({
  name: "first reservation: a refused server's counter is untouched, in one call",
  timeout: 30_000,
  fn: async (t) => {
    await t.step("no AOF, strict: no range, the problem named; best-effort: served", async () => {
      await using server = await startServer({ persistence: "snapshots" });
      await using client = await openClient("node-redis", server.url);
      const timeline = new Timeline(client.redis);
      const store = new RedisStore(timeline, { waitAof: true });
      const refused = await store.reserve("kvid", "order", 10, { ...RESERVE, durability: ASKED });
      assert.deepEqual(refused.ranges, []);
      assert.equal(refused.durability?.durable, false);
      assert.match(refused.durability?.problems[0] ?? "", /AOF is off|write-ahead log is off/);
      assert.equal(await command(server.url, "HGET", "kvid", "order"), null, "not touched");
      assert.equal(timeline.events.filter((e) => e.startsWith("> EVAL")).length, 1);

      // Accepted by the client (best-effort): reserved in a second call, never asked to
      // WAITAOF (a server without AOF cannot confirm it; Valkey would refuse it).
      const fresh = new RedisStore(new Timeline(client.redis), { waitAof: true });
      const bestEffort = asked("best-effort");
      const served = await fresh.reserve("kvid", "order", 10, {
        ...RESERVE,
        durability: bestEffort,
      });
      assert.deepEqual(served.ranges, [{ first: 1n, last: 10n }]);
      const kvrocks = server.kind === "kvrocks";
      const setting = kvrocks ? "rocksdb.write_options.disable_wal" : "appendonly";
      assert.equal(served.durability?.settings[setting], kvrocks ? "yes" : "no");
    });
    await t.step({
      ...redisOnly("allkeys-lru: refused in every mode, nothing reserved", "no maxmemory-policy"),
      fn: async () => {
        await using server = await startServer(); // appendonly yes
        await command(server.url, "CONFIG", "SET", "maxmemory-policy", "allkeys-lru");
        await using client = await openClient("ioredis", server.url);
        for (const mode of ["strict", "best-effort"] as const) {
          const store = new RedisStore(new Timeline(client.redis), { waitAof: true });
          const reply = await store.reserve("kvid", "order", 10, {
            ...RESERVE,
            durability: { ...asked(mode), reuse: false },
          });
          assert.deepEqual(reply.ranges, [], mode);
          assert.equal(reply.durability?.lossWithoutCrash, true, mode);
        }
        assert.equal(await command(server.url, "HGET", "kvid", "order"), null, "not touched");
        await using id = new KvId("order", { redis: client.redis, durability: "best-effort" });
        await assert.rejects(id.next(), /maxmemory-policy is allkeys-lru/);
        assert.equal(await command(server.url, "HGET", "kvid", "order"), null, "not touched");
      },
    });
    await t.step("the pool and the remembered step: taken by the same call", async () => {
      await using server = await startServer();
      await command(server.url, "HSET", "kvid", "order", "500", stepField("order"), "64");
      await command(server.url, "HSET", "kvid", poolField("order"), "101-200 301-400");
      await using client = await openClient("node-redis", server.url);
      const store = new RedisStore(client.redis, { waitAof: true });
      const reply = await store.reserve("kvid", "order", 8, { ...RESERVE, durability: ASKED });
      // At least the remembered 64 IDs, from the pool's first range; the rest stays pooled.
      assert.deepEqual(reply.ranges, [{ first: 101n, last: 164n }]);
      assert.equal(reply.step, 64);
      assert.equal(
        await command(server.url, "HGET", "kvid", poolField("order")),
        "165-200 301-400",
      );
      assert.equal(await command(server.url, "HGET", "kvid", "order"), "500");
    });
    await t.step("a TTL on the hash: removed by the same call, and reported", async () => {
      await using server = await startServer();
      await command(server.url, "HSET", "kvid", "other", "5");
      await command(server.url, "PEXPIRE", "kvid", "60000");
      await using client = await openClient("node-redis", server.url);
      const store = new RedisStore(client.redis, { waitAof: true });
      const reply = await store.reserve("kvid", "order", 10, { ...RESERVE, durability: ASKED });
      assert.deepEqual(reply.ranges, [{ first: 1n, last: 10n }]);
      assert.ok((reply.ttlRemovedMs ?? 0) > 0, String(reply.ttlRemovedMs));
      assert.ok(Number(reply.durability?.settings.ttl_ms) > 0);
      assert.equal(await command(server.url, "PTTL", "kvid"), -1);
    });
  },
});
