/**
 * Fault suite: a `WAITAOF` answer that confirms nothing. On Valkey with `appendfsync no` the
 * server never fsyncs its AOF itself, so `WAITAOF 1 0 <ms>` answers `[0, 0]` when its time is
 * up: the reservation is not on disk, its IDs are spent and none is handed out.
 */

import "../support/deadline.ts"; // a time limit on every test of this file
import assert from "node:assert/strict";
import { KvId, KvIdError, type RedisClient } from "../../mod.ts";
import { RedisStore } from "../../src/stores/redis/redis_store.ts";
import { openClient } from "../support/redis_clients.ts";
import { onPath } from "../support/redis_replication.ts";
import { command } from "../support/redis_server.ts";
import { spawnRedis } from "../support/faults.ts";

const big = (_: string, v: unknown) => typeof v === "bigint" ? String(v) : v;

Deno.test({
  name: "waitAof: a WAITAOF answer of 0 fsynced locally is no confirmation: no ID served",
  ignore: !onPath("valkey-server"),
  fn: async () => {
    // spawnRedis starts KVID_TEST_SERVER's binary; WAITAOF needs Valkey (or Redis >= 7.2).
    const prior = Deno.env.get("KVID_TEST_SERVER");
    Deno.env.set("KVID_TEST_SERVER", "valkey-server");
    let server: Awaited<ReturnType<typeof spawnRedis>>;
    try {
      server = await spawnRedis(["--appendfsync", "everysec"]);
    } finally {
      if (prior === undefined) Deno.env.delete("KVID_TEST_SERVER");
      else Deno.env.set("KVID_TEST_SERVER", prior);
    }
    await using _server = server;
    await using open = await openClient("node-redis", server.url);
    const replies: unknown[] = [];
    const inner = open.redis;
    const client: RedisClient = {
      ...inner,
      waitAof: async (key, numlocal, numreplicas, ms) => {
        const reply = await inner.waitAof!(key, numlocal, numreplicas, ms);
        replies.push(reply);
        return reply;
      },
    };
    // WAITAOF and its wait are the store's own options; no caller's deadline around it: the
    // answer alone decides.
    const store = new RedisStore(client, { waitAof: true, waitMs: 5_000 });
    const options = { floor: 0n, raiseTo: 0n, guard: true, exact: true };
    const ok = await store.reserve("kvid", "unconfirmed", 10, options);
    assert.deepEqual(ok.ranges, [{ first: 1n, last: 10n }]);
    assert.deepEqual(replies, [[1, 0]]);
    // From now on the server leaves the fsync to the kernel: WAITAOF can confirm nothing.
    await command(server.url, "CONFIG", "SET", "appendfsync", "no");
    const short = new RedisStore(client, { waitAof: true, waitMs: 200 });
    const got = await short.reserve("kvid", "unconfirmed", 10, options).then((v) => v, (e) => e);
    assert.deepEqual(replies[1], [0, 0], "the server confirmed nothing");
    assert.ok(got instanceof KvIdError, `accepted ${JSON.stringify(got, big)} not on disk`);
    assert.equal(got.code, "timeout");
    assert.match(got.message, /did not fsync/);
    // Through a generator: no ID of an unconfirmed reservation is served.
    await using id = new KvId("unconfirmed", { redis: client, prefetchAt: 0, timeout: 400 });
    await assert.rejects(id.next(), KvIdError);
  },
});
