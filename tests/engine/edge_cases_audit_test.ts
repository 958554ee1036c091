/**
 * One test per behaviour that the second mutation audit (issue 36) found no test catching: each
 * fails on an assertion when its behaviour is broken (`deno task mutate` names the mutation),
 * against a real server where a store is involved.
 */

import "../support/deadline.ts"; // a time limit on every test of this file
import assert from "node:assert/strict";
import { KvId, KvIdError, type RollbackDetail } from "../../mod.ts";
import { DenoKvStore } from "../../src/stores/deno_kv/deno_kv_store.ts";
import { InterleavedStore } from "../../src/stores/interleaved/interleaved_store.ts";
import { RedisStore } from "../../src/stores/redis/redis_store.ts";
import { UserFloor } from "../../src/engine/user_floor.ts";
import type {
  DurabilityFacts,
  IdRange,
  Release,
  Reservation,
  ReserveOptions,
  Store,
} from "../../src/contract/store.ts";
import { poolField } from "../../src/stores/mod.ts";
import { openClient, Spy } from "../support/redis_clients.ts";
import { command, startNoScriptingServer, startServer } from "../support/redis_server.ts";
import { spawnRedis } from "../support/faults.ts";
import { rejectsWith } from "../support/assert.ts";

/** Run `fn` with `performance.now()` ahead of the real clock by `ms`. */
async function clockAhead<T>(ms: number, fn: () => Promise<T>): Promise<T> {
  const realNow = performance.now;
  performance.now = () => realNow.call(performance) + ms;
  try {
    return await fn();
  } finally {
    performance.now = realNow;
  }
}

Deno.test("give-back: a store that releases only its top never gets a late range at or below the mark", async () => {
  // Deno KV releases the top of the counter only (no pool): the release path, not the pool's.
  await using kv = await Deno.openKv(":memory:");
  const inner = new DenoKvStore(kv);
  const released: IdRange[] = [];
  let sent = 0;
  const held: { gate?: Promise<void> } = {};
  let onSent: (() => void) | undefined;
  const store: Store & Release = {
    async reserve(key: string, field: string, n: number, o: ReserveOptions): Promise<Reservation> {
      sent++;
      onSent?.();
      if (held.gate !== undefined) await held.gate;
      return await inner.reserve(key, field, n, o);
    },
    release(key: string, field: string, range: IdRange): Promise<boolean> {
      released.push(range);
      return inner.release(key, field, range);
    },
  };
  const id = new KvId("late-release", {
    store,
    guard: false,
    minStep: 10,
    maxStep: 10,
    prefetchAt: 0,
    timeout: 60_000,
  });
  assert.equal((await id.nextBatch(10)).at(-1), 10);
  const kvKey = inner.kvKey("kvid", "late-release");
  await kv.set(kvKey, new Deno.KvU64(3n)); // the counter went back
  let open!: () => void;
  held.gate = new Promise((r) => open = r);
  const second = new Promise<void>((r) => onSent = r);
  const pending = id.next();
  await second;
  assert.equal(sent, 2);
  const closing = id.close(); // the reservation is in flight: it lands after close()
  open();
  await rejectsWith(pending, "closed");
  await closing;
  // It reserved 4..13, below IDs already issued: releasing it would lower the counter to 3.
  assert.deepEqual(released, []);
  assert.equal((await kv.get<Deno.KvU64>(kvKey)).value?.value, 13n);
});

Deno.test("the floor option: a later, smaller answer never lowers it", async () => {
  const answers = [100, 50];
  const floor = new UserFloor(() => answers.shift()!, "kvid", "order");
  await floor.read();
  await floor.read();
  assert.equal(floor.value, 100n);
});

Deno.test({
  name: "the floor option: an ID equal to it is refused on a server without scripting",
  ignore: Deno.env.get("KVID_TEST_URL") !== undefined,
  fn: async () => {
    await using server = await startNoScriptingServer();
    await using client = await openClient("node-redis", server.url);
    await command(server.url, "HSET", "kvid", "at-user-floor", "41");
    // SELECT max(id) FROM orders: 42. HINCRBY 10 reserves 42..51, and 42 is in the data.
    await using id = new KvId("at-user-floor", {
      redis: client.redis,
      minStep: 10,
      maxStep: 10,
      prefetchAt: 0,
      timeout: 300,
      durability: "best-effort",
      floor: () => 42,
    });
    const got = await id.next().then((v) => v, (e) => e);
    assert.ok(got instanceof KvIdError, `served ${got}, the floor option holds 42`);
    assert.ok(id.stats().rollbacks >= 1, "said as a rollback");
  },
});

Deno.test("evidence against a real server (issue 36)", async (t) => {
  await using server = await startServer();
  await using client = await openClient("node-redis", server.url);
  const url = server.url;

  await t.step("a late reservation starting exactly at the mark is a rollback", async () => {
    const spy = new Spy(client.redis);
    await using id = new KvId("late-at-mark", {
      redis: spy,
      guard: false,
      minStep: 10,
      maxStep: 10,
      prefetchAt: 0,
      timeout: 300,
      failFast: false,
    });
    const seen: RollbackDetail[] = [];
    id.addEventListener("rollback", (e) => seen.push(e.detail));
    assert.deepEqual(await id.nextBatch(10), [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    // The next HINCRBY 10 replies 19: the range 10..19 starts at the mark (10).
    await command(url, "HSET", "kvid", "late-at-mark", "9");
    let open!: () => void;
    spy.gate = new Promise((r) => open = r);
    await rejectsWith(id.next(), "timeout"); // held past the timeout: its reply comes late
    spy.gate = undefined;
    open();
    // The next reservation's reply comes after the late one on the same connection.
    assert.equal(await id.next(), 20);
    assert.deepEqual(seen, [{ floor: 10n, last: 19n }]);
  });

  await t.step(
    "a raise drops the pool of given-back ranges: they may be issued already",
    async () => {
      const fixed = { redis: client.redis, minStep: 100, maxStep: 100, prefetchAt: 0 };
      await using a = new KvId("pool-raise", fixed);
      const first = await a.nextBatch(200); // 1..200
      assert.equal(first.at(-1), 200);
      // The server lost data: the counter back at 5, a pool of 11..100 (given back before it
      // was issued again: the loss took the counter back past it).
      await command(url, "HSET", "kvid", "pool-raise", "5", poolField("pool-raise"), "11-100");
      const next = await a.next(); // a's mark is 200: raised above it
      assert.ok(next > 200, `got ${next}`);
      assert.equal(a.stats().rollbacks, 1);
      assert.equal(await command(url, "HGET", "kvid", poolField("pool-raise")), null);
      await using b = new KvId("pool-raise", fixed);
      const fresh = await b.next();
      assert.ok(fresh > 200, `a fresh generator got ${fresh}: a pooled ID a issued already`);
    },
  );
});

Deno.test("durability: a refused store is read again before every retry", async () => {
  // No AOF: a strict generator refuses it.
  await using server = await spawnRedis(["--appendonly", "no"]);
  await using client = await openClient("node-redis", server.url);
  const store = new RedisStore(client.redis);
  let reads = 0;
  const counted: Store & DurabilityFacts = {
    reserve: (k, f, n, o) => store.reserve(k, f, n, o),
    durability: (k, o) => {
      reads++;
      return store.durability(k, o);
    },
  };
  await using id = new KvId("refused-again", { store: counted, timeout: 400 });
  await rejectsWith(id.next(), "config", /AOF is off/);
  const before = reads;
  // Past the refusal's backoff (remembered until then): the next call tries the store again.
  await clockAhead(60_000, () => rejectsWith(id.next(), "config", /AOF is off/));
  assert.equal(reads, before + 1, "read again");
  await clockAhead(120_000, () => rejectsWith(id.next(), "config", /AOF is off/));
  assert.equal(await command(server.url, "HGET", "kvid", "refused-again"), null);
});

Deno.test("durability: an interleaved member that can evict is refused in every mode", async () => {
  await using a = await startServer();
  await using b = await startServer();
  await command(b.url, "CONFIG", "SET", "maxmemory-policy", "allkeys-lru");
  await using ca = await openClient("node-redis", a.url);
  await using cb = await openClient("node-redis", b.url);
  const store = new InterleavedStore([new RedisStore(ca.redis), new RedisStore(cb.redis)], {
    block: 10,
  });
  for (const durability of ["strict", "best-effort"] as const) {
    await using id = new KvId(`evicting-${durability}`, { store, durability, timeout: 2_000 });
    await rejectsWith(id.next(), "config", /maxmemory-policy is allkeys-lru/);
  }
});
