/**
 * The core behaviours of KvId against a real server, with each npm client.
 */

import "../support/deadline.ts"; // a time limit on every test of this file
import assert from "node:assert/strict";
import { configure, KvId, KvIdError, type RedisClient } from "../../mod.ts";
import { type ClientKind, CLIENTS, openClient, Spy } from "../support/redis_clients.ts";
import { command, startServer, type TestServer } from "../support/redis_server.ts";
import { assertIncreasing, rejectsWith } from "../support/assert.ts";

/**
 * Segment rounds for the step tests (prefetch off): move the clock, let a call find the buffer
 * empty and reserve, then use the segment up.
 */
function rounds(id: KvId<number>, clock: { advance(ms: number): void }) {
  return async (ms: number, count = 1) => {
    for (let i = 0; i < count; i++) {
      clock.advance(ms);
      await id.next();
      for (let n = id.stats().remaining; n > 0; n--) await id.next();
    }
  };
}

/** A clock the test moves by hand. */
function manualClock() {
  let now = 0;
  return { now: () => now, advance: (ms: number) => void (now += ms) };
}

for (const kind of CLIENTS) {
  Deno.test(`KvId with ${kind}`, async (t) => {
    await using server = await startServer();
    await using client = await openClient(kind, server.url);
    const redis = client.redis;
    const field = (s: string) => `${kind}:${s}`;

    await t.step("100k IDs are unique and increasing, the first of a new name is 1", async () => {
      const spy = new Spy(redis);
      // giveBack off: the counter is compared with the sum of what was reserved.
      await using id = new KvId(field("uniq"), { redis: spy, giveBack: false });
      const ids: number[] = [];
      for (let i = 0; i < 100_000; i++) ids.push(await id.next());
      assert.equal(ids[0], 1);
      assertIncreasing(ids);
      await id.close(); // lets a prefetch in flight land (its range is dropped: spent)
      const s = id.stats();
      assert.ok(s.segments >= 10 && s.segments <= 40, `segments ${s.segments}`);
      const stored = BigInt(await command(server.url, "HGET", "kvid", field("uniq")) as string);
      assert.equal(stored, BigInt(spy.counts.reduce((a, b) => a + b)), "one HINCRBY per segment");
      assert.ok(id.high <= stored && id.high >= 100_000n);
    });

    await t.step(
      "1,000 concurrent calls at a boundary: one reservation in flight, all distinct",
      async () => {
        const spy = new Spy(redis);
        await using id = new KvId(field("burst"), { redis: spy, minStep: 10, maxStep: 1000 });
        const first = await Promise.all(Array.from({ length: 1000 }, () => id.next()));
        const second = await Promise.all(Array.from({ length: 1000 }, () => id.next()));
        const all = [...first, ...second];
        assert.equal(new Set(all).size, 2000);
        assertIncreasing(first); // served in call order
        assertIncreasing(second);
        assert.equal(spy.maxInflight, 1);
        // Queued callers size the reservation: the first burst took one round trip.
        assert.ok(spy.calls <= 6, `reservations ${spy.calls}`);
      },
    );

    await t.step(
      "nextBatch: increasing, distinct, few round trips, mixes with next()",
      async () => {
        const spy = new Spy(redis);
        await using id = new KvId(field("batch"), { redis: spy });
        const a = await id.nextBatch(1000);
        const b = await id.next();
        const c = await id.nextBatch(5000);
        assert.equal(a.length, 1000);
        assert.equal(c.length, 5000);
        assertIncreasing([...a, b, ...c]);
        assert.ok(spy.calls <= 4, `reservations ${spy.calls}`);
        assert.deepEqual(await id.nextBatch(0), []);
      },
    );

    await t.step("prefetch starts when 20% of the segment is left", async () => {
      const spy = new Spy(redis);
      await using id = new KvId(field("prefetch"), { redis: spy, minStep: 10, maxStep: 10 });
      assert.equal(await id.next(), 1);
      assert.equal(spy.calls, 1);
      for (let i = 2; i <= 7; i++) await id.next();
      assert.equal(id.stats().reserving, false, "no prefetch with 3 of 10 left");
      await id.next(); // the 8th leaves 2 = 20%
      assert.equal(id.stats().reserving, true, "prefetch with 2 of 10 left");
      while (id.stats().reserving) await new Promise((r) => setTimeout(r, 1));
      assert.equal(spy.calls, 2);
      assert.equal(id.stats().remaining, 12);
      for (let i = 9; i <= 20; i++) assert.equal(await id.next(), i);
      assert.equal(id.stats().stalls, 1, "only the very first call waited");
    });

    await t.step("prefetchAt 0 turns prefetch off", async () => {
      const spy = new Spy(redis);
      await using id = new KvId(field("noprefetch"), {
        redis: spy,
        minStep: 5,
        maxStep: 5,
        prefetchAt: 0,
      });
      for (let i = 1; i <= 5; i++) assert.equal(await id.next(), i);
      assert.equal(spy.calls, 1);
      assert.equal(await id.next(), 6);
      assert.equal(spy.calls, 2);
      assert.equal(id.stats().stalls, 2);
    });

    await t.step("the step doubles under load and halves when idle", async () => {
      const clock = manualClock();
      const spy = new Spy(redis);
      await using id = new KvId(field("step"), {
        redis: spy,
        minStep: 1,
        maxStep: 8,
        segmentDuration: 1000,
        prefetchAt: 0,
        clock: clock.now,
      });
      const round = rounds(id, clock);
      await round(10, 6); // fast: 10 ms per segment
      await round(5000, 5); // slow: 5 s per segment
      // The first reservation has no previous one to compare with.
      assert.deepEqual(spy.counts, [1, 1, 2, 4, 8, 8, 8, 4, 2, 1, 1]);
      // initialStep skips the ramp-up.
      const spy2 = new Spy(redis);
      await using warm = new KvId(field("step-initial"), { redis: spy2, initialStep: 500 });
      await warm.next();
      assert.deepEqual(spy2.counts, [500]);
    });

    await t.step("stepRule rate: sized by the measured rate, bounded moves", async () => {
      const clock = manualClock();
      const spy = new Spy(redis);
      await using id = new KvId(field("step-rate"), {
        redis: spy,
        maxStep: 100_000,
        segmentDuration: 1000,
        prefetchAt: 0,
        stepRule: "rate",
        clock: clock.now,
      });
      const round = rounds(id, clock);
      await round(10, 7);
      await round(100_000, 2);
      // Each step is the rate seen over the previous interval x 1 s, moving at most x16 up, /2
      // down: maxStep after 7 reservations (the doubling rule needs 18), then halving when idle.
      assert.deepEqual(spy.counts, [1, 1, 16, 100, 1600, 10_000, 100_000, 100_000, 50_000]);
    });

    await t.step("interleaves with raw HINCRBY from the Rust crate without collision", async () => {
      const name = field("rust");
      await using id = new KvId(name, { redis, minStep: 3, maxStep: 50 });
      const issued = new Set<number>();
      const rust: [number, number][] = [];
      for (let round = 0; round < 200; round++) {
        const v = Number(await command(server.url, "HINCRBY", "kvid", name, String(1 + round % 7)));
        rust.push([v - (1 + round % 7) + 1, v]);
        for (let i = 0; i < 5; i++) issued.add(await id.next());
      }
      assert.equal(issued.size, 1000);
      for (const [lo, hi] of rust) {
        for (let x = lo; x <= hi; x++) assert.ok(!issued.has(x), `${x} issued twice`);
      }
    });

    await t.step(
      "number mode stops at 2^53-1 with an unsafe error, never a rounded ID",
      async () => {
        const name = field("near53");
        await command(server.url, "HSET", "kvid", name, String(2 ** 53 - 4));
        // One ID per reservation: a reply at or above 2^53 is refused whole (ioredis rounds it,
        // so the range it stands for is unknown), and a larger step would spend the last IDs.
        await using id = new KvId(name, { redis, guard: false, maxStep: 1, prefetchAt: 0 });
        assert.equal(await id.next(), 2 ** 53 - 3);
        assert.equal(await id.next(), 2 ** 53 - 2);
        assert.equal(await id.next(), 2 ** 53 - 1);
        await rejectsWith(id.next(), "unsafe", /MAX_SAFE_INTEGER/);
      },
    );

    for (const guard of [true, false]) {
      await t.step(`bigint mode is exact above 2^53 (guard ${guard})`, async () => {
        const name = field(`big53-${guard}`);
        await command(server.url, "HSET", "kvid", name, "9007199254740990");
        await using id = new KvId(name, { redis, bigint: true, guard, minStep: 4 });
        const ids = [];
        for (let i = 0; i < 40; i++) ids.push(await id.next());
        assertIncreasing(ids);
        assert.equal(typeof ids[0], "bigint");
        // ioredis replies to a plain HINCRBY with a rounded number: that range is spent and the
        // next is read exactly by script. The node-redis adapter reads integers as strings.
        const rounded = !guard && kind === "ioredis";
        assert.equal(ids[0], rounded ? 9007199254740995n : 9007199254740991n);
        for (let i = 1; i < ids.length; i++) {
          if (ids[i] !== ids[i - 1] + 1n) {
            assert.fail(`gap inside a run at ${i}: ${ids[i - 1]}, ${ids[i]}`);
          }
        }
      });
    }

    await t.step("bigint mode reaches 2^63-1 exactly, then an overflow error", async () => {
      const name = field("big63");
      await command(server.url, "HSET", "kvid", name, "9223372036854775800");
      await using id = new KvId(name, { redis, bigint: true, maxStep: 1 });
      const ids = [];
      for (let i = 0; i < 7; i++) ids.push(await id.next());
      assert.deepEqual(ids, [1n, 2n, 3n, 4n, 5n, 6n, 7n].map((n) => 9223372036854775800n + n));
      await rejectsWith(id.next(), "overflow", /2\^63-1/);
      assert.equal(
        await command(server.url, "HGET", "kvid", name),
        "9223372036854775807",
        "no wrap-around",
      );
    });

    await t.step(
      "a field holding a non-integer is a reply error naming key and field",
      async () => {
        const name = field("abc");
        await command(server.url, "HSET", "kvid", name, "abc");
        for (const guard of [true, false]) {
          await using id = new KvId(name, { redis, guard });
          const err = await rejectsWith(id.next(), "reply", /not hold an integer/);
          assert.equal(err.key, "kvid");
          assert.equal(err.field, name);
          assert.ok(err.cause instanceof Error);
        }
        assert.equal(await command(server.url, "HGET", "kvid", name), "abc", "left untouched");
      },
    );

    await t.step("a key that is not a hash is a reply error (WRONGTYPE)", async () => {
      await command(server.url, "SET", "kvid-string", "x");
      for (const guard of [true, false]) {
        await using id = new KvId(field("wrongtype"), { redis, key: "kvid-string", guard });
        await rejectsWith(id.next(), "reply", /not a hash.*kvid-string/);
        // A refusal fails fast for the next caller too, and the generator is not wedged.
        await rejectsWith(id.next(), "reply");
      }
    });

    await t.step("a counter owned by interleaved servers is refused, not incremented", async () => {
      const name = field("interleaved");
      await command(server.url, "HSET", "kvid", name, "7", `\0layout:${name}`, "v1 servers=3");
      await using id = new KvId(name, { redis });
      await rejectsWith(id.next(), "config", /interleaved servers/);
      assert.equal(await command(server.url, "HGET", "kvid", name), "7");
    });

    await t.step("a lazy factory is called once, on first use, shared by generators", async () => {
      let calls = 0;
      const factory = () => {
        calls++;
        return Promise.resolve(redis);
      };
      const a = new KvId(field("lazy-a"), { redis: factory });
      const b = new KvId(field("lazy-b"), { redis: factory });
      assert.equal(calls, 0, "construction does no I/O");
      assert.equal(await a.next(), 1);
      assert.equal(await b.next(), 1);
      assert.equal(calls, 1);
      await a.close();
      await b.close();
    });

    await t.step("configure() sets the default client, read at first use", async () => {
      const id = new KvId(field("configured"));
      configure({ redis });
      try {
        assert.equal(await id.next(), 1);
      } finally {
        configure({ redis: undefined });
        await id.close();
      }
      await using none = new KvId(field("unconfigured"));
      await rejectsWith(none.next(), "config", /configure/);
    });

    await t.step("close() with a reservation in flight", async () => {
      const spy = new Spy(redis);
      let open!: () => void;
      spy.gate = new Promise((r) => open = r);
      const id = new KvId(field("close"), { redis: spy });
      const pending = id.next();
      const closing = id.close();
      await rejectsWith(pending, "closed");
      let closed = false;
      void closing.then(() => closed = true);
      await new Promise((r) => setTimeout(r, 20));
      assert.equal(closed, false, "close() waits for the reservation in flight");
      open();
      await closing;
      await rejectsWith(id.next(), "closed", /closed/);
      await rejectsWith(id.nextBatch(3), "closed");
      await id.close(); // twice is fine
    });

    await t.step("next() after close() rejects even with IDs buffered", async () => {
      const id = new KvId(field("close2"), { redis, minStep: 100 });
      await id.next();
      assert.ok(id.stats().remaining > 0);
      await id.close();
      await rejectsWith(id.next(), "closed");
    });
  });
}

Deno.test("auth failure is a config error, said at once", async () => {
  await using server = await startServer({ password: "s3cret" });
  // node-redis' connect() itself never settles with a wrong password: ioredis shows that one.
  for (
    const [kind, auth] of [["node-redis", ""], ["ioredis", ""], ["ioredis", ":wrong@"]] as const
  ) {
    {
      const url = server.url.replace(/\/\/[^@]*@/, `//${auth}`);
      await using client = await openClient(kind, url, { readyCheck: false });
      await using id = new KvId("order", { redis: client.redis, timeout: 60_000 });
      const started = performance.now();
      await rejectsWith(id.next(), "config", /authentication/);
      assert.ok(performance.now() - started < 30_000, `${kind} ${auth}: waited for the timeout`);
    }
  }
});

Deno.test("server down: buffered IDs flow, then a KvIdError after the timeout, then recovery", async (t) => {
  for (const kind of CLIENTS) {
    await t.step(kind, async () => {
      await using server = await startServer({ persistence: "aof" });
      await using client = await openClient(kind, server.url);
      await using id = new KvId("down", {
        redis: client.redis,
        minStep: 10,
        maxStep: 10,
        timeout: 300,
        failFast: false,
      });
      assert.equal(await id.next(), 1);
      await server.kill();
      for (let i = 2; i <= 10; i++) assert.equal(await id.next(), i, "buffered IDs keep flowing");
      const started = performance.now();
      const err = await rejectsWith(id.next(), "timeout");
      const waited = performance.now() - started;
      // At the timeout, not before (the test's own time limit catches never).
      assert.ok(waited >= 290, `rejected after ${waited} ms`);
      assert.ok(err.message.includes("down"));
      await server.restart();
      // The client reconnects on its own back-off (up to 500 ms, longer than this timeout), so
      // the first tries after the restart may still time out: recovery is the first success.
      let next: number | undefined;
      for (let attempt = 1; next === undefined; attempt++) {
        try {
          next = await id.next();
        } catch (err) {
          assert.ok(err instanceof KvIdError && err.code === "timeout", `after restart: ${err}`);
          assert.ok(attempt < 40, `no recovery in ${attempt} tries: ${err.message}`);
        }
      }
      assert.ok(next > 10, `resumed above the spent range: ${next}`);
    });
  }
});

// Keeps the type import used for documentation of the helpers above.
export type { ClientKind, RedisClient, TestServer };
