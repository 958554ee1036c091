/**
 * Errors name the counter in its store's own words (`Store.describe`): a SQL row by its table,
 * hash key and name, an `HttpStore` counter by its service and name, a Deno KV counter by its key,
 * a Redis counter by its hash and field. Each against a real server this file starts (Redis,
 * PostgreSQL 15, MariaDB, the ID service), both for an error the store makes and for one the
 * generator makes (`closed`, after the store is known).
 */

import "../support/deadline.ts"; // a time limit on every test of this file
import assert from "node:assert/strict";
import mysql from "mysql2/promise";
import pg from "pg";
import { KvId, KvIdError } from "../../mod.ts";
import { HttpStore } from "../../src/client/mod.ts";
import { DenoKvStore } from "../../src/stores/deno_kv/deno_kv_store.ts";
import { MySqlStore } from "../../src/stores/mysql/mod.ts";
import { PostgresStore } from "../../src/stores/postgres/mod.ts";
import type { Store } from "../../src/contract/store.ts";
import { openClient } from "../support/redis_clients.ts";
import { command, startServer } from "../support/redis_server.ts";
import { serveService } from "../support/service.ts";
import { startMariaDb, startPostgres } from "../support/sql_servers.ts";

/** What `next()` rejects with. */
async function failure(ids: KvId): Promise<KvIdError> {
  try {
    await ids.next();
  } catch (err) {
    if (err instanceof KvIdError) return err;
    throw err;
  }
  throw new Error("next() resolved");
}

/** One ID, then close: the generator's own `closed` error names the counter as `store` does. */
async function closedError(store: Store): Promise<KvIdError> {
  const ids = new KvId("order", { store, timeout: 10_000 });
  assert.equal(await ids.next(), 1);
  await ids.close();
  return await failure(ids);
}

/** The SQL cases: a hostile row, a missing table (the driver's error), the generator's own. */
async function sqlWords(
  make: (options: { table?: string; createTable?: boolean }) => Store,
  exec: (sql: string) => Promise<unknown>,
): Promise<void> {
  const words = '(table kvid_counters, hash_key "kvid", name "order")';
  const closed = await closedError(make({}));
  assert.equal(closed.code, "closed");
  assert.ok(closed.message.endsWith(words), closed.message);
  assert.equal(closed.where, 'table kvid_counters, hash_key "kvid", name "order"');

  await exec("UPDATE kvid_counters SET value = -5 WHERE hash_key = 'kvid' AND name = 'order'");
  await using hostile = new KvId("order", { store: make({}), timeout: 10_000 });
  const negative = await failure(hostile);
  assert.equal(negative.code, "reply");
  assert.match(negative.message, /negative value \(-5\)/);
  assert.ok(negative.message.endsWith(words), negative.message);
  assert.doesNotMatch(negative.message, /\(hash |field "/);

  await using missing = new KvId("order", {
    store: make({ table: "no_such_table", createTable: false }),
    timeout: 10_000,
  });
  const table = await failure(missing);
  assert.equal(table.code, "config");
  // Found by the durability read before the first reservation, which is about no one counter.
  assert.ok(table.message.endsWith('(table no_such_table, hash_key "kvid")'), table.message);
}

Deno.test("store words: PostgreSQL names the table, the hash key and the name", async () => {
  await using server = await startPostgres();
  const pool = new pg.Pool({ connectionString: server.url, max: 2 });
  pool.on("error", () => {});
  try {
    await sqlWords(
      (options) => new PostgresStore(pool, options),
      (sql) => pool.query(sql),
    );
  } finally {
    await pool.end();
  }
});

Deno.test("store words: MariaDB names the table, the hash key and the name", async () => {
  await using server = await startMariaDb();
  const pool = mysql.createPool({
    host: server.host,
    port: server.port,
    user: server.user,
    password: server.password,
    database: server.database,
    connectionLimit: 2,
  });
  try {
    await sqlWords(
      (options) => new MySqlStore(pool, options),
      (sql) => pool.query(sql),
    );
  } finally {
    await pool.end();
  }
});

Deno.test("store words: HttpStore names the service and the name", async () => {
  using backing = new DenoKvStore(":memory:");
  await using s = serveService({
    store: backing,
    tokens: "words-all-0123456789:*,words-user-0123456789:user",
  });
  const words = `(service ${s.url}, name "order")`;
  const closed = await closedError(new HttpStore(s.url, { token: "words-all-0123456789" }));
  assert.equal(closed.code, "closed");
  assert.ok(closed.message.endsWith(words), closed.message);

  // A token for another name: the service refuses (403), said in the service's words.
  await using other = new KvId("order", {
    store: new HttpStore(s.url, { token: "words-user-0123456789" }),
    timeout: 10_000,
  });
  const refused = await failure(other);
  assert.equal(refused.code, "config");
  assert.ok(refused.message.endsWith(words), refused.message);
  assert.doesNotMatch(refused.message, /\(hash |field "/);
});

Deno.test("store words: Deno KV names its key", async () => {
  using store = new DenoKvStore(":memory:", { prefix: ["ids"] });
  const closed = await closedError(store);
  assert.ok(closed.message.endsWith('(key ["ids", "kvid", "order"])'), closed.message);

  // A value kvid never writes: the store's own error.
  const kv = await Deno.openKv(":memory:");
  try {
    await kv.set(["kvid", "invoice"], "x1");
    await using ids = new KvId("invoice", { store: new DenoKvStore(kv), timeout: 10_000 });
    const hostile = await failure(ids);
    assert.equal(hostile.code, "reply");
    assert.ok(hostile.message.endsWith('(key ["kvid", "invoice"])'), hostile.message);
  } finally {
    kv.close();
  }
});

Deno.test("store words: Redis names the hash and the field, as before", async () => {
  await using server = await startServer();
  await using client = await openClient("node-redis", server.url);
  await command(server.url, "HSET", "kvid", "order", "x1");
  await using ids = new KvId("order", { redis: client.redis, timeout: 10_000 });
  const err = await failure(ids);
  assert.equal(err.code, "reply");
  assert.ok(err.message.endsWith('(hash "kvid", field "order")'), err.message);
  assert.equal(err.where, "");
});
