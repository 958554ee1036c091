/**
 * Promises of the README and the module doc that had no test, each asserted on counts and the
 * order of events, against a real server: no stall at a segment boundary at a steady rate, IDs of
 * separate generators within about one step of each other (two with prefetch), a restart's gap
 * of at most two steps, and the Rust crate's wire format beside the generators.
 */

import "../support/deadline.ts"; // a time limit on every test of this file
import assert from "node:assert/strict";
import { KvId } from "../../mod.ts";
import { RedisStore } from "../../src/stores/redis/redis_store.ts";
import type { Release, Reservation, ReserveOptions, Store } from "../../src/contract/store.ts";
import { openClient } from "../support/redis_clients.ts";
import { command, startServer } from "../support/redis_server.ts";
import { assertIncreasing } from "../support/assert.ts";

/** One turn of the timer queue (what an application yields between requests). */
const nextTimerTurn = () => new Promise<void>((r) => setTimeout(r, 0));

/**
 * A store whose replies take a controlled time measured in the caller's IDs, not in ms: a reply
 * is handed to the generator only once the caller took `lagIds` more IDs after it was sent (and
 * the real server answered).
 */
class LaggingStore implements Store {
  /** IDs the caller took so far (the test counts them). */
  taken = 0;
  #pending: { sentAt: number; release: () => void; delivered: Promise<unknown> } | undefined;
  readonly #inner: Store;
  readonly #lag: number;
  constructor(inner: Store, lagIds: number) {
    this.#inner = inner;
    this.#lag = lagIds;
  }
  reserve(key: string, field: string, n: number, o: ReserveOptions): Promise<Reservation> {
    let release!: () => void;
    const released = new Promise<void>((r) => release = r);
    const reply = this.#inner.reserve(key, field, n, o);
    const delivered = Promise.all([reply, released]).then(([r]) => r);
    this.#pending = { sentAt: this.taken, release, delivered: delivered.catch(() => {}) };
    return delivered;
  }
  /** A caller is waiting (a stall): let the reply land now. */
  releaseNow(): void {
    this.#pending?.release();
    this.#pending = undefined;
  }
  /** After each ID: once `lagIds` passed since a reservation was sent, let its reply land. */
  async tick(): Promise<void> {
    const p = this.#pending;
    if (p !== undefined && this.taken - p.sentAt >= this.#lag) {
      this.#pending = undefined;
      p.release();
      await p.delivered;
    }
    await nextTimerTurn();
  }
}

Deno.test("promises against a real server", async (t) => {
  await using server = await startServer();
  await using client = await openClient("node-redis", server.url);
  const url = server.url;

  await t.step("no stall at a segment boundary at a steady rate (40 boundaries)", async () => {
    // Segments of 50, the next one reserved with 10 left; each reply takes 8 IDs' worth of time.
    const store = new LaggingStore(new RedisStore(client.redis), 8);
    await using id = new KvId("steady", { store, minStep: 50, maxStep: 50, prefetchAt: 0.2 });
    const ids: number[] = [];
    while (ids.length < 50 * 40) {
      const call = id.next();
      // Buffered, it resolves before the next timer turn; if not, it stalled: let the reply in.
      const waiting = await Promise.race([
        call.then(() => false),
        nextTimerTurn().then(() => true),
      ]);
      if (waiting) store.releaseNow();
      ids.push(await call);
      store.taken++;
      await store.tick();
    }
    assertIncreasing(ids);
    const { stalls, segments } = id.stats();
    assert.ok(segments >= 40, `${segments} segments`);
    assert.equal(stalls, 1, "only the first call waited for a reservation");
  });

  await t.step(
    "on a slow link the prefetch starts with four round trips' worth of IDs left",
    async () => {
      // The generator's clock is the test's: each reservation takes 100 ms, each ID 1 ms. At that
      // rate four round trips need 400 IDs, more than a segment: the next reservation is sent as
      // soon as one lands, not when prefetchAt's 5 of 100 are left.
      const realNow = performance.now;
      let now = realNow.call(performance);
      performance.now = () => now;
      try {
        const inner = new RedisStore(client.redis);
        const leftAtSend: number[] = [];
        const store: Store = {
          reserve(key, field, n, o) {
            // The generator below, sending a reservation (called after it is made).
            leftAtSend.push(id.stats().remaining);
            now += 100; // the round trip
            return inner.reserve(key, field, n, o);
          },
        };
        const id = new KvId("lead", { store, minStep: 100, maxStep: 100, prefetchAt: 0.05 });
        for (let i = 0; i < 600; i++) {
          await id.next();
          now += 1;
          await nextTimerTurn();
        }
        await id.close();
        // The first two reservations had no rate measured yet; from the third on, the lead rules.
        const later = leftAtSend.slice(3);
        assert.ok(later.length >= 3, `reservations: ${leftAtSend}`);
        assert.ok(later.every((left) => left > 5), `IDs left when each was sent: ${leftAtSend}`);
      } finally {
        performance.now = realNow;
      }
    },
  );

  await t.step("IDs of separate generators interleave within 2 steps (prefetch on)", async () => {
    const step = 20;
    await using other = await openClient("ioredis", url);
    const options = { minStep: step, maxStep: step, prefetchAt: 0.2 };
    await using a = new KvId("trend", { redis: client.redis, ...options });
    await using b = new KvId("trend", { redis: other.redis, ...options });
    // Equal rates, one call at a time: a call's ID is never 2 steps below an ID handed out
    // before the call began (a generator holds at most its segment and the one ahead).
    let highest = 0;
    const seen = new Set<number>();
    for (let i = 0; i < 600; i++) {
      const id = await (i % 2 === 0 ? a : b).next();
      assert.ok(!seen.has(id), `${id} twice`);
      seen.add(id);
      assert.ok(id > highest - 2 * step, `${id} is 2 steps or more below ${highest}`);
      highest = Math.max(highest, id);
      await nextTimerTurn();
    }
  });

  await t.step("a process that stops leaves a gap of less than 2 steps", async () => {
    const step = 25;
    const gaps: number[] = [];
    for (const taken of [1, 19, 20, 21, 24, 25, 26, 49, 50, 51, 137]) {
      const name = `gap-${taken}`;
      const options = { minStep: step, maxStep: step, prefetchAt: 0.2, giveBack: false };
      // No give-back: what a crash (kill -9) leaves behind.
      const stopped = new KvId(name, { redis: client.redis, ...options });
      let last = 0;
      for (let i = 0; i < taken; i++) {
        last = await stopped.next();
        await nextTimerTurn(); // the prefetch, if due, goes out
      }
      await stopped.close();
      await using fresh = new KvId(name, { redis: client.redis, ...options });
      const gap = await fresh.next() - last - 1;
      assert.ok(gap >= 0 && gap < 2 * step, `${taken} taken: a gap of ${gap}`);
      gaps.push(gap);
    }
    assert.ok(gaps.some((g) => g >= step), `the segment ahead is lost too: gaps ${gaps}`);
  });

  await t.step("the Rust crate's HINCRBY beside a give-back on close", async () => {
    // The Rust crate `kvid` sends `HINCRBY kvid <name> <step>` and serves V-step+1..V of the
    // reply V; it is not run here (no Rust toolchain offline): its command is sent raw.
    const rust = async (name: string, n: number) => {
      const v = Number(await command(url, "HINCRBY", "kvid", name, String(n)));
      return Array.from({ length: n }, (_, i) => v - n + 1 + i);
    };
    // Rust reserved after us: our close() must not give back below its range.
    const a = new KvId("rust-after", {
      redis: client.redis,
      minStep: 10,
      maxStep: 10,
      prefetchAt: 0,
    });
    const ours = [await a.next(), await a.next(), await a.next()];
    const theirs = await rust("rust-after", 5);
    assert.deepEqual(theirs, [11, 12, 13, 14, 15]);
    await a.close();
    assert.equal(await command(url, "HGET", "kvid", "rust-after"), "15", "not lowered under it");
    assert.deepEqual(ours, [1, 2, 3]);
    // Our unused 4..10 may come back from the counter's pool; never an ID Rust or we issued.
    await using a2 = new KvId("rust-after", { redis: client.redis, prefetchAt: 0 });
    const again = await a2.nextBatch(20);
    assert.ok(again.every((x) => !theirs.includes(x) && !ours.includes(x)), `${again}`);

    // Nobody reserved after us: the unused top goes back, and Rust takes it next, none of ours.
    const b = new KvId("rust-next", {
      redis: client.redis,
      minStep: 10,
      maxStep: 10,
      prefetchAt: 0,
    });
    const mine = [await b.next(), await b.next(), await b.next()];
    await b.close();
    assert.equal(await command(url, "HGET", "kvid", "rust-next"), "3", "given back");
    const next = await rust("rust-next", 5);
    assert.deepEqual(next, [4, 5, 6, 7, 8]);
    assert.ok(next.every((x) => !mine.includes(x)));

    // Rust reserved between our segment and the one we reserved ahead: only the segment ahead,
    // contiguous with the counter's top, goes back; Rust's range below it is never reopened.
    const c = new KvId("rust-between", {
      redis: client.redis,
      minStep: 10,
      maxStep: 10,
      prefetchAt: 0.5,
      rememberStep: false,
    });
    assert.equal(await c.next(), 1);
    assert.deepEqual(await rust("rust-between", 10), [11, 12, 13, 14, 15, 16, 17, 18, 19, 20]);
    for (let i = 2; i <= 6; i++) assert.equal(await c.next(), i); // 5 left: the prefetch goes out
    for (let turns = 0; c.stats().remaining < 14; turns++) {
      assert.ok(turns < 10_000, "the prefetch never landed");
      await nextTimerTurn();
    }
    assert.equal(c.high, 30n, "21..30 reserved ahead");
    await c.close();
    assert.equal(await command(url, "HGET", "kvid", "rust-between"), "20", "only 21..30 back");

    // The same through a store that can only lower the counter (release, as Deno KV's): only
    // the contiguous top, 21..30, goes back; 7..10 below Rust's range stays a gap.
    const inner = new RedisStore(client.redis);
    const releaseOnly: Store & Release = {
      reserve: (key, field, n, o) => inner.reserve(key, field, n, o),
      release: (key, field, range) => inner.release(key, field, range),
    };
    const d = new KvId("rust-release", {
      store: releaseOnly,
      minStep: 10,
      maxStep: 10,
      prefetchAt: 0.5,
      rememberStep: false,
    });
    assert.equal(await d.next(), 1);
    await rust("rust-release", 10);
    for (let i = 2; i <= 6; i++) assert.equal(await d.next(), i);
    for (let turns = 0; d.stats().remaining < 14; turns++) {
      assert.ok(turns < 10_000, "the prefetch never landed");
      await nextTimerTurn();
    }
    await d.close();
    assert.equal(await command(url, "HGET", "kvid", "rust-release"), "20", "only 21..30 back");
  });
});
