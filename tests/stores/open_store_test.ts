/**
 * `openStore(url)` of `@kvid/core/store`: the URL rules of the service and the CLI, the driver
 * of the scheme loaded on first use. Generators serve IDs through it from a Redis, a PostgreSQL
 * 15 and a MariaDB this test starts; what the service and the CLI refuse it refuses, at once.
 */

import "../support/deadline.ts"; // a time limit on every test of this file
import assert from "node:assert/strict";
import { KvId, KvIdError } from "../../mod.ts";
import { openStore } from "../../src/stores/mod.ts";
import { command, startServer } from "../support/redis_server.ts";
import { startMariaDb, startPostgres } from "../support/sql_servers.ts";

/** Three IDs of a fresh counter through `openStore(url)`, then everything closed. */
async function idsFrom(url: string): Promise<number[]> {
  const opened = openStore(url);
  try {
    await opened.ready();
    const ids = new KvId("order", { store: opened.store });
    try {
      return [await ids.next(), await ids.next(), await ids.next()];
    } finally {
      await ids.close();
    }
  } finally {
    await opened.close();
  }
}

Deno.test("openStore: Redis, PostgreSQL and MariaDB URLs serve IDs", async () => {
  await using redis = await startServer();
  assert.deepEqual(await idsFrom(redis.url), [1, 2, 3]);
  assert.notEqual(await command(redis.url, "HGET", "kvid", "order"), null, "on that server");
  await using pg = await startPostgres();
  assert.deepEqual(await idsFrom(pg.url), [1, 2, 3]);
  await using maria = await startMariaDb();
  assert.deepEqual(await idsFrom(maria.url), [1, 2, 3]);
});

Deno.test("openStore: what the service and the CLI refuse, refused at once as config", async () => {
  for (const url of ["http://127.0.0.1:6379", "not a url", "ftp://db"]) {
    assert.throws(() => openStore(url), (err) => err instanceof KvIdError && err.code === "config");
  }
  // Known schemes whose host does not resolve: the first use says so, not the deadline.
  for (
    const url of ["redis://no-such-host.invalid:6379", "postgres://kvid@no-such-host.invalid/ids"]
  ) {
    const opened = openStore(url);
    const ids = new KvId("order", { store: opened.store, timeout: 15_000 });
    try {
      await assert.rejects(ids.next(), (err) => {
        assert.ok(err instanceof KvIdError, String(err));
        assert.equal(err.code, "config", `${url}: ${err.message}`);
        assert.match(err.message.split("\n")[0], /ENOTFOUND|not known|No address/);
        return true;
      });
    } finally {
      await ids.close();
      await opened.close();
    }
  }
});
