/**
 * Operating the library in production: JSON-safe stats, shutdown(), ... (issue 15).
 */

import assert from "node:assert/strict";
import {
  type DailyCleanupDetail,
  DailyId,
  type DailyIdStats,
  KvId,
  type KvIdStats,
  type Store,
} from "../mod.ts";
import { DenoKvStore } from "../src/deno_kv_store.ts";
import { rejectsWith } from "./assert.ts";
import { CLIENTS, openClient } from "./clients.ts";
import { command, startServer } from "./server.ts";

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
          new URL("./operable/exits_script.ts", import.meta.url).pathname,
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
