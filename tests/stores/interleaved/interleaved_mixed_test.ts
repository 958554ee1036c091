/**
 * The interleaved store over stores of different kinds: two real Redis servers and a Deno KV
 * file. Residue blocks and the layout on every member, the refusals (another layout, a
 * single-store counter, a member that records no layout), and concurrent generators with a
 * member killed mid-run: the set keeps serving, no ID twice.
 */

import "../../support/deadline.ts"; // a time limit on every test of this file
import assert from "node:assert/strict";
import { KvId } from "../../../mod.ts";
import { DenoKvStore } from "../../../src/stores/deno_kv/deno_kv_store.ts";
import {
  InterleavedStore,
  type MemberReserveOptions,
  RedisStore,
  type Store,
} from "../../../src/stores/mod.ts";
import { CLIENTS, type OpenClient, openClient } from "../../support/redis_clients.ts";
import { command, startServer } from "../../support/redis_server.ts";
import { assertConsecutiveButSkips, assertIncreasing, rejectsWith } from "../../support/assert.ts";

// Servers the test can kill: not with one external server.
const ignore = Deno.env.get("KVID_TEST_URL") !== undefined;
const LAYOUT = "\u0000layout:";
const N = 3;
/** The member that issues the block holding `id`. */
const residue = (id: number, block: number) => Math.floor((id - 1) / block) % N;

async function tempKv(): Promise<{ path: string; [Symbol.asyncDispose](): Promise<void> }> {
  const dir = await Deno.makeTempDir({ prefix: "kvid-interleaved-kv-" });
  return {
    path: `${dir}/ids.sqlite3`,
    [Symbol.asyncDispose]: () => Deno.remove(dir, { recursive: true }),
  };
}

Deno.test(
  { name: "interleaved over Redis and Deno KV: blocks, layout, refusals", ignore },
  async () => {
    await using s0 = await startServer();
    await using s1 = await startServer();
    await using file = await tempKv();
    await using c0 = await openClient("node-redis", s0.url);
    await using c1 = await openClient("ioredis", s1.url);
    using kv = new DenoKvStore(file.path);
    const members = [new RedisStore(c0.redis), new RedisStore(c1.redis), kv];
    const store = new InterleavedStore(members, { block: 10 });
    {
      await using id = new KvId("mix", { store, minStep: 10, maxStep: 10, prefetchAt: 0 });
      const ids: number[] = [];
      for (let i = 0; i < 90; i++) ids.push(await id.next());
      // Rotation plus the floor: every reservation is the next block, whichever member serves it.
      assertConsecutiveButSkips(ids, 10); // a member skipped when slow: its block spent
      const served = new Set(ids.map((x) => residue(x, 10)));
      assert.deepEqual([...served].sort(), [0, 1, 2], "every member served its own blocks");
    }
    assert.equal(await command(s0.url, "HGET", "kvid", LAYOUT + "mix"), store.layout(0));
    assert.equal(await command(s1.url, "HGET", "kvid", LAYOUT + "mix"), store.layout(1));
    {
      using raw = await Deno.openKv(file.path);
      assert.equal(
        (await raw.get(["kvid", LAYOUT + "mix"])).value,
        "v1 servers=3 block=10 index=2",
      );
      const cycles = (await raw.get<Deno.KvU64>(["kvid", "mix"])).value;
      assert.ok(cycles instanceof Deno.KvU64 && cycles.value >= 3n, "KV counts its block cycles");
    }

    // Another block, another member count or order: the member asked refuses, nothing written.
    const kvValue = async () => {
      using raw = await Deno.openKv(file.path);
      return (await raw.get<Deno.KvU64>(["kvid", "mix"])).value?.value;
    };
    const before = await kvValue();
    for (
      const other of [
        new InterleavedStore(members, { block: 20 }),
        new InterleavedStore([kv, members[0], members[1]], { block: 10 }),
        new InterleavedStore([members[0], kv], { block: 10 }),
      ]
    ) {
      await using id = new KvId("mix", { store: other, prefetchAt: 0 });
      const run = async () => {
        for (let i = 0; i < 2 * N; i++) await id.nextBatch(10);
      };
      await rejectsWith(
        run(),
        "config",
        /member \d: this store holds the layout .*must not change/,
      );
    }
    assert.equal(await kvValue(), before, "the refused reservations wrote nothing on Deno KV");

    // A plain generator on one member: refused, on Redis and on Deno KV alike.
    for (const single of [members[0], kv]) {
      await using id = new KvId("mix", { store: single, prefetchAt: 0 });
      await rejectsWith(id.next(), "config", /belongs to interleaved servers/);
    }
    assert.equal(await kvValue(), before);

    // A single-store counter on Deno KV (its value is an ID, not a cycle): the set refuses it.
    {
      await using plain = new KvId("taken", { store: kv, minStep: 500, giveBack: false });
      assert.equal(await plain.next(), 1);
    }
    {
      // One block per reservation (maxStep), so 2N reservations reach every member in turn.
      await using id = new KvId("taken", { store, prefetchAt: 0, minStep: 10, maxStep: 10 });
      const run = async () => {
        for (let i = 0; i < 2 * N; i++) await id.nextBatch(10);
      };
      await rejectsWith(run(), "config", /member 2: .*single-store one \(value 500/);
    }

    // A member that records no layout (it ignores ReserveOptions.layout) is refused too.
    let counter = 0n;
    const forgetful: Store = {
      reserve(_key, _field, count) {
        counter += BigInt(count);
        return Promise.resolve({
          ranges: [{ first: counter - BigInt(count) + 1n, last: counter }],
          raised: false,
        });
      },
    };
    {
      await using id = new KvId("forgetful", {
        store: new InterleavedStore([forgetful], { block: 10 }),
      });
      await rejectsWith(id.next(), "config", /does not record interleaved layouts/);
    }
  },
);

Deno.test(
  { name: "interleaved: a counter's own bad state is refused at once, with its reason", ignore },
  async () => {
    await using s0 = await startServer();
    await using file = await tempKv();
    await using c0 = await openClient("node-redis", s0.url);
    await using c1 = await openClient("ioredis", s0.url);
    using kv0 = new DenoKvStore(file.path);
    using kv1 = new DenoKvStore(file.path);
    await command(s0.url, "SET", "strkey", "x");
    await command(s0.url, "HSET", "kvid", "text", "abc");
    {
      using raw = await Deno.openKv(file.path);
      await raw.set(["kvid", "text"], "abc");
    }
    // A member that answers with a range of another size than asked (and echoes the layout).
    const short = (): Store => ({
      reserve: (_key, _field, count, options) =>
        Promise.resolve({
          ranges: [{ first: 1n, last: BigInt(count + 1) }],
          raised: false,
          layout: (options as MemberReserveOptions).layout,
        }),
    });
    // Both members see the same bad state (two on one server or file). The first one asked
    // refuses for the set ("member i: ..."), with the reason: the state is the counter's, so
    // asking the other member is no use. Taken for a member's failure, it would be retried on
    // the other and reported as "none of the 2 members could reserve", with no reason.
    const redis = [new RedisStore(c0.redis), new RedisStore(c1.redis)];
    const cases: [Store[], string, string, RegExp][] = [
      [redis, "strkey", "not-a-hash", /^member \d: the key holds a value that is not a hash/],
      [redis, "kvid", "not-a-counter", /^member \d: the counter field does not hold/],
      [[kv0, kv1], "kvid", "not-a-counter", /^member \d: the counter entry does not hold/],
      [[short(), short()], "kvid", "unexpected-range", /^member \d: .*unexpected range/],
    ];
    for (const [members, key, reason, message] of cases) {
      const store = new InterleavedStore(members, { block: 10 });
      await using id = new KvId("text", { store, key, minStep: 10, maxStep: 10, prefetchAt: 0 });
      const err = await rejectsWith(id.next(), "reply", message);
      assert.equal(err.reason, reason, err.message);
    }
  },
);

Deno.test({
  name: "4 generators on 2 Redis servers and a Deno KV file, a server killed mid-run: no duplicate",
  ignore,
}, async () => {
  await using s0 = await startServer({ persistence: "aof" });
  await using s1 = await startServer({ persistence: "aof" });
  await using file = await tempKv();
  const BLOCK = 10;
  const GENERATORS = 4;
  const EACH = 4_000; // IDs per generator before the kill, and again after it
  const opened: OpenClient[] = [];
  const kvs: DenoKvStore[] = [];
  try {
    // Each generator its own clients, stores and KV handle: as separate processes would be.
    const generators: KvId[] = [];
    for (let g = 0; g < GENERATORS; g++) {
      const kind = CLIENTS[g % CLIENTS.length];
      const a = await openClient(kind, s0.url);
      opened.push(a);
      const b = await openClient(kind, s1.url);
      opened.push(b);
      const kv = new DenoKvStore(file.path, { maxAttempts: 64 });
      kvs.push(kv);
      const store = new InterleavedStore(
        [new RedisStore(a.redis), new RedisStore(b.redis), kv],
        { block: BLOCK, timeout: 5_000 },
      );
      generators.push(
        new KvId("busy", { store, minStep: BLOCK, maxStep: 4 * BLOCK, timeout: 5_000 }),
      );
    }
    const taken: number[][] = generators.map(() => []);
    let killedAt: number[] = []; // how many IDs each generator had at the kill
    let stop = false;
    const deadline = performance.now() + 60_000;
    const work = generators.map(async (id, g) => {
      while (!stop) {
        if (performance.now() > deadline) throw new Error(`generator ${g} ran past 60 s`);
        taken[g].push(...await id.nextBatch(50));
      }
    });
    const until = async (done: () => boolean) => {
      while (!done()) {
        if (performance.now() > deadline) assert.fail("the generators did not get there");
        await Promise.race([...work, new Promise((r) => setTimeout(r, 20))]);
      }
    };
    await until(() => taken.every((t) => t.length >= EACH));
    await s1.kill(); // mid-run: reservations are in flight on every member
    killedAt = taken.map((t) => t.length);
    await until(() => taken.every((t, g) => t.length >= killedAt![g] + EACH));
    stop = true;
    await Promise.all(work);

    for (const [g, ids] of taken.entries()) assertIncreasing(ids, `generator ${g}`);
    const sorted = Float64Array.from(taken.flat()).sort();
    for (let i = 1; i < sorted.length; i++) {
      if (sorted[i] === sorted[i - 1]) assert.fail(`duplicate ID ${sorted[i]}`);
    }
    // After the kill the two members left served, Redis and Deno KV both. Skipped: what each
    // generator held or had in flight at the kill (its segment, the next, one reply on the way).
    const held = 4 * 4 * BLOCK;
    const after = new Set(taken.flatMap((t, g) => t.slice(killedAt![g] + held)));
    const residues = new Set([...after].map((x) => residue(x, BLOCK)));
    assert.ok(
      residues.has(0) && residues.has(2),
      `members serving after the kill: ${[...residues]}`,
    );
    assert.ok(!residues.has(1), "no block of the dead server was issued after it died");
    for (const id of generators) assert.equal(id.stats().rollbacks, 0);
    console.log(
      `${sorted.length} IDs from ${GENERATORS} generators on Redis, Redis and Deno KV, ` +
        `distinct; the Redis member killed after ${killedAt.join(",")}; KV conflicts ${
          kvs.map((k) => k.stats().conflicts).join(",")
        }`,
    );
    await Promise.all(generators.map((id) => id.close()));
  } finally {
    for (const kv of kvs) kv.close();
    await Promise.all(opened.map((c) => c.close()));
  }
});

Deno.test({
  name: "interleaved over Redis and Deno KV: a member that lost its data jumps above, reported",
  ignore,
}, async () => {
  await using s0 = await startServer();
  await using file = await tempKv();
  await using c0 = await openClient("node-redis", s0.url);
  using kv = new DenoKvStore(file.path);
  const store = new InterleavedStore([new RedisStore(c0.redis), kv], { block: 10 });
  await using id = new KvId("lost", { store, minStep: 10, maxStep: 10, prefetchAt: 0 });
  const ids: number[] = [];
  for (let i = 0; i < 100; i++) ids.push(await id.next());
  // The Redis member loses everything (a restart without persistence): counter and layout.
  await command(s0.url, "FLUSHALL");
  for (let i = 0; i < 100; i++) ids.push(await id.next());
  assertIncreasing(ids);
  for (let i = 1; i < ids.length; i++) assert.equal(ids[i], ids[i - 1] + 1, "no block skipped");
  assert.equal(id.stats().rollbacks, 1, "the member found below this store's mark is reported");
  // It was raised to its first cycle above the floor and recorded its layout again.
  assert.ok(Number(await command(s0.url, "HGET", "kvid", "lost")) >= 5);
  assert.equal(await command(s0.url, "HGET", "kvid", LAYOUT + "lost"), store.layout(0));
});

Deno.test({
  name: "interleaved over Redis and Deno KV: a member that can lose IDs is refused under strict",
  ignore,
}, async () => {
  await using lossy = await startServer({ persistence: "snapshots" }); // no AOF
  await using durable = await startServer({ persistence: "aof" });
  await using file = await tempKv();
  await using cl = await openClient("node-redis", lossy.url);
  await using cd = await openClient("ioredis", durable.url);
  using kv = new DenoKvStore(file.path);
  {
    const store = new InterleavedStore([new RedisStore(cd.redis), kv], { block: 10 });
    await using id = new KvId("durable-set", { store });
    assert.ok(await id.next() > 0, "AOF on Redis and Deno KV: served");
  }
  const members = [new RedisStore(cl.redis), kv];
  {
    await using id = new KvId("lossy-set", { store: new InterleavedStore(members, { block: 10 }) });
    await rejectsWith(id.next(), "config", /server 0: .*(appendonly yes|disable_wal no)/);
  }
  assert.equal(await command(lossy.url, "HGET", "kvid", "lossy-set"), null, "nothing reserved");
  {
    const store = new InterleavedStore(members, { block: 10 });
    await using id = new KvId("lossy-set", { store, durability: "best-effort" });
    assert.ok(await id.next() > 0, "best-effort accepts the loss");
  }
});
