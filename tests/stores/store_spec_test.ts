/**
 * Every store runs the shared spec (tests/stores/store_spec.ts): Redis through both npm clients
 * (Valkey too, when `.ci/run` runs this file again with `KVID_TEST_SERVER=valkey-server`),
 * interleaved Redis servers, interleaved Redis and Deno KV, Deno KV on a file, and the in-memory
 * reference store. Elsewhere: PostgreSQL (tests/postgres_store_test.ts), MySQL
 * (tests/mysql_store_test.ts), interleaved PostgreSQL and MariaDB (tests/sql_spec_test.ts),
 * `HttpStore` (tests/http_store_test.ts).
 */

import "../deadline.ts"; // a time limit on every test of this file
import { RedisStore } from "../../src/stores/redis/redis_store.ts";
import { InterleavedStore } from "../../src/stores/interleaved/interleaved_store.ts";
import { DenoKvStore } from "../../src/stores/deno_kv/deno_kv_store.ts";
import { createClient } from "redis";
import { fromNodeRedis } from "../../mod.ts";
import { type ClientKind, CLIENTS, openClient } from "../clients.ts";
import { command, EXTERNAL_SERVER, startServer } from "../server.ts";
import { MemoryStore } from "./memory_store.ts";
import { runStoreSpec } from "./store_spec.ts";
import type { Store } from "../../src/stores/mod.ts";

/**
 * A client of `kind` on `url` that fails at once once its server is gone: ioredis without its
 * offline queue; node-redis without reconnecting either (its reconnect sleep is a timer that
 * `destroy()` does not clear, seen by the sanitizer in a later test).
 */
async function failingClient(kind: ClientKind, url: string) {
  if (kind === "ioredis") return await openClient(kind, url, { failFast: true });
  const client = createClient({
    url,
    disableOfflineQueue: true,
    socket: { reconnectStrategy: false, connectTimeout: 2_000 },
  });
  client.on("error", () => {});
  await client.connect();
  return {
    redis: fromNodeRedis(client),
    close: () => Promise.resolve(client.isOpen ? client.destroy() : undefined),
  };
}

/**
 * `count` Redis stores through `kind` on servers this makes and kills: none without servers of
 * its own (`KVID_TEST_URL`), the case then shown as ignored.
 */
function deadRedis(kind: ClientKind, wrap: (stores: Store[]) => Store = (s) => s[0], count = 1) {
  if (EXTERNAL_SERVER) return undefined;
  return async () => {
    const servers = await Promise.all(Array.from({ length: count }, () => startServer()));
    const clients = await Promise.all(servers.map((server) => failingClient(kind, server.url)));
    for (const server of servers) await server.kill();
    return {
      store: wrap(clients.map((c) => new RedisStore(c.redis))),
      async [Symbol.asyncDispose]() {
        for (const c of clients) await c.close();
        for (const server of servers) await server.stop();
      },
    };
  };
}

Deno.test("store spec: the in-memory reference store", async (t) => {
  await runStoreSpec(t, { store: new MemoryStore(), contiguous: true });
});

for (const kind of CLIENTS) {
  Deno.test(`store spec: RedisStore through ${kind}`, async (t) => {
    await using server = await startServer({ persistence: "aof" });
    await using client = await openClient(kind, server.url);
    await runStoreSpec(t, {
      store: new RedisStore(client.redis),
      contiguous: true,
      layout: true,
      corrupt: async (key, field) => void await command(server.url, "HSET", key, field, "x1"),
      durable: true,
      unreachable: deadRedis(kind),
    });
  });
}

Deno.test("store spec: InterleavedStore over two Redis servers", async (t) => {
  await using a = await startServer({ persistence: "aof" });
  await using b = await startServer({ persistence: "aof" });
  await using ca = await openClient("node-redis", a.url);
  await using cb = await openClient("node-redis", b.url);
  await runStoreSpec(t, {
    store: new InterleavedStore([new RedisStore(ca.redis), new RedisStore(cb.redis)], {
      block: 4,
    }),
    contiguous: false,
    durable: true,
    unreachable: deadRedis("node-redis", (stores) => new InterleavedStore(stores, { block: 4 }), 2),
  });
});

Deno.test("store spec: InterleavedStore over a Redis server and a Deno KV file", async (t) => {
  await using a = await startServer({ persistence: "aof" });
  await using ca = await openClient("ioredis", a.url);
  const dir = await Deno.makeTempDir({ prefix: "kvid-spec-mixed-" });
  try {
    using kv = new DenoKvStore(`${dir}/ids.sqlite3`);
    await runStoreSpec(t, {
      store: new InterleavedStore([new RedisStore(ca.redis), kv], { block: 4 }),
      contiguous: false,
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("store spec: DenoKvStore on a file", async (t) => {
  const dir = await Deno.makeTempDir({ prefix: "kvid-spec-kv-" });
  try {
    const kv = await Deno.openKv(`${dir}/ids.sqlite3`);
    try {
      const store = new DenoKvStore(kv);
      await runStoreSpec(t, {
        store,
        contiguous: true,
        layout: true,
        corrupt: async (key, field) => void await kv.set(store.kvKey(key, field), "x1"),
        durable: true,
      });
    } finally {
      kv.close();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
