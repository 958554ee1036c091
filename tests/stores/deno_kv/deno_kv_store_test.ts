/**
 * DenoKvStore against real `Deno.openKv` files: the same engine and guarantees as on Redis.
 */

import "../../support/deadline.ts"; // a time limit on every test of this file
import assert from "node:assert/strict";
import { KvId, KvIdError } from "../../../mod.ts";
import type { ReserveOptions } from "../../../src/stores/mod.ts";
import { DenoKvStore, type DenoKvStoreStats } from "../../../src/stores/deno_kv/deno_kv_store.ts";
import { assertIncreasing, rejectsWith } from "../../support/assert.ts";
import { lines } from "../../support/lines.ts";

const PLAIN: ReserveOptions = { floor: 0n, raiseTo: 0n, guard: true, exact: true };

/**
 * `kv`, where the first `times` reads (`get`, or `getMany` of the counter first) are each
 * followed by another writer's write of the same value to that key, before the reader can
 * commit: a conflict on demand, not by timing.
 */
function writeAfterRead(kv: Deno.Kv, times: number): Deno.Kv {
  let left = times;
  return new Proxy(kv, {
    get(target, key) {
      const value = Reflect.get(target, key);
      if (key === "get") {
        return async (k: Deno.KvKey) => {
          const entry = await target.get(k);
          if (left > 0) {
            left--;
            await target.set(k, entry.value ?? new Deno.KvU64(0n));
          }
          return entry;
        };
      }
      if (key === "getMany") {
        // The counter is the first key read (its layout entry the second).
        return async (keys: Deno.KvKey[]) => {
          const entries = await target.getMany(keys);
          if (left > 0) {
            left--;
            await target.set(keys[0], entries[0].value ?? new Deno.KvU64(0n));
          }
          return entries;
        };
      }
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

/** A fresh temporary directory holding a KV file path, removed on dispose. */
async function tempKvFile(): Promise<{ path: string } & AsyncDisposable> {
  const dir = await Deno.makeTempDir({ prefix: "kvid-kv-" });
  return {
    path: `${dir}/ids.sqlite3`,
    [Symbol.asyncDispose]: () => Deno.remove(dir, { recursive: true }),
  };
}

Deno.test("DenoKvStore on a KV file", async (t) => {
  await using file = await tempKvFile();
  const kv = await Deno.openKv(file.path);
  try {
    const store = new DenoKvStore(kv);

    await t.step(
      "reply V means V-count+1..V; a new name starts at 1; KvU64 at [key, name]",
      async () => {
        const a = await store.reserve("kvid", "basic", 10, PLAIN);
        const b = await store.reserve("kvid", "basic", 5, PLAIN);
        assert.deepEqual(a, { ranges: [{ first: 1n, last: 10n }], raised: false });
        assert.deepEqual(b, { ranges: [{ first: 11n, last: 15n }], raised: false });
        const entry = await kv.get(["kvid", "basic"]);
        assert.ok(entry.value instanceof Deno.KvU64);
        assert.equal(entry.value.value, 15n);
        // The hash key keeps its meaning: another key is another counter.
        const c = await store.reserve("tenant-a", "basic", 3, PLAIN);
        assert.deepEqual(c.ranges, [{ first: 1n, last: 3n }]);
        assert.equal((await kv.get<Deno.KvU64>(["tenant-a", "basic"])).value?.value, 3n);
      },
    );

    await t.step("a prefix namespaces the counters", async () => {
      const prefixed = new DenoKvStore(kv, { prefix: ["app", 1] });
      assert.deepEqual(prefixed.kvKey("kvid", "x"), ["app", 1, "kvid", "x"]);
      await prefixed.reserve("kvid", "basic", 4, PLAIN);
      assert.equal((await kv.get<Deno.KvU64>(["app", 1, "kvid", "basic"])).value?.value, 4n);
      assert.equal((await kv.get<Deno.KvU64>(["kvid", "basic"])).value?.value, 15n);
    });

    await t.step("KvId on it: 20k IDs unique and increasing, few reservations", async () => {
      let asked = 0n;
      const counting = {
        reserve: (...args: Parameters<DenoKvStore["reserve"]>) => {
          asked += BigInt(args[2]);
          return store.reserve(...args);
        },
      };
      await using id = new KvId("engine", { store: counting });
      const ids: number[] = [];
      for (let i = 0; i < 20_000; i++) ids.push(await id.next());
      assert.equal(ids[0], 1);
      assertIncreasing(ids);
      const batch = await id.nextBatch(5000);
      assertIncreasing([ids.at(-1)!, ...batch]);
      await id.close(); // lets a prefetch in flight land
      const s = id.stats();
      assert.ok(s.segments >= 5 && s.segments <= 30, `segments ${s.segments}`);
      const stored = (await kv.get<Deno.KvU64>(["kvid", "engine"])).value?.value;
      assert.equal(stored, asked, "one commit per reservation");
      assert.ok(id.high <= asked && id.high >= 25_000n);
    });

    await t.step("bigint mode, exact to 2^63-1, then overflow without wrapping", async () => {
      const max = (1n << 63n) - 1n;
      await kv.set(["kvid", "big"], new Deno.KvU64(max - 7n));
      await using id = new KvId("big", { store, bigint: true, maxStep: 1 });
      const ids: bigint[] = [];
      for (let i = 0; i < 7; i++) ids.push(await id.next());
      assert.deepEqual(ids, [6n, 5n, 4n, 3n, 2n, 1n, 0n].map((n) => max - n));
      await rejectsWith(id.next(), "overflow", /2\^63-1/);
      assert.equal((await kv.get<Deno.KvU64>(["kvid", "big"])).value?.value, max);
      await kv.set(["kvid", "huge"], new Deno.KvU64(max + 1n));
      await rejectsWith(store.reserve("kvid", "huge", 1, PLAIN), "overflow", /above 2\^63-1/);
    });

    await t.step("number mode stops at 2^53-1 with an unsafe error", async () => {
      await kv.set(["kvid", "near53"], new Deno.KvU64(BigInt(2 ** 53 - 3)));
      await using id = new KvId("near53", { store });
      assert.equal(await id.next(), 2 ** 53 - 2);
      assert.equal(await id.next(), 2 ** 53 - 1);
      await rejectsWith(id.next(), "unsafe");
    });

    await t.step("floor guard: a counter that went back is raised, raised: true", async () => {
      await kv.set(["kvid", "floor"], new Deno.KvU64(5n));
      const r = await store.reserve("kvid", "floor", 10, {
        floor: 100n,
        raiseTo: 110n,
        guard: true,
        exact: false,
      });
      assert.deepEqual(r, { ranges: [{ first: 111n, last: 120n }], raised: true });
      // At or above the floor nothing is raised; without guard the floor is ignored.
      const same = await store.reserve("kvid", "floor", 1, {
        floor: 120n,
        raiseTo: 200n,
        guard: true,
        exact: false,
      });
      assert.deepEqual(same, { ranges: [{ first: 121n, last: 121n }], raised: false });
      const unguarded = await store.reserve("kvid", "floor", 1, {
        floor: 999n,
        raiseTo: 999n,
        guard: false,
        exact: false,
      });
      assert.deepEqual(unguarded, { ranges: [{ first: 122n, last: 122n }], raised: false });
    });

    await t.step(
      "KvId rollback: the counter reset below issued IDs is raised, event fired",
      async () => {
        await using id = new KvId("rollback", { store, minStep: 10, maxStep: 10, prefetchAt: 0 });
        const events: bigint[] = [];
        id.addEventListener("rollback", (e) => {
          events.push((e as CustomEvent<{ floor: bigint }>).detail.floor);
        });
        for (let i = 1; i <= 10; i++) assert.equal(await id.next(), i);
        await kv.delete(["kvid", "rollback"]); // the data was lost
        assert.equal(await id.next(), 11, "continues above what it issued");
        assert.deepEqual(events, [10n]);
        assert.equal(id.stats().rollbacks, 1);
      },
    );

    await t.step("an entry that is not a counter is a reply error, left untouched", async () => {
      await kv.set(["kvid", "text"], "abc");
      const err = await rejectsWith(store.reserve("kvid", "text", 1, PLAIN), "reply");
      assert.equal(err.field, "text");
      assert.equal((await kv.get(["kvid", "text"])).value, "abc");
      await kv.set(["kvid", "bigint"], 41n); // a plain bigint is read, written back as KvU64
      assert.deepEqual((await store.reserve("kvid", "bigint", 1, PLAIN)).ranges, [
        { first: 42n, last: 42n },
      ]);
    });

    await t.step("a key over 2 KiB is a config error", async () => {
      const long = store.reserve("kvid", "x".repeat(2100), 1, PLAIN);
      const err = await rejectsWith(long, "config", /2 KiB/);
      assert.equal(err.reason, "name-too-long", "the service branches on it");
    });

    await t.step("conflicts: 16 concurrent reservations on one counter, all disjoint", async () => {
      const contended = new DenoKvStore(kv, { maxAttempts: 64 });
      const replies = await Promise.all(
        Array.from({ length: 16 }, () => contended.reserve("kvid", "race", 3, PLAIN)),
      );
      const firsts = replies.map((r) => r.ranges[0].first).sort((a, b) => Number(a - b));
      assert.deepEqual(firsts, Array.from({ length: 16 }, (_, i) => BigInt(1 + 3 * i)));
      const s = contended.stats();
      assert.equal(s.reservations, 16);
      // Whether they conflicted depends on how the reads and commits interleave: see below.
      assert.ok(s.maxAttempts >= 1 && s.maxAttempts <= 64, `max attempts ${s.maxAttempts}`);
      assert.equal(s.exhausted, 0);
    });

    await t.step("a conflict (a write between the read and the commit) is retried", async () => {
      const store = new DenoKvStore(writeAfterRead(kv, 1), { maxAttempts: 2 });
      const reply = await store.reserve("kvid", "raced", 3, PLAIN);
      assert.deepEqual(reply.ranges, [{ first: 1n, last: 3n }]);
      const s = store.stats();
      assert.equal(s.conflicts, 1, "the first commit saw the other write");
      assert.equal(s.maxAttempts, 2);
    });

    await t.step(
      "bounded retries: with maxAttempts 1 the losers give up with a conflict error",
      async () => {
        // The first reservation's read is followed by another write: it loses, the rest win.
        const impatient = new DenoKvStore(writeAfterRead(kv, 1), { maxAttempts: 1 });
        const settled = [];
        for (let i = 0; i < 8; i++) {
          settled.push(
            await impatient.reserve("kvid", "giveup", 1, PLAIN).then(
              (value) => ({ status: "fulfilled", value }) as const,
              (reason) => ({ status: "rejected", reason }) as const,
            ),
          );
        }
        const lost = settled.filter((r) => r.status === "rejected");
        assert.equal(lost.length, 1, `${lost.length} of 8 gave up`);
        for (const r of lost) {
          const err = (r as PromiseRejectedResult).reason;
          assert.ok(err instanceof KvIdError && err.code === "conflict", String(err));
          assert.match(err.message, /contended: 1 check-and-set/);
        }
        assert.equal(impatient.stats().exhausted, lost.length);
        const won = (await kv.get<Deno.KvU64>(["kvid", "giveup"])).value?.value;
        assert.equal(won, BigInt(8 - lost.length), "a loser wrote nothing");
      },
    );
  } finally {
    kv.close();
  }
});

Deno.test("DenoKvStore opens lazily, once, and closes what it opened", async () => {
  await using file = await tempKvFile();
  let opens = 0;
  const store = new DenoKvStore(() => {
    opens++;
    return Deno.openKv(file.path);
  });
  assert.equal(opens, 0, "construction does no I/O");
  const replies = await Promise.all([
    store.reserve("kvid", "lazy", 1, PLAIN),
    store.reserve("kvid", "lazy", 1, PLAIN),
  ]);
  assert.equal(opens, 1);
  assert.equal(replies.length, 2);
  store.close();
  await rejectsWith(store.reserve("kvid", "lazy", 1, PLAIN), "closed");
  store.close(); // twice is fine

  // A path: nothing is created until the first reservation.
  const other = `${file.path}.other`;
  {
    using byPath = new DenoKvStore(other);
    await assert.rejects(Deno.stat(other), Deno.errors.NotFound);
    await byPath.reserve("kvid", "lazy", 1, PLAIN);
    await Deno.stat(other);
  }
  // Closed before the first reservation: nothing opened, nothing leaked.
  const never = new DenoKvStore(other);
  never.close();
  await rejectsWith(never.reserve("kvid", "lazy", 1, PLAIN), "closed");

  // A failed open is a connection error and is tried again.
  let tries = 0;
  using flaky = new DenoKvStore(() => {
    if (++tries === 1) throw new Error("not yet");
    return Deno.openKv(":memory:");
  });
  await rejectsWith(flaky.reserve("kvid", "x", 1, PLAIN), "connection", /could not open/);
  assert.deepEqual((await flaky.reserve("kvid", "x", 1, PLAIN)).ranges, [{ first: 1n, last: 1n }]);
});

Deno.test("restart continuity: close the file, reopen it, IDs continue where they stopped", async () => {
  await using file = await tempKvFile();
  let high = 0n;
  let stored = 0n;
  let last = 0;
  {
    using store = new DenoKvStore(file.path);
    await using id = new KvId("restart", { store, minStep: 100 });
    for (let i = 0; i < 250; i++) last = await id.next();
    await id.close(); // lets a prefetch in flight land, then gives the unused rest back
    high = id.high;
    assert.ok(high > BigInt(last), "a segment was still buffered");
  }
  {
    using kv = await Deno.openKv(file.path);
    stored = (await kv.get<Deno.KvU64>(["kvid", "restart"])).value!.value;
    assert.equal(stored, BigInt(last), "nobody reserved since: the unused rest was given back");
  }
  {
    using store = new DenoKvStore(file.path);
    await using id = new KvId("restart", { store });
    const next = await id.next();
    assert.equal(BigInt(next), stored + 1n, "no gap across a clean restart");
  }
});

Deno.test("a locked database is retried like a conflict; other failures are connection errors", async () => {
  using real = await Deno.openKv(":memory:");
  let failures: Error[] = [];
  // A Deno.Kv whose commits fail while `failures` holds errors, as SQLite does when another
  // process holds the write lock.
  const flaky = {
    get: real.get.bind(real),
    getMany: real.getMany.bind(real),
    atomic: () => {
      const op = real.atomic();
      const commit = op.commit.bind(op);
      op.commit = () => {
        const err = failures.shift();
        return err ? Promise.reject(err) : commit();
      };
      return op;
    },
  } as unknown as Deno.Kv;
  const store = new DenoKvStore(flaky);
  failures = [new TypeError("database is locked"), new TypeError("database is locked")];
  assert.deepEqual((await store.reserve("kvid", "busy", 2, PLAIN)).ranges, [
    { first: 1n, last: 2n },
  ]);
  assert.equal(store.stats().busy, 2);
  assert.equal(store.stats().conflicts, 0, "a locked database is not a conflict");
  assert.equal(store.stats().maxAttempts, 3);
  failures = [new Error("connection reset")];
  const err = await rejectsWith(store.reserve("kvid", "busy", 1, PLAIN), "connection", /reset/);
  assert.ok(err.cause instanceof Error);
  assert.equal((await real.get<Deno.KvU64>(["kvid", "busy"])).value?.value, 2n, "not written");
});

Deno.test("constructor validation", () => {
  assert.throws(() => new DenoKvStore(42 as unknown as string), TypeError);
  assert.throws(() => new DenoKvStore(":memory:", { maxAttempts: 0 }), RangeError);
  assert.throws(() => new DenoKvStore(":memory:", { maxBackoff: -1 }), RangeError);
  assert.throws(() => new DenoKvStore(":memory:", { prefix: "x" as unknown as [] }), TypeError);
  assert.throws(() => new DenoKvStore(":memory:", { prefix: [{}] as unknown as [] }), TypeError);
});

interface WorkerResult {
  ids: number[];
  store: DenoKvStoreStats;
  segments: number;
}

Deno.test("4 processes sharing one KV file: all IDs unique, conflicts retried", async () => {
  await using file = await tempKvFile();
  const worker = new URL("../../support/deno_kv_worker.ts", import.meta.url).pathname;
  const PROCESSES = 4;
  // maxStep 1: every ID is a reservation, so the four writers contend all the time.
  const COUNT = 600;
  const children = Array.from({ length: PROCESSES }, () =>
    new Deno.Command(Deno.execPath(), {
      args: ["run", "--unstable-kv", "-A", worker, file.path, "shared", String(COUNT), "1"],
      stdin: "piped",
      stdout: "piped",
      stderr: "piped",
    }).spawn());
  const outputs = children.map((c) => lines(c.stdout));
  const stderrs = children.map((c) => new Response(c.stderr).text());
  try {
    // Start all producers together once each is ready.
    for (const out of outputs) assert.equal((await out.next()).value, "ready");
    for (const c of children) {
      const w = c.stdin.getWriter();
      await w.write(new TextEncoder().encode("go\n"));
      await w.close();
    }
    const results: WorkerResult[] = [];
    for (const out of outputs) {
      const line = await out.next();
      assert.ok(!line.done, "a producer printed no result");
      results.push(JSON.parse(line.value));
      for await (const _ of out) { /* drain */ }
    }
    const statuses = await Promise.all(children.map((c) => c.status));
    const errors = await Promise.all(stderrs);
    statuses.forEach((s, i) => assert.ok(s.success, `producer ${i} failed: ${errors[i]}`));

    const all = new Set<number>();
    for (const [i, r] of results.entries()) {
      assert.equal(r.ids.length, COUNT);
      assertIncreasing(r.ids, `producer ${i}`);
      for (const id of r.ids) all.add(id);
    }
    assert.equal(all.size, PROCESSES * COUNT, "no ID was handed out twice");
    const conflicts = results.reduce((n, r) => n + r.store.conflicts, 0);
    const reservations = results.reduce((n, r) => n + r.store.reservations, 0);
    const busy = results.reduce((n, r) => n + r.store.busy, 0);
    const exhausted = results.reduce((n, r) => n + r.store.exhausted, 0);
    const maxAttempts = results.reduce((m, r) => Math.max(m, r.store.maxAttempts), 0);
    // The counter holds at least every ID handed out; nothing was reserved twice.
    const kv = await Deno.openKv(file.path);
    try {
      const counter = (await kv.get<Deno.KvU64>(["kvid", "shared"])).value?.value ?? 0n;
      // Each producer's IDs increase (asserted above): its last is its highest.
      const highest = results.reduce((m, r) => Math.max(m, r.ids.at(-1)!), 0);
      assert.ok(counter >= BigInt(highest), `counter ${counter}`);
    } finally {
      kv.close();
    }
    console.log(
      `  ${PROCESSES} processes: ${reservations} reservations, ${conflicts} conflicts and ` +
        `${busy} locked-database retries, max ${maxAttempts} attempts for one, ` +
        `${exhausted} gave up (and were retried by the generator)`,
    );
    assert.ok(conflicts + busy > 0, "four writers on one counter contended");
  } finally {
    for (const c of children) {
      try {
        c.kill();
      } catch { /* already exited */ }
    }
    await Promise.allSettled(children.map((c) => c.status));
    // Cancel unread output so no pipe is left open.
    await Promise.allSettled(outputs.map((out) => out.return(undefined)));
    await Promise.allSettled(stderrs);
  }
});

Deno.test("setup mistakes fail at once as config: a directory that does not exist", async () => {
  await using file = await tempKvFile();
  const path = file.path.replace(/ids\.sqlite3$/, "missing/ids.sqlite3");
  using store = new DenoKvStore(path);
  // A long timeout: a mistake waiting cannot fix must not wait it out.
  await using id = new KvId("setup", { store, timeout: 60_000 });
  const started = performance.now();
  const err = await rejectsWith(id.next(), "config", /does its directory exist/);
  assert.ok(performance.now() - started < 30_000, "waited for the timeout");
  assert.ok(err.message.includes("missing/ids.sqlite3"), err.message);
  // Said again to the next caller, not turned into a timeout.
  await rejectsWith(id.next(), "config");
});

Deno.test("setup mistakes fail at once as config: a run without --unstable-kv", async () => {
  const store = new URL("../../../src/stores/deno_kv/deno_kv_store.ts", import.meta.url).href;
  const kvid = new URL("../../../mod.ts", import.meta.url).href;
  const script = `
    import { KvId } from ${JSON.stringify(kvid)};
    import { DenoKvStore } from ${JSON.stringify(store)};
    await using id = new KvId("setup", { store: new DenoKvStore(":memory:"), timeout: 60000 });
    const started = performance.now();
    try { await id.next(); console.log("no error"); } catch (e) {
      console.log(JSON.stringify({ code: e.code, message: e.message, ms: performance.now() - started }));
    }`;
  // --no-config: this project's deno.json turns the flag on.
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["eval", "--no-config", script],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(out.stdout).trim();
  assert.ok(out.success, new TextDecoder().decode(out.stderr));
  const result = JSON.parse(text);
  assert.equal(result.code, "config", text);
  assert.match(result.message, /--unstable-kv/);
  assert.ok(result.ms < 30_000, `waited ${result.ms} ms`);
});
