/**
 * A check of @kvid/core with the real `jsr:@db/redis` client. It runs only with
 * `KVID_DB_REDIS=1`, where `jsr:@db/redis` resolves: JSR is unreachable from CI, so elsewhere
 * the test is listed as ignored, its name saying why, and nothing is fetched (the import is
 * dynamic, by a specifier the type checker does not follow). Run it, e.g. with a config whose
 * `"links"` point at local checkouts of denodrivers/redis and the std packages it pins:
 *
 *     KVID_DB_REDIS=1 deno test -A --config path/to/links/deno.json tests/stores/redis/db_redis_client_test.ts
 */
import "../../support/deadline.ts"; // a time limit on every test of this file
import assert from "node:assert/strict";
import { KvId, KvIdError, type RedisClient } from "../../../mod.ts";
import { command, startServer } from "../../support/redis_server.ts";

const ENABLED = Deno.env.get("KVID_DB_REDIS") === "1";
// A variable, so neither `deno check` nor the test runner resolves it unless the test runs.
const DB_REDIS: string = "jsr:@db/redis@^0.41";

/** The part of `jsr:@db/redis` this test uses. */
interface DbRedis {
  connect(options: { hostname: string; port: number }): Promise<RedisClient & { close(): void }>;
}

Deno.test({
  name: ENABLED
    ? "@db/redis client passed as is"
    : "@db/redis client passed as is (skipped: set KVID_DB_REDIS=1 where jsr:@db/redis resolves)",
  ignore: !ENABLED,
}, async () => {
  const { connect } = await import(DB_REDIS) as DbRedis;
  await using server = await startServer();
  const redis = await connect({ hostname: "127.0.0.1", port: server.port });
  try {
    for (const guard of [true, false]) {
      await using id = new KvId(`plain-${guard}`, { redis, guard });
      const ids = [];
      for (let i = 0; i < 10_000; i++) ids.push(await id.next());
      assert.equal(ids[0], 1);
      assert.equal(new Set(ids).size, 10_000);
    }
    await command(server.url, "HSET", "kvid", "big", "9007199254740990");
    await using big = new KvId("big", { redis, bigint: true, guard: false, minStep: 4 });
    const b = [];
    for (let i = 0; i < 20; i++) b.push(await big.next());
    console.log("bigint above 2^53 via @db/redis:", b[0], b.at(-1));
    for (let i = 1; i < b.length; i++) assert.ok(b[i] > b[i - 1]);
    await command(server.url, "HSET", "kvid", "abc", "abc");
    await using bad = new KvId("abc", { redis });
    await assert.rejects(
      bad.next(),
      (e) => e instanceof KvIdError && e.code === "reply" && /integer/.test(e.message),
    );
    await command(server.url, "SET", "str", "x");
    await using wt = new KvId("x", { redis, key: "str" });
    await assert.rejects(
      wt.next(),
      (e) => e instanceof KvIdError && e.code === "reply" && /not a hash/.test(e.message),
    );
    await command(server.url, "HSET", "kvid", "top", "9223372036854775806");
    await using top = new KvId("top", { redis, bigint: true, minStep: 2 });
    await assert.rejects(top.next(), (e) => e instanceof KvIdError && e.code === "overflow");
  } finally {
    redis.close();
  }
});
