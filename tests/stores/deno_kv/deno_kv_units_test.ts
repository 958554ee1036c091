/**
 * Unit tests of `DenoKvStore` (src/stores/deno_kv/deno_kv_store.ts) on real Deno KV databases in
 * memory: each method's edges one at a time (the count refused, the guard's raise, the stats,
 * the retry limit, release only of the top, the remembered step, old days deleted but not an
 * interleaved counter named like one, the counters listed by name or all, the errors' words, a
 * database opened once and closed only when owned). The file-backed and multi-process paths are
 * in tests/stores/deno_kv/deno_kv_store_test.ts. Starts no server.
 */

import "../../support/deadline.ts"; // a time limit on every test of this file
import assert from "node:assert/strict";
import type { KvIdError } from "../../../src/contract/errors.ts";
import { MAX_ID, type ReserveOptions, stepField } from "../../../src/contract/store.ts";
import { DenoKvStore } from "../../../src/stores/deno_kv/deno_kv_store.ts";
import { shutdown } from "../../../src/runtime/shutdown.ts";
import { LAYOUT_FIELD_PREFIX } from "../../../src/stores/interleaved/layout.ts";

const PLAIN: ReserveOptions = { floor: 0n, raiseTo: 0n, guard: true, exact: true };

/** A database in memory and a store on it, both closed at the end of the scope. */
async function memory(options: ConstructorParameters<typeof DenoKvStore>[1] = {}) {
  const kv = await Deno.openKv(":memory:");
  const store = new DenoKvStore(kv, options);
  return {
    kv,
    store,
    [Symbol.dispose]() {
      store.close();
      kv.close();
    },
  };
}

/** `kv` whose atomic commits fail (`ok: false`) the first `times` times: a conflict on demand. */
function conflicting(kv: Deno.Kv, times: number): Deno.Kv & { commits: number } {
  let left = times;
  const counter = { commits: 0 };
  return new Proxy(kv, {
    get(target, key) {
      if (key === "commits") return counter.commits;
      const value = Reflect.get(target, key);
      if (key !== "atomic") return typeof value === "function" ? value.bind(target) : value;
      return () => {
        const op = target.atomic();
        return new Proxy(op, {
          get(o, k) {
            const v = Reflect.get(o, k);
            if (k !== "commit") {
              return typeof v === "function"
                ? (...args: unknown[]) => {
                  v.apply(o, args);
                  return new Proxy(o, this);
                }
                : v;
            }
            return () => {
              counter.commits++;
              if (left-- > 0) return Promise.resolve({ ok: false });
              return o.commit();
            };
          },
        });
      };
    },
  }) as Deno.Kv & { commits: number };
}

Deno.test("DenoKvStore.reserve: a positive safe count only, V-count+1..V, stats counted", async () => {
  using m = await memory();
  for (const count of [0, -1, 1.5, Number.NaN, 2 ** 53]) {
    await assert.rejects(m.store.reserve("kvid", "c", count, PLAIN), RangeError, `count ${count}`);
  }
  const a = await m.store.reserve("kvid", "c", 1, PLAIN);
  assert.deepEqual(a, { ranges: [{ first: 1n, last: 1n }], raised: false });
  const b = await m.store.reserve("kvid", "c", 9, PLAIN);
  assert.deepEqual(b.ranges, [{ first: 2n, last: 10n }]);
  assert.equal((await m.kv.get<Deno.KvU64>(["kvid", "c"])).value?.value, 10n);
  assert.deepEqual(m.store.stats(), {
    reservations: 2,
    conflicts: 0,
    busy: 0,
    maxAttempts: 1,
    exhausted: 0,
    raised: 0,
  });
  const stats = m.store.stats();
  stats.reservations = 99;
  assert.equal(m.store.stats().reservations, 2, "a copy");
});

Deno.test("DenoKvStore.reserve: below the floor, raised to raiseTo when guarded", async () => {
  using m = await memory();
  await m.kv.set(["kvid", "g"], new Deno.KvU64(5n));
  const at = { floor: 5n, raiseTo: 50n, guard: true, exact: true };
  assert.deepEqual(await m.store.reserve("kvid", "g", 2, at), {
    ranges: [{ first: 6n, last: 7n }],
    raised: false,
  }, "at the floor: not below");
  const above = { ...at, floor: 8n };
  const r = await m.store.reserve("kvid", "g", 2, above);
  assert.deepEqual(r, { ranges: [{ first: 51n, last: 52n }], raised: true });
  assert.equal(m.store.stats().raised, 1);
  const off = await m.store.reserve("kvid", "g", 1, { ...above, floor: 100n, guard: false });
  assert.deepEqual(off, { ranges: [{ first: 53n, last: 53n }], raised: false }, "no guard");
  assert.equal(m.store.stats().raised, 1);
});

Deno.test("DenoKvStore.reserve: exact up to 2^63-1, then overflow without a write", async () => {
  using m = await memory();
  await m.kv.set(["kvid", "top"], new Deno.KvU64(MAX_ID - 3n));
  assert.deepEqual((await m.store.reserve("kvid", "top", 3, PLAIN)).ranges, [{
    first: MAX_ID - 2n,
    last: MAX_ID,
  }]);
  await assert.rejects(m.store.reserve("kvid", "top", 1, PLAIN), (err: KvIdError) => {
    assert.equal(err.code, "overflow");
    assert.match(err.message, /the counter \(9223372036854775807\) plus 1 would pass 2\^63-1/);
    assert.match(err.message, /\(key \["kvid", "top"\]\)$/);
    return true;
  });
  assert.equal((await m.kv.get<Deno.KvU64>(["kvid", "top"])).value?.value, MAX_ID);
});

Deno.test("DenoKvStore.reserve: a layout is written with the first increment and echoed", async () => {
  using m = await memory();
  const layout = "v1 servers=2 block=10 index=1";
  const r = await m.store.reserve("kvid", "il", 1, { ...PLAIN, layout });
  assert.deepEqual(r, { ranges: [{ first: 1n, last: 1n }], raised: false, layout });
  assert.equal((await m.kv.get(["kvid", LAYOUT_FIELD_PREFIX + "il"])).value, layout);
  // Written once: a second reservation leaves it (its versionstamp) alone.
  const stamp = (await m.kv.get(["kvid", LAYOUT_FIELD_PREFIX + "il"])).versionstamp;
  await m.store.reserve("kvid", "il", 1, { ...PLAIN, layout });
  assert.equal((await m.kv.get(["kvid", LAYOUT_FIELD_PREFIX + "il"])).versionstamp, stamp);
  const plain = await m.store.reserve("kvid", "single", 1, PLAIN);
  assert.equal("layout" in plain, false, "no layout asked: none echoed");
  assert.equal((await m.kv.get(["kvid", LAYOUT_FIELD_PREFIX + "single"])).value, null);
  await assert.rejects(m.store.reserve("kvid", "il", 1, PLAIN), { code: "config" });
});

Deno.test("DenoKvStore.reserve: conflicts retried up to maxAttempts, counted, then given up", async () => {
  using m = await memory({ maxAttempts: 3, maxBackoff: 1 });
  const kv = conflicting(m.kv, 2);
  const store = new DenoKvStore(kv, { maxAttempts: 3, maxBackoff: 1 });
  assert.deepEqual((await store.reserve("kvid", "x", 1, PLAIN)).ranges, [{ first: 1n, last: 1n }]);
  assert.deepEqual(store.stats(), {
    reservations: 1,
    conflicts: 2,
    busy: 0,
    maxAttempts: 3,
    exhausted: 0,
    raised: 0,
  });
  const always = new DenoKvStore(conflicting(m.kv, 100), { maxAttempts: 3, maxBackoff: 1 });
  await assert.rejects(always.reserve("kvid", "x", 1, PLAIN), (err: KvIdError) => {
    assert.equal(err.code, "conflict");
    assert.match(err.message, /^the counter stayed contended: 3 check-and-set attempts/);
    return true;
  });
  assert.deepEqual(always.stats(), {
    reservations: 0,
    conflicts: 3,
    busy: 0,
    maxAttempts: 0,
    exhausted: 1,
    raised: 0,
  });
  assert.equal((await m.kv.get<Deno.KvU64>(["kvid", "x"])).value?.value, 1n, "one write only");
  store.close();
  always.close();
});

Deno.test("DenoKvStore.release: only the top range, only a counter, only once", async () => {
  using m = await memory();
  await m.store.reserve("kvid", "r", 10, PLAIN);
  assert.equal(await m.store.release("kvid", "r", { first: 0n, last: 10n }), false, "first 0");
  assert.equal(await m.store.release("kvid", "r", { first: 5n, last: 4n }), false, "reversed");
  assert.equal(await m.store.release("kvid", "r", { first: 5n, last: 9n }), false, "not the top");
  assert.equal(await m.store.release("kvid", "r", { first: 6n, last: 10n }), true);
  assert.equal((await m.kv.get<Deno.KvU64>(["kvid", "r"])).value?.value, 5n);
  assert.equal(await m.store.release("kvid", "r", { first: 6n, last: 10n }), false, "twice");
  assert.equal(await m.store.release("kvid", "r", { first: 5n, last: 5n }), true, "one ID");
  assert.equal((await m.kv.get<Deno.KvU64>(["kvid", "r"])).value?.value, 4n);
  await m.kv.set(["kvid", "n"], 4);
  assert.equal(await m.store.release("kvid", "n", { first: 4n, last: 4n }), false, "a number");
  assert.equal(await m.store.release("kvid", "none", { first: 1n, last: 1n }), false, "absent");
  // A write between the read and the commit: nothing lowered.
  const racing = new DenoKvStore(conflicting(m.kv, 1));
  await m.store.reserve("kvid", "race", 3, PLAIN);
  assert.equal(await racing.release("kvid", "race", { first: 1n, last: 3n }), false);
  assert.equal((await m.kv.get<Deno.KvU64>(["kvid", "race"])).value?.value, 3n);
  racing.close();
});

Deno.test("DenoKvStore: the remembered step is a positive safe integer, or none", async () => {
  using m = await memory();
  assert.equal(await m.store.loadStep("kvid", "s"), undefined);
  await m.store.saveStep("kvid", "s", 250);
  assert.equal(await m.store.loadStep("kvid", "s"), 250);
  assert.equal((await m.kv.get(["kvid", stepField("s")])).value, 250);
  for (const bad of [0, -5, 1.5, 2 ** 53, "250", 250n]) {
    await m.kv.set(["kvid", stepField("s")], bad);
    assert.equal(await m.store.loadStep("kvid", "s"), undefined, `stored ${String(bad)}`);
  }
  await m.kv.set(["kvid", stepField("s")], 1);
  assert.equal(await m.store.loadStep("kvid", "s"), 1);
});

Deno.test("DenoKvStore.deleteDaysBefore: old days go; today, non-days and interleaved stay", async () => {
  using m = await memory();
  await assert.rejects(m.store.deleteDaysBefore("daily", "2026-12-01"), RangeError);
  for (const day of ["20261129", "20261130", "20261201"]) {
    await m.kv.set(["daily", day], new Deno.KvU64(3n));
  }
  await m.kv.set(["daily", "order"], new Deno.KvU64(3n));
  await m.kv.set(["daily", "20261128", "deeper"], new Deno.KvU64(3n));
  await m.kv.set(["daily", "20261127"], new Deno.KvU64(1n));
  await m.kv.set(["daily", LAYOUT_FIELD_PREFIX + "20261127"], "v1 servers=2 block=10 index=0");
  await m.kv.set(["other", "20261101"], new Deno.KvU64(3n));
  // Not layouts: a name that only ends like a layout's day, a key part that is no string.
  await m.kv.set(["daily", "abcdefgh20261129"], new Deno.KvU64(3n));
  await m.kv.set(["daily", 5], new Deno.KvU64(3n));
  assert.equal(await m.store.deleteDaysBefore("daily", "20261201"), 2);
  const left = [];
  for await (const e of m.kv.list({ prefix: [] })) left.push(e.key.join("/"));
  assert.deepEqual(left.sort(), [
    `daily/${LAYOUT_FIELD_PREFIX}20261127`,
    "daily/20261127",
    "daily/20261128/deeper",
    "daily/20261201",
    "daily/5",
    "daily/abcdefgh20261129",
    "daily/order",
    "other/20261101",
  ]);
  assert.equal(await m.store.deleteDaysBefore("daily", "20261201"), 0);
  // A day written between the listing and the delete is left alone.
  await m.kv.set(["daily", "20261130"], new Deno.KvU64(1n));
  const racing = new DenoKvStore(conflicting(m.kv, 1));
  assert.equal(await racing.deleteDaysBefore("daily", "20261201"), 0);
  assert.equal(await racing.deleteDaysBefore("daily", "20261201"), 1);
  racing.close();
});

Deno.test("DenoKvStore.counters: by name in batches, or every counter, with its layout", async () => {
  using m = await memory({ prefix: ["app"] });
  const names = Array.from({ length: 12 }, (_, i) => `n${i}`);
  for (const [i, n] of names.entries()) {
    await m.kv.set(["app", "kvid", n], new Deno.KvU64(BigInt(i)));
  }
  await m.kv.set(["app", "kvid", LAYOUT_FIELD_PREFIX + "n3"], "v1 servers=2 block=10 index=1");
  await m.kv.set(["app", "kvid", stepField("n1")], 500);
  await m.kv.set(["app", "kvid", "n5", "deeper"], new Deno.KvU64(9n));
  await m.kv.set(["kvid", "n0"], new Deno.KvU64(77n));
  await m.kv.set(["app", "kvid", 5], new Deno.KvU64(1n));
  const some = await m.store.counters("kvid", { names: ["n0", "n3", "n11", "missing"] });
  assert.deepEqual([...some], [
    ["n0", { value: 0n }],
    ["n3", { value: 3n, layout: "v1 servers=2 block=10 index=1" }],
    ["n11", { value: 11n }],
  ]);
  const batched = await m.store.counters("kvid", { names });
  assert.equal(batched.size, 12, "more names than one batch");
  assert.equal(batched.get("n11")?.value, 11n);
  assert.equal(batched.get("n6")?.value, 6n);
  const all = await m.store.counters("kvid");
  assert.deepEqual([...all.keys()].sort(), [...names].sort(), "no step, layout or deeper key");
  assert.deepEqual(all.get("n3"), { value: 3n, layout: "v1 servers=2 block=10 index=1" });
  assert.deepEqual(all.get("n5"), { value: 5n }, "its own value, not a deeper key's");
  await m.kv.set(["app", "kvid", "bad"], "text");
  await assert.rejects(m.store.counters("kvid"), { code: "reply", reason: "not-a-counter" });
});

Deno.test("DenoKvStore: where a counter is, in Deno KV's words", () => {
  const store = new DenoKvStore(":memory:", { prefix: ["app", 7n, 3, new Uint8Array(4), true] });
  assert.deepEqual(store.kvKey("kvid", "order"), [
    "app",
    7n,
    3,
    new Uint8Array(4),
    true,
    "kvid",
    "order",
  ]);
  assert.equal(
    store.describe("kvid", "order"),
    'key ["app", 7n, 3, bytes(4), true, "kvid", "order"]',
  );
  assert.equal(store.describe("kvid", ""), 'key ["app", 7n, 3, bytes(4), true, "kvid"]');
  store.close();
});

Deno.test("DenoKvStore: errors of a closed store or database, a long key, anything else", async () => {
  const kv = await Deno.openKv(":memory:");
  const store = new DenoKvStore(kv);
  await assert.rejects(store.reserve("kvid", "x".repeat(3000), 1, PLAIN), (err: KvIdError) => {
    assert.equal(err.code, "config");
    assert.equal(err.reason, "name-too-long");
    return true;
  });
  kv.close();
  await assert.rejects(store.reserve("kvid", "c", 1, PLAIN), (err: KvIdError) => {
    assert.equal(err.code, "closed");
    assert.match(err.message, /^the Deno KV database is closed/);
    return true;
  });
  await assert.rejects(store.loadStep("kvid", "c"), { code: "closed" });
  await assert.rejects(store.saveStep("kvid", "c", 5), { code: "closed" });
  await assert.rejects(store.release("kvid", "c", { first: 1n, last: 1n }), { code: "closed" });
  await assert.rejects(store.deleteDaysBefore("kvid", "20260101"), { code: "closed" });
  await assert.rejects(store.counters("kvid"), { code: "closed" });
  store.close();
  store.close(); // twice is fine
  await assert.rejects(store.reserve("kvid", "c", 1, PLAIN), (err: KvIdError) => {
    assert.equal(err.code, "closed");
    assert.match(err.message, /^the DenoKvStore is closed \(key \["kvid", "c"\]\)/);
    return true;
  });
  // Any other failure of the database: a connection error, the store's words.
  const failing = new Proxy(await Deno.openKv(":memory:"), {
    get(target, key) {
      if (key === "getMany" || key === "get" || key === "set") {
        return () => Promise.reject(new Error("disk I/O error"));
      }
      const value = Reflect.get(target, key);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  const broken = new DenoKvStore(failing);
  for (
    const call of [
      () => broken.reserve("kvid", "c", 1, PLAIN),
      () => broken.loadStep("kvid", "c"),
      () => broken.saveStep("kvid", "c", 2),
      () => broken.release("kvid", "c", { first: 1n, last: 1n }),
    ]
  ) {
    await assert.rejects(call(), (err: KvIdError) => {
      assert.equal(err.code, "connection");
      assert.match(err.message, /^Deno KV failed: disk I\/O error \(key \["kvid", "c"\]\)$/);
      return true;
    });
  }
  broken.close();
  failing.close();
  // A failure that is not an Error: said as it is.
  const odd = new Proxy(await Deno.openKv(":memory:"), {
    get(target, key) {
      if (key === "get") return () => Promise.reject("a plain string");
      const value = Reflect.get(target, key);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  const oddStore = new DenoKvStore(odd);
  await assert.rejects(
    oddStore.loadStep("kvid", "c"),
    /^KvIdError: Deno KV failed: a plain string/,
  );
  await assert.rejects(oddStore.loadStep("kvid", "c"), (err: KvIdError) => {
    assert.match(err.message, /^Deno KV failed: a plain string/);
    return true;
  });
  oddStore.close();
  odd.close();
});

Deno.test("DenoKvStore: using closes what it opened; shutdown() closes only owned stores", async () => {
  let kv: Deno.Kv | undefined;
  {
    using store = new DenoKvStore(async () => kv = await Deno.openKv(":memory:"));
    await store.reserve("kvid", "u", 1, PLAIN);
  }
  await assert.rejects(kv!.get(["x"]), "closed at the end of the scope");
  // Owned (opened from a function): shutdown() closes it. Borrowed: it keeps serving.
  let ownedKv: Deno.Kv | undefined;
  const owned = new DenoKvStore(async () => ownedKv = await Deno.openKv(":memory:"));
  await owned.reserve("kvid", "o", 1, PLAIN);
  const mine = await Deno.openKv(":memory:");
  const borrowed = new DenoKvStore(mine);
  await borrowed.reserve("kvid", "b", 1, PLAIN);
  await shutdown();
  await assert.rejects(owned.reserve("kvid", "o", 1, PLAIN), { code: "closed" });
  await assert.rejects(ownedKv!.get(["x"]));
  assert.deepEqual((await borrowed.reserve("kvid", "b", 1, PLAIN)).ranges, [{
    first: 2n,
    last: 2n,
  }]);
  borrowed.close();
  mine.close();
});

Deno.test("DenoKvStore: a database from a function, opened once; closed when owned", async () => {
  let opens = 0;
  let kv: Deno.Kv | undefined;
  const store = new DenoKvStore(async () => {
    opens++;
    if (opens === 1) throw new Error("not yet");
    return kv = await Deno.openKv(":memory:");
  });
  await assert.rejects(store.reserve("kvid", "f", 1, PLAIN));
  const [a, b] = await Promise.all([
    store.reserve("kvid", "f", 1, PLAIN),
    store.reserve("kvid", "f", 1, PLAIN),
  ]);
  assert.equal(opens, 2, "a failed open tried again; then opened once for both");
  assert.notDeepEqual(a.ranges, b.ranges);
  store.close();
  await assert.rejects(kv!.get(["x"]), "owned: closed with the store");
  // A database passed in stays open.
  const mine = await Deno.openKv(":memory:");
  const borrowed = new DenoKvStore(mine);
  await borrowed.reserve("kvid", "b", 1, PLAIN);
  borrowed.close();
  assert.equal((await mine.get<Deno.KvU64>(["kvid", "b"])).value?.value, 1n);
  mine.close();
  // Closed while opening: what was opened is closed, the reservation refused.
  let opened: Deno.Kv | undefined;
  const slow = new DenoKvStore(async () => opened = await Deno.openKv(":memory:"));
  const reserving = slow.reserve("kvid", "s", 1, PLAIN);
  slow.close();
  await assert.rejects(reserving, { code: "closed" });
  await assert.rejects(opened!.get(["x"]));
});

Deno.test("DenoKvStore.durability: a committed write is durable", async () => {
  using m = await memory();
  assert.deepEqual(await m.store.durability("kvid", {} as never), {
    durable: true,
    settings: { store: "deno-kv" },
    problems: [],
    lossWithoutCrash: false,
  });
});
