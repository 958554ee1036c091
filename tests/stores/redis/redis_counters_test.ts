/**
 * `RedisStore.counters` on a server without scripting (`EVAL` and `EVALSHA` renamed away, as
 * some managed Redis do): the same answer from `HGETALL` through `sendCommand` as the script
 * gives (the script itself runs in the shared spec, tests/stores/store_spec_test.ts).
 */

import "../../support/deadline.ts"; // a time limit on every test of this file
import assert from "node:assert/strict";
import { KvIdError } from "../../../mod.ts";
import { RedisStore } from "../../../src/stores/redis/redis_store.ts";
import { CLIENTS, openClient } from "../../support/redis_clients.ts";
import { command, ownServers, startNoScriptingServer } from "../../support/redis_server.ts";

Deno.test({
  ...ownServers("RedisStore.counters without scripting: exact, no internal fields, names"),
}, async () => {
  await using server = await startNoScriptingServer();
  const url = server.url;
  const huge = "9223372036854775806"; // a double would round it
  await command(url, "HSET", "kvid", "order", huge, "small", "4", "inter", "3");
  await command(url, "HSET", "kvid", "\u0000step:order", "300", "\u0000pool:order", "1-2");
  await command(url, "HSET", "kvid", "\u0000layout:inter", "v1 servers=2 block=10 index=0");
  await command(url, "HSET", "other", "elsewhere", "5");
  await command(url, "HSET", "bad", "x", "abc");
  for (const kind of CLIENTS) {
    await using client = await openClient(kind, url);
    const store = new RedisStore(client.redis);
    assert.deepEqual(
      await store.counters("kvid"),
      new Map([
        ["order", { value: BigInt(huge) }],
        ["small", { value: 4n }],
        ["inter", { value: 3n, layout: "v1 servers=2 block=10 index=0" }],
      ]),
      kind,
    );
    assert.deepEqual(
      await store.counters("kvid", { names: ["small", "missing", "\u0000step:order"] }),
      new Map([["small", { value: 4n }]]),
      kind,
    );
    assert.equal((await store.counters("absent")).size, 0, kind);
    const err = await store.counters("bad").then((r) => r, (e: unknown) => e);
    assert.ok(err instanceof KvIdError, `${kind}: ${Deno.inspect(err)}`);
    assert.equal(err.reason, "not-a-counter");
  }
});
