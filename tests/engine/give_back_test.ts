/**
 * Dense clean restarts and the first ID in one round trip, against a real server: `close()`
 * gives every unused range back (the top one to the counter, the others to the counter's pool),
 * the next reservation takes from the pool first, and a new generator reads the remembered step
 * in the reservation itself. Counts and orders of events only: nothing depends on speed.
 */

import "../support/deadline.ts"; // a time limit on every test of this file
import assert from "node:assert/strict";
import { DailyId, KvId, type RedisClient } from "../../mod.ts";
import { RedisStore } from "../../src/stores/redis/redis_store.ts";
import { poolField, stepField } from "../../src/stores/mod.ts";
import { CLIENTS, openClient } from "../support/redis_clients.ts";
import { command, startServer } from "../support/redis_server.ts";

/** Counts every command a generator sends. */
class Counting implements RedisClient {
  sent: string[] = [];
  constructor(readonly inner: RedisClient) {}
  hincrby(key: string, field: string, n: number): Promise<unknown> {
    this.sent.push("HINCRBY");
    return this.inner.hincrby(key, field, n);
  }
  eval(script: string, keys: string[], args: string[]): Promise<unknown> {
    this.sent.push(`EVAL/${args.length}`);
    return this.inner.eval(script, keys, args);
  }
  evalsha(sha: string, keys: string[], args: string[]): Promise<unknown> {
    this.sent.push(`EVALSHA/${args.length}`);
    return this.inner.evalsha(sha, keys, args);
  }
  sendCommand(cmd: string, args?: string[]): Promise<unknown> {
    this.sent.push(cmd);
    return this.inner.sendCommand!(cmd, args);
  }
}

for (const kind of CLIENTS) {
  Deno.test({
    name: `give-back (${kind}): the unused ranges of a closed generator go to the next one`,
    timeout: 30_000,
    fn: async () => {
      await using server = await startServer();
      await using client = await openClient(kind, server.url);
      const redis = client.redis;
      const fixed = { redis, minStep: 100, maxStep: 100, prefetchAt: 0 };
      const a = new KvId("pool", fixed);
      const b = new KvId("pool", fixed);
      assert.equal(await a.next(), 1); // a holds 1..100
      assert.equal(await b.next(), 101); // b holds 101..200: a's tail is not the counter's top
      for (let i = 0; i < 9; i++) await a.next(); // a handed out 1..10
      await a.close();
      assert.equal(await command(server.url, "HGET", "kvid", poolField("pool")), "11-100");
      // A new generator takes from the pool first: the IDs a left, not a new range.
      const c = new KvId("pool", { ...fixed, minStep: 30, maxStep: 30 });
      assert.equal(await c.next(), 11);
      assert.equal(c.stats().remaining, 29, "30 of the 90 pooled IDs");
      assert.equal(await command(server.url, "HGET", "kvid", poolField("pool")), "41-100");
      assert.equal(await command(server.url, "HGET", "kvid", "pool"), "200", "no new range");
      // b, the counter's top, lowers the counter; c's rest goes back to the pool.
      await b.close();
      assert.equal(await command(server.url, "HGET", "kvid", "pool"), "101");
      await c.close();
      assert.equal(await command(server.url, "HGET", "kvid", poolField("pool")), "12-100");
      // A running generator never takes a pooled range below what it holds.
      const d = new KvId("pool", fixed);
      assert.equal(await d.next(), 12, "the pool first");
      for (let i = 0; i < 88; i++) await d.next(); // 12..100: the pool is empty
      assert.equal(await command(server.url, "HGET", "kvid", poolField("pool")), null);
      assert.equal(await d.next(), 102, "then the counter");
      await d.close();
    },
  });
}

Deno.test({
  name: "give-back: 4 generators on one counter restarted cleanly in turn: no duplicate, dense",
  timeout: 60_000,
  fn: async () => {
    await using server = await startServer();
    await using client = await openClient("node-redis", server.url);
    const redis = client.redis;
    const seen = new Set<number>();
    let handed = 0;
    const take = async (g: KvId, n: number) => {
      for (let i = 0; i < n; i++) {
        const id = await g.next();
        assert.ok(!seen.has(id), `ID ${id} handed out twice`);
        seen.add(id);
        handed++;
      }
    };
    const make = () => new KvId("rolling", { redis, maxStep: 10_000 });
    const gens = [make(), make(), make(), make()];
    // 12 rounds: each generator takes 3,000 IDs, then one of them restarts (default options but
    // maxStep, so the steps grow past what a round takes and every generator buffers a tail).
    for (let round = 0; round < 12; round++) {
      for (const g of gens) await take(g, 3_000);
      const slot = round % gens.length;
      await gens[slot].close();
      gens[slot] = make();
    }
    await Promise.all(gens.map((g) => g.close()));
    const counter = Number(await command(server.url, "HGET", "kvid", "rolling"));
    const pool = String(await command(server.url, "HGET", "kvid", poolField("rolling")) ?? "");
    let pooled = 0;
    for (const m of pool.matchAll(/(\d+)-(\d+)/g)) pooled += Number(m[2]) - Number(m[1]) + 1;
    // Every ID below the counter was handed out or is in the pool: nothing lost on close.
    assert.equal(
      handed + pooled,
      counter,
      `handed ${handed}, pooled ${pooled}, counter ${counter}`,
    );
    for (const m of pool.matchAll(/(\d+)-(\d+)/g)) {
      for (let id = Number(m[1]); id <= Number(m[2]); id++) assert.ok(!seen.has(id));
    }
  },
});

Deno.test({
  name: "the first ID of a new generator is one command: the remembered step read in the script",
  timeout: 30_000,
  fn: async () => {
    await using server = await startServer();
    await using client = await openClient("node-redis", server.url);
    await command(server.url, "HSET", "kvid", stepField("first"), "4096");
    await command(server.url, "SCRIPT", "FLUSH"); // a fresh server: no script cached
    const counting = new Counting(client.redis);
    const gen = new KvId("first", { redis: counting, waitAof: false });
    assert.equal(await gen.next(), 1);
    // The reserve script has 7 arguments, the step lookup 2; a first reservation reading the
    // durability in the same script (issue 27: one round trip, CONFIG GET pipelined beside) 6.
    const scripts = (sent: string[]) => sent.filter((c) => c.startsWith("EVAL"));
    const reservations = (sent: string[]) => sent.filter((c) => /\/(6|7)$/.test(c));
    assert.deepEqual(reservations(counting.sent), ["EVAL/6"], "one EVAL, no NOSCRIPT round trip");
    assert.ok(!scripts(counting.sent).some((c) => c.endsWith("/2")), "no step lookup");
    assert.equal(gen.stats().remaining, 4095, "the remembered step sized the first reservation");
    // A later generator of the client shares the read: the reserve script alone (sent whole
    // once per client, EVALSHA after). No prefetch: the prefetch of first-2's next IDs, sent
    // while first-3 took its first, was counted once in a CI run.
    const later = { redis: counting, waitAof: false, prefetchAt: 0 };
    const other = new KvId("first-2", later);
    await other.next();
    const third = new KvId("first-3", later);
    await third.next();
    assert.deepEqual(reservations(counting.sent), ["EVAL/6", "EVAL/7", "EVALSHA/7"]);
    await third.close();
    await gen.close();
    await other.close();
  },
});

Deno.test({
  name:
    "give-back: a DailyId's unused IDs go to the day's pool; a counter of interleaved servers is left alone",
  timeout: 30_000,
  fn: async () => {
    await using server = await startServer();
    await using client = await openClient("node-redis", server.url);
    const redis = client.redis;
    const clock = () => Date.UTC(2026, 10, 30, 12);
    const options = { redis, clock, minStep: 100, maxStep: 100, prefetchAt: 0 };
    const a = new DailyId("d", options);
    const b = new DailyId("d", options);
    assert.equal(await a.next(), 20261130000001);
    assert.equal(await b.next(), 20261130000101);
    await a.close();
    const c = new DailyId("d", options);
    assert.equal(await c.next(), 20261130000002, "the day's pool first");
    await b.close();
    await c.close();

    // A counter whose layout field says interleaved servers own it: nothing lowered or pooled.
    await command(
      server.url,
      "HSET",
      "kvid",
      "\0layout:x",
      "v1 servers=2 block=10 index=0",
      "x",
      "3",
    );
    const store = new RedisStore(redis);
    assert.equal(await store.giveBack("kvid", "x", [{ first: 1n, last: 5n }]), 0);
    assert.equal(await command(server.url, "HGET", "kvid", "x"), "3");
    assert.equal(await command(server.url, "HGET", "kvid", poolField("x")), null);
  },
});
