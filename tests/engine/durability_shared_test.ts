/**
 * The durability read shared by the generators of one client (issue 27, cold start): only the
 * first generator waits for it; one made later reserves at once, until a generator doubts the
 * read (a rollback, a transient failure, a refusal). Against a redis-server the test starts.
 *
 * @module
 */

import "../support/deadline.ts"; // a time limit on every test of this file
import assert from "node:assert/strict";
import { KvId, type RedisClient } from "../../mod.ts";
import { openClient } from "../support/redis_clients.ts";
import { command, redisOnly, startServer } from "../support/redis_server.ts";
import { rejectsWith } from "../support/assert.ts";

/** The commands a client sent, by name (`EVAL`/`EVALSHA` split into probe and reservation). */
class Counting implements RedisClient {
  sent: string[] = [];
  readonly #inner: RedisClient;
  constructor(inner: RedisClient) {
    this.#inner = inner;
  }
  hincrby(key: string, field: string, n: number): Promise<unknown> {
    this.sent.push("HINCRBY");
    return this.#inner.hincrby(key, field, n);
  }
  eval(script: string, keys: string[], args: string[]): Promise<unknown> {
    this.sent.push(script.includes("'INFO'") ? "probe" : "script");
    return this.#inner.eval(script, keys, args);
  }
  evalsha(sha: string, keys: string[], args: string[]): Promise<unknown> {
    // The probe script has no arguments; every other script has some.
    this.sent.push(args.length === 0 ? "probe" : "script");
    return this.#inner.evalsha(sha, keys, args);
  }
  sendCommand(name: string, args: string[] = []): Promise<unknown> {
    this.sent.push(`${name} ${args[0] ?? ""}`.trim());
    return this.#inner.sendCommand!(name, args);
  }
  /** The commands sent since the last call. */
  take(): string[] {
    const out = this.sent;
    this.sent = [];
    return out;
  }
}

// waitAof off: these tests count the durability read; a server with WAITAOF (Valkey) would add
// its confirmation after each reservation, and refuse it outright once AOF is turned off.
const fixed = {
  minStep: 10,
  maxStep: 10,
  prefetchAt: 0,
  giveBack: false,
  waitAof: false,
} as const;

/** What a refusal names: Redis' AOF off, or Kvrocks' write-ahead log off. */
const LOSSY = /AOF|write-ahead log is off/;

Deno.test({
  name: "durability read shared: the second generator of a client sends its reservation only",
  timeout: 30_000,
  fn: async () => {
    await using server = await startServer(); // appendonly yes
    await using client = await openClient("node-redis", server.url);
    const redis = new Counting(client.redis);

    await using a = new KvId("a", { redis, ...fixed });
    assert.equal(await a.next(), 1);
    const first = redis.take();
    assert.equal(first.filter((c) => c === "probe").length, 1, first.join());
    assert.equal(first.filter((c) => c.startsWith("CONFIG")).length, 3, first.join());
    // The read and the first reservation are one script call (issue 27): no reservation apart.
    assert.equal(first.filter((c) => c === "script").length, 0, first.join());
    assert.equal(first.length, 4, first.join());

    await using b = new KvId("b", { redis, ...fixed });
    assert.equal(await b.next(), 1);
    assert.deepEqual(redis.take(), ["script"], "one reservation, no probe, no CONFIG GET");
    assert.equal(b.stats().durability.durable, true);
    const settings = b.stats().durability.settings;
    if (server.kind === "kvrocks") {
      assert.equal(settings["rocksdb.write_options.disable_wal"], "no");
    } else assert.equal(settings.appendonly, "yes");
  },
});

Deno.test({
  ...redisOnly(
    "durability read shared: a rollback makes the next generator read the server again",
    "it turns the AOF off and on at run time; Kvrocks' WAL is set in its config file only",
  ),
  timeout: 30_000,
  fn: async () => {
    await using server = await startServer();
    await using client = await openClient("node-redis", server.url);
    const redis = new Counting(client.redis);

    await using a = new KvId("order", { redis, ...fixed });
    for (let i = 1; i <= 10; i++) assert.equal(await a.next(), i);
    // The server now loses data (AOF off) and the counter went back: a's next reservation finds
    // the rollback (its guard raises the counter past its mark: the range is served), so the
    // read is doubted.
    await command(server.url, "CONFIG", "SET", "appendonly", "no");
    await command(server.url, "HSET", "kvid", "order", "0");
    const rolled = new Promise<void>((resolve) => a.addEventListener("rollback", () => resolve()));
    assert.ok(await a.next() > 10);
    await rolled;
    redis.take();

    // A generator made now reads the server itself, and is refused: nothing reserved.
    await using b = new KvId("fresh", { redis, ...fixed });
    await rejectsWith(b.next(), "config", /appendonly yes/);
    assert.ok(redis.take().includes("probe"), "b read the server");
    assert.equal(b.stats().segments, 0);
    assert.equal(await command(server.url, "HGET", "kvid", "fresh"), null, "nothing reserved");

    // Fixed: the refusal doubted the read too, so the next generator reads again and serves.
    await command(server.url, "CONFIG", "SET", "appendonly", "yes");
    await using c = new KvId("later", { redis, ...fixed });
    assert.equal(await c.next(), 1);
    assert.ok(redis.take().includes("probe"), "c read the server");
  },
});

Deno.test({
  name: "durability read shared: a refused server serves no generator of the client",
  timeout: 30_000,
  fn: async () => {
    await using server = await startServer({ persistence: "snapshots" });
    await using client = await openClient("node-redis", server.url);
    const redis = new Counting(client.redis);
    const gens = ["x", "y", "z"].map((name) => new KvId(name, { redis, ...fixed }));
    try {
      // Started together (one read in flight shared) and one after the other.
      await Promise.all(gens.slice(0, 2).map((g) => rejectsWith(g.next(), "config", LOSSY)));
      await rejectsWith(gens[2].next(), "config", LOSSY);
      for (const name of ["x", "y", "z"]) {
        assert.equal(await command(server.url, "HGET", "kvid", name), null, name);
      }
      assert.ok(!redis.sent.includes("script"), "no reservation sent");
    } finally {
      await Promise.all(gens.map((g) => g.close()));
    }
  },
});
