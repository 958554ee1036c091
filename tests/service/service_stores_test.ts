/**
 * The service's generators on several real stores (Redis from tests/support/redis_server.ts, through the
 * service's `redis` option; Deno KV on a file in a temp dir; the in-memory reference store):
 * what the service wraps around the store (its timing wrapper, `timedStore`) leaves every
 * optional Store method in place, so give-back on close and the remembered step work through
 * the service as they do for a `KvId` on the store itself.
 */

import "../support/deadline.ts"; // a time limit on every test of this file
import assert from "node:assert/strict";
import { createHandler, type ServiceOptions } from "../../src/service/mod.ts";
import { timedStore } from "../../src/service/generators.ts";
import { Histogram } from "../../src/service/histogram.ts";
import type { AnyStore } from "../../src/contract/store.ts";
import { RedisStore } from "../../src/stores/redis/redis_store.ts";
import { DenoKvStore } from "../../src/stores/deno_kv/deno_kv_store.ts";
import { openClient } from "../support/redis_clients.ts";
import { startServer } from "../support/redis_server.ts";
import { MemoryStore } from "../support/memory_store.ts";

/** Every optional capability of the Store contract, by member. */
const OPTIONAL = [
  "release",
  "giveBack",
  "loadStep",
  "saveStep",
  "deleteDaysBefore",
  "now",
  "durability",
  "reservesStep",
  "counters",
  "forgetReads",
] as const;

/** One store under test: how the service is given it, and the same store for assertions. */
interface Subject {
  /** What `createHandler` is given: `{ store }`, or `{ redis }`. */
  source: Pick<ServiceOptions, "store" | "redis">;
  /** The store itself, to read the counters with. */
  store: AnyStore;
}

const RAW = { floor: 0n, raiseTo: 0n, guard: true, exact: true } as const;

async function ids(service: ReturnType<typeof createHandler>, name: string, count: number) {
  const res = await service.fetch(
    new Request(`http://localhost/v1/ids/${name}?count=${count}`, { method: "POST" }),
  );
  const body = await res.text();
  assert.equal(res.status, 200, body);
  return body.trim().split("\n").map(BigInt);
}

function serviceOn(subject: Subject, names?: ServiceOptions["names"]) {
  return createHandler({ ...subject.source, auth: "none", log: () => {}, names });
}

async function runOn(t: Deno.TestContext, subject: Subject): Promise<void> {
  const { store } = subject;

  await t.step("the timing wrapper has exactly the optional methods the store has", () => {
    const counters = {
      failures: 0,
      reservations: 0,
      lastReservationAt: null,
      lastReservationMs: null,
      histogram: new Histogram(),
    };
    const timed = timedStore(store, counters, 1_000);
    for (const member of OPTIONAL) {
      assert.equal(typeof timed[member], typeof store[member], member);
      if (member === "reservesStep") assert.equal(timed[member], store[member]);
    }
  });

  await t.step("give-back on close: another process takes the unused IDs first", async () => {
    const name = `giveback-${crypto.randomUUID()}`;
    const names = { "*": { initialStep: 100 } };
    // Two services on one counter: a holds 2..100, b holds 102..200 (the top).
    const a = serviceOn(subject, names);
    const b = serviceOn(subject, names);
    assert.deepEqual(await ids(a, name, 1), [1n]);
    assert.deepEqual(await ids(b, name, 1), [101n]);
    await a.close(); // not at the top: to the counter's pool where the store has one
    await b.close(); // at the top: the counter goes back to 101
    const c = serviceOn(subject, names);
    try {
      const [first] = await ids(c, name, 1);
      // A store with giveBack pools a's 2..100 and c takes from it first; one with release
      // only loses a's tail and gives c the first ID above b's.
      assert.equal(first, store.giveBack !== undefined ? 2n : 102n);
    } finally {
      await c.close();
    }
    const after = await store.reserve("kvid", name, 1, RAW);
    assert.ok(
      after.ranges[0].first <= 103n,
      `b's tail was not given back: ${after.ranges[0].first}`,
    );
  });

  await t.step("the remembered step: saved on close, the next service starts from it", async () => {
    const name = `step-${crypto.randomUUID()}`;
    const a = serviceOn(subject);
    let last = 0n;
    // Segments used up at once: the step grows from 1 with every reservation.
    for (let i = 0; i < 6; i++) last = (await ids(a, name, 1_000)).at(-1)!;
    await a.close();
    const step = await store.loadStep!("kvid", name);
    assert.ok(step !== undefined && step > 1, `no step remembered: ${step}`);
    const b = serviceOn(subject);
    try {
      assert.deepEqual(await ids(b, name, 1), [last + 1n]); // a's tail was given back
      // b's first reservation took the remembered step: the counter rose by it at once.
      const next = await store.reserve("kvid", name, 1, RAW);
      assert.ok(
        next.ranges[0].first >= last + 1n + BigInt(step),
        `b reserved ${next.ranges[0].first - last - 2n} IDs, not the remembered ${step}`,
      );
    } finally {
      await b.close();
    }
  });
}

Deno.test("service stores: Redis, through the redis option", async (t) => {
  await using server = await startServer({ persistence: "aof" });
  await using client = await openClient("node-redis", server.url);
  await runOn(t, { source: { redis: client.redis }, store: new RedisStore(client.redis) });
});

Deno.test("service stores: Deno KV on a file", async (t) => {
  const dir = await Deno.makeTempDir({ prefix: "kvid-service-kv-" });
  try {
    using store = new DenoKvStore(`${dir}/ids.sqlite3`);
    await runOn(t, { source: { store }, store });
    await t.step(
      "a name past Deno KV's key size: 400 bad_name, by the error's reason",
      async () => {
        await using service = serviceOn({ source: { store }, store });
        const long = "n".repeat(3_000); // within KvId's 4,096 bytes, past the 2 KiB key
        for (
          const req of [
            new Request(`http://localhost/v1/ids/${long}`, { method: "POST" }),
            new Request(`http://localhost/v1/segments/${long}`, {
              method: "POST",
              headers: { "content-type": "application/json" },
              body: JSON.stringify({ count: 10 }),
            }),
          ]
        ) {
          const res = await service.fetch(req);
          const body = await res.json();
          assert.equal(res.status, 400, JSON.stringify(body));
          assert.equal(body.error.code, "bad_name");
          assert.match(body.error.message, /too long for this store/);
        }
      },
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("service stores: the in-memory reference store", async (t) => {
  const store = new MemoryStore();
  await runOn(t, { source: { store }, store });
});
