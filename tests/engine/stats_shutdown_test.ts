/**
 * Operating the library in production: JSON-safe stats, shutdown(), ... (issue 15).
 */

import "../support/deadline.ts"; // a time limit on every test of this file
import assert from "node:assert/strict";
import {
  type DailyCleanupDetail,
  DailyId,
  type DailyIdStats,
  KvId,
  type KvIdStats,
} from "../../mod.ts";
import type { Store } from "../../src/stores/mod.ts";
import { DenoKvStore } from "../../src/stores/deno_kv/deno_kv_store.ts";
import type { RedisClient } from "../../mod.ts";
import { rejectsWith } from "../support/assert.ts";
import { CLIENTS, openClient, Spy } from "../support/redis_clients.ts";
import { command, startServer } from "../support/redis_server.ts";

/** `T` with every field JSON cannot carry (bigint, functions, class instances) typed never. */
type JsonSafe<T> = T extends bigint | Error | ((...a: never[]) => unknown) ? never
  : T extends object ? { [K in keyof T]: JsonSafe<T[K]> }
  : T;
// Compile-time: the stats types are plain data (a bigint or Error field fails type-checking).
const _plain = (s: KvIdStats, d: DailyIdStats): [JsonSafe<KvIdStats>, JsonSafe<DailyIdStats>] => [
  s,
  d,
];
void _plain;

/** The value with undefined keys dropped, as JSON sees it. */
function defined(value: object): unknown {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined));
}

Deno.test("stats() is JSON-safe, the exact mark stays available as a bigint", async () => {
  await using server = await startServer();
  await using client = await openClient("node-redis", server.url);
  const big = 2n ** 60n; // above 2^53: a number would round it
  await command(server.url, "HSET", "kvid", "big", String(big));
  await using id = new KvId("big", { redis: client.redis, bigint: true, minStep: 10 });
  assert.equal(await id.next(), big + 1n);
  const stats = id.stats();
  assert.equal(stats.high, String(big + 10n), "exact as a decimal string");
  assert.equal(id.high, big + 10n, "exact as a bigint");
  assert.deepEqual(JSON.parse(JSON.stringify(stats)), defined(stats));

  // A failure: lastError is a code and a message, not an Error.
  await command(server.url, "HSET", "kvid", "text", "abc");
  await using bad = new KvId("text", { redis: client.redis });
  await assert.rejects(bad.next());
  const failed = JSON.parse(JSON.stringify(bad.stats()));
  assert.equal(failed.lastError.code, "reply");
  assert.match(failed.lastError.message, /does not hold an integer/);
  assert.equal(failed.high, "0");

  await using daily = new DailyId("json", { redis: client.redis });
  await daily.next();
  const ds = daily.stats();
  assert.equal(JSON.parse(JSON.stringify(ds)).counter.high, ds.counter!.high);
});

for (const kind of CLIENTS) {
  Deno.test(`shutdown() closes generators, then factory-made ${kind} clients: the script exits`, async () => {
    await using server = await startServer();
    const dir = await Deno.makeTempDir();
    try {
      const child = new Deno.Command(Deno.execPath(), {
        args: [
          "run",
          "-A",
          new URL("../support/shutdown_exit_script.ts", import.meta.url).pathname,
          kind,
          server.url,
          `${dir}/ids.sqlite3`,
        ],
        stdout: "piped",
        stderr: "piped",
      }).spawn();
      // A hang is the failure: kill it after a limit far above a normal run (a few seconds).
      const limit = setTimeout(() => child.kill("SIGKILL"), 120_000);
      const out = await child.output();
      clearTimeout(limit);
      const text = new TextDecoder().decode(out.stdout);
      assert.equal(out.signal, null, `killed: it hung after ${JSON.stringify(text)}`);
      assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
      const [first, second] = text.trim().split("\n");
      assert.match(first, /^1 \d{8}000001 1$/);
      assert.equal(second, "shut down");
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  });
}

Deno.test("DailyId on Deno KV: keepDays and cleanup() delete old days; a store that cannot is refused", async () => {
  using kv = await Deno.openKv(":memory:");
  const key = "kvid:daily:order";
  for (const day of ["20261101", "20261122", "20261123", "20261124", "20261130"]) {
    await kv.set([key, day], new Deno.KvU64(7n));
  }
  await kv.set([key, "notes"], "not a day: left alone");
  using store = new DenoKvStore(kv);
  const clock = () => Date.UTC(2026, 10, 30, 12); // 2026-11-30
  const events: DailyCleanupDetail[] = [];
  const id = new DailyId("order", { store, clock, keepDays: 7 });
  id.addEventListener("cleanup", (e) => events.push(e.detail));
  assert.equal(await id.next(), 20261130000008, "today's counter goes on");
  await id.close(); // waits for the background cleanup
  assert.deepEqual(events, [{ before: "20261123", deleted: 2, error: undefined }]);
  const left = [];
  for await (const e of kv.list({ prefix: [key] })) left.push(e.key[1]);
  assert.deepEqual(left, ["20261123", "20261124", "20261130", "notes"]);

  await using again = new DailyId("order", { store, clock });
  assert.equal(await again.cleanup({ keepDays: 1 }), 2, "23 and 24 November");

  const bare: Store = { reserve: (...args) => store.reserve(...args) };
  assert.throws(() => new DailyId("order", { store: bare, keepDays: 7 }), /keepDays needs a store/);
  await using noCleanup = new DailyId("order", { store: bare, clock });
  await rejectsWith(noCleanup.cleanup({ keepDays: 7 }), "config", /deleteDaysBefore/);
});

Deno.test("close() gives back the unused tail when nobody reserved since, never otherwise", async (t) => {
  await using server = await startServer();
  await using client = await openClient("node-redis", server.url);
  const redis = client.redis;
  const hget = async (name: string) => await command(server.url, "HGET", "kvid", name);

  await t.step("one process: a clean restart leaves no gap", async () => {
    const first = new KvId("tail1", { redis, minStep: 100 });
    for (let i = 1; i <= 10; i++) assert.equal(await first.next(), i);
    await first.close();
    assert.equal(await hget("tail1"), "10", "IDs 11..100 given back");
    await using second = new KvId("tail1", { redis, minStep: 100 });
    assert.equal(await second.next(), 11);
  });

  await t.step("two on one counter: only the last to reserve gives back", async () => {
    const a = new KvId("tail2", { redis, minStep: 100, prefetchAt: 0 });
    const b = new KvId("tail2", { redis, minStep: 100, prefetchAt: 0 });
    assert.equal(await a.next(), 1); // a holds 1..100
    assert.equal(await b.next(), 101); // b holds 101..200
    await a.close();
    assert.equal(await hget("tail2"), "200", "b reserved after a: a's rest stays a gap");
    await b.close();
    assert.equal(await hget("tail2"), "101", "b was last: 102..200 given back");
  });

  await t.step("a reservation landing after close() is given back with the tail", async () => {
    const spy = new Spy(redis);
    const id = new KvId("tail3", { redis: spy, minStep: 10, maxStep: 10, prefetchAt: 0.5 });
    let open!: () => void;
    assert.equal(await id.next(), 1);
    spy.gate = new Promise((r) => open = r);
    for (let i = 2; i <= 6; i++) assert.equal(await id.next(), i); // crosses the prefetch mark
    await spy.sent(2); // the prefetch of 11..20 is held at the gate
    const closed = id.close();
    open();
    await closed;
    assert.equal(await hget("tail3"), "6", "7..10 and the late 11..20 given back");
  });

  await t.step("giveBack: false keeps the old behaviour (a gap)", async () => {
    const id = new KvId("tail4", { redis, minStep: 100, giveBack: false });
    await id.next();
    await id.close();
    assert.equal(await hget("tail4"), "100");
  });
});

Deno.test("close() gives back the unused tail on Deno KV too", async () => {
  using kv = await Deno.openKv(":memory:");
  using store = new DenoKvStore(kv);
  const a = new KvId("order", { store, minStep: 50, prefetchAt: 0 });
  const b = new KvId("order", { store, minStep: 50, prefetchAt: 0 });
  assert.equal(await a.next(), 1);
  assert.equal(await b.next(), 51);
  await a.close();
  assert.equal((await kv.get<Deno.KvU64>(["kvid", "order"])).value?.value, 100n, "b was after");
  await b.close();
  assert.equal((await kv.get<Deno.KvU64>(["kvid", "order"])).value?.value, 51n);
});

Deno.test("a new generator starts at the step its counter's processes last used", async (t) => {
  await using server = await startServer();
  await using client = await openClient("ioredis", server.url);
  const redis = client.redis;
  let now = 0;
  const clock = () => now;

  await t.step(
    "remembered on close, next to the counter; used within minStep..maxStep",
    async () => {
      const first = new KvId("ramp", { redis, clock, prefetchAt: 0 });
      // Segments used up in less than segmentDuration: the step doubles at each reservation.
      for (let i = 0; i < 6; i++) {
        now += 1_000;
        await first.next();
        for (let n = first.stats().remaining; n > 0; n--) await first.next();
      }
      const step = first.stats().step;
      assert.ok(step >= 16, `the step grew: ${step}`);
      await first.close();
      assert.equal(await command(server.url, "HGET", "kvid", "\0step:ramp"), String(step));

      // The size of the first reservation: the remembered step is read and applied in the
      // reserve script itself (one round trip), so it is what the generator got, not asked.
      const firstAsk = async (options: Record<string, unknown>) => {
        const spy = new Spy(redis);
        await using id = new KvId("ramp", { redis: spy, prefetchAt: 0, ...options });
        await id.next();
        assert.equal(spy.calls, 1, "one reservation");
        return id.stats().remaining + 1;
      };
      assert.equal(await firstAsk({}), step, "starts at the remembered step");
      assert.equal(await firstAsk({ maxStep: 8 }), 8, "within maxStep");
      assert.equal(await firstAsk({ minStep: step * 4 }), step * 4, "within minStep");
      assert.equal(await firstAsk({ initialStep: 2 }), 2, "an explicit initialStep wins");
      assert.equal(await firstAsk({ rememberStep: false }), 1, "off: minStep, as before");
    },
  );

  await t.step("a counter that never left minStep gets no step field", async () => {
    const id = new KvId("quiet", { redis, prefetchAt: 0, minStep: 5 });
    await id.next();
    await id.close();
    assert.equal(await command(server.url, "HGET", "kvid", "\0step:quiet"), null);
    assert.equal(await command(server.url, "HGET", "kvid", "quiet"), "1");
  });
});

Deno.test("the remembered step on Deno KV", async () => {
  using kv = await Deno.openKv(":memory:");
  using store = new DenoKvStore(kv);
  let now = 0;
  const first = new KvId("ramp", { store, clock: () => now, prefetchAt: 0 });
  for (let i = 0; i < 5; i++) {
    now += 1_000;
    await first.next();
    for (let n = first.stats().remaining; n > 0; n--) await first.next();
  }
  const step = first.stats().step;
  await first.close();
  assert.equal((await kv.get(["kvid", "\0step:ramp"])).value, step);
  await using second = new KvId("ramp", { store });
  await second.next();
  assert.equal(second.stats().remaining, step - 1);
});

Deno.test("without scripting nothing is given back and no step is remembered", async () => {
  await using server = await startServer();
  await using client = await openClient("node-redis", server.url);
  // A server that refuses scripts (as some managed Redis do): a read then a write could lower a
  // counter another process just raised, so the generator leaves the gap.
  class ReplyError extends Error {}
  const refuse = () => Promise.reject(new ReplyError("ERR unknown command 'EVALSHA'"));
  const noScripts: RedisClient = {
    hincrby: (k, f, n) => client.redis.hincrby(k, f, n),
    eval: refuse,
    evalsha: refuse,
    // Plain commands still work there: the durability probe reads INFO with them.
    sendCommand: (c, a) => client.redis.sendCommand!(c, a),
  };
  let now = 0;
  const id = new KvId("plain", { redis: noScripts, clock: () => now, prefetchAt: 0 });
  for (let i = 0; i < 4; i++) {
    now += 1_000;
    await id.next(); // 1, then 2 more, 4 more...: the step grows
    for (let n = id.stats().remaining; n > 0; n--) await id.next();
  }
  await id.next();
  const reserved = await command(server.url, "HGET", "kvid", "plain");
  await id.close();
  assert.equal(await command(server.url, "HGET", "kvid", "plain"), reserved, "left as it was");
  assert.equal(await command(server.url, "HGET", "kvid", "\0step:plain"), null);
});

Deno.test("entry points: the main one for applications, ./store for store authors", async () => {
  const main = await import("../../mod.ts");
  const store = await import("../../src/stores/mod.ts");
  for (const name of ["KvId", "DailyId", "configure", "shutdown", "KvIdError", "fromIoredis"]) {
    assert.ok(name in main, `@kvid/core exports ${name}`);
  }
  assert.ok(!("InterleavedStore" in main), "store-author classes are not in the main entry");
  assert.equal(typeof store.InterleavedStore, "function");
  assert.equal(store.stepField("order"), "\0step:order");
  const config = JSON.parse(await Deno.readTextFile(new URL("../../deno.json", import.meta.url)));
  assert.equal(config.exports["./store"], "./src/stores/mod.ts");
  // Compile time: the exact ID type by option, and no store types from the main entry.
  const big: KvId<bigint> = new KvId("big", { bigint: true, store: { reserve: () => never() } });
  const num: KvId<number> = new KvId("num", { store: { reserve: () => never() } });
  await big.close();
  await num.close();
  // @ts-expect-error Store is in "@kvid/core/store", not in "@kvid/core"
  type _NotInMain = import("../../mod.ts").Store;
});

function never(): never {
  throw new Error("not reached");
}
