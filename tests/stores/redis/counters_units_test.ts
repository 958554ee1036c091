/**
 * Unit tests of the Redis counters listing (src/stores/redis/counters.ts) against servers this
 * file starts: every counter of a hash or the ones named, each with its layout, the library's own
 * fields left out, a value that is no counter refused naming its field, and the same answers
 * without scripting (HGETALL), through node-redis and ioredis.
 */

import "../../support/deadline.ts"; // a time limit on every test of this file
import assert from "node:assert/strict";
import type { KvIdError } from "../../../src/contract/errors.ts";
import type { RedisClient } from "../../../src/contract/redis_client.ts";
import { readCounters } from "../../../src/stores/redis/counters.ts";
import { CLIENTS, openClient } from "../../support/redis_clients.ts";
import {
  command,
  EXTERNAL_SERVER,
  startNoScriptingServer,
  startServer,
} from "../../support/redis_server.ts";

const LAYOUT = "v1 servers=2 block=10 index=1";

/** A hash of counters: two plain, one interleaved, the library's own fields, a step. */
async function fill(url: string, key: string): Promise<void> {
  await command(url, "HSET", key, "order", "42", "zero", "0", "top", "9223372036854775807");
  await command(url, "HSET", key, "il", "7", "\u0000layout:il", LAYOUT);
  await command(url, "HSET", key, "\u0000step:order", "500", "\u0000layout:gone", LAYOUT);
}

const EVERY = new Map([
  ["order", { value: 42n }],
  ["zero", { value: 0n }],
  ["top", { value: 9223372036854775807n }],
  ["il", { value: 7n, layout: LAYOUT }],
]);

/** `readCounters`' answers for the hash `key` filled by {@linkcode fill}. */
async function check(redis: RedisClient, key: string, what: string): Promise<void> {
  const all = await readCounters(redis, key);
  assert.deepEqual(new Map([...all].sort()), new Map([...EVERY].sort()), `${what}: every counter`);
  const some = await readCounters(redis, key, {
    names: ["il", "missing", "order", "\u0000step:order"],
  });
  assert.deepEqual(
    [...some],
    [["il", { value: 7n, layout: LAYOUT }], ["order", { value: 42n }]],
    what,
  );
  assert.deepEqual(await readCounters(redis, key, { names: [] }), new Map(), `${what}: no names`);
  assert.deepEqual(await readCounters(redis, "kvid:none"), new Map(), `${what}: no hash`);
}

/** The refusals of a value that is no counter, and of a key that is no hash. */
async function refusals(redis: RedisClient, url: string, key: string, what: string) {
  for (
    const bad of ["abc", "-5", "012", "1.5", "9223372036854775808", "12345678901234567890", ""]
  ) {
    await command(url, "HSET", key, "bad", bad);
    await assert.rejects(readCounters(redis, key), (err: KvIdError) => {
      assert.equal(err.code, "reply", `${what} ${JSON.stringify(bad)}`);
      assert.equal(err.reason, "not-a-counter");
      assert.equal(err.field, "bad");
      assert.equal((err.cause as Error).message, `found ${JSON.stringify(bad)}`);
      return true;
    });
  }
  await command(url, "HDEL", key, "bad");
  await command(url, "SET", `${key}:string`, "x");
  for (const [names, field] of [[undefined, ""], [["a"], "a"], [["a", "b"], ""]] as const) {
    await assert.rejects(
      readCounters(redis, `${key}:string`, names ? { names } : {}),
      (err: KvIdError) => {
        assert.equal(err.code, "reply", what);
        assert.equal(err.reason, "not-a-hash");
        assert.equal(err.field, field, "the counter named when there is one");
        return true;
      },
    );
  }
}

for (const kind of CLIENTS) {
  Deno.test({
    name: `readCounters through ${kind}: by script, then without scripting`,
    ignore: EXTERNAL_SERVER,
    fn: async () => {
      await using server = await startServer();
      await using c = await openClient(kind, server.url);
      await fill(server.url, "kvid:list");
      await check(c.redis, "kvid:list", `${kind}, script`);
      await refusals(c.redis, server.url, "kvid:list", `${kind}, script`);
      await using bare = await startNoScriptingServer();
      await using b = await openClient(kind, bare.url);
      await fill(bare.url, "kvid:list");
      await check(b.redis, "kvid:list", `${kind}, HGETALL`);
      await refusals(b.redis, bare.url, "kvid:list", `${kind}, HGETALL`);
    },
  });
}

Deno.test({
  name: "readCounters: no scripting and no sendCommand is said as it is",
  ignore: EXTERNAL_SERVER,
  fn: async () => {
    await using bare = await startNoScriptingServer();
    await using c = await openClient("node-redis", bare.url);
    const inner = c.redis;
    const limited: RedisClient = {
      hincrby: (k, f, n) => inner.hincrby(k, f, n),
      eval: (s, k, a) => inner.eval(s, k, a),
      evalsha: (s, k, a) => inner.evalsha(s, k, a),
    };
    await assert.rejects(readCounters(limited, "kvid:list"), { code: "config" }); // a command it needs
    // A script reply of another shape (a proxy's, say) lists nothing rather than garbage.
    const odd: RedisClient = {
      ...limited,
      eval: () => Promise.resolve("OK"),
      evalsha: () => Promise.resolve("OK"),
    };
    assert.deepEqual(await readCounters(odd, "kvid:list"), new Map());
    // Bytes are read as text.
    const reply = () => Promise.resolve(["n", "5", ""].map((s) => new TextEncoder().encode(s)));
    const bytes: RedisClient = { ...limited, eval: reply, evalsha: reply };
    assert.deepEqual([...await readCounters(bytes, "kvid:list")], [["n", { value: 5n }]]);
    // A list cut short: only whole triples are counters.
    const cut = () => Promise.resolve(["n", "5", "", "m", "6"]);
    assert.deepEqual([...await readCounters({ ...limited, eval: cut, evalsha: cut }, "k")], [
      ["n", { value: 5n }],
    ]);
    // HGETALL answered as a map (a RESP3 client), the real server refusing EVAL.
    const map: RedisClient = {
      ...limited,
      sendCommand: () => Promise.resolve({ order: "42", "\u0000layout:order": LAYOUT, x: "1" }),
    };
    assert.deepEqual(
      [...await readCounters(map, "kvid:list", { names: ["order"] })],
      [["order", { value: 42n, layout: LAYOUT }]],
    );
    // Another refusal of the script is not a missing EVAL: no HGETALL after it.
    let sent = 0;
    const scripted = await startServer();
    try {
      await using s = await openClient("node-redis", scripted.url);
      await command(scripted.url, "SET", "kvid:string", "x");
      const viaScript: RedisClient = {
        hincrby: (k, f, n) => s.redis.hincrby(k, f, n),
        eval: (src, k, a) => s.redis.eval(src, k, a),
        evalsha: (sha, k, a) => s.redis.evalsha(sha, k, a),
        sendCommand: (cmd, args) => (sent++, s.redis.sendCommand!(cmd, args)),
      };
      await assert.rejects(readCounters(viaScript, "kvid:string"), { reason: "not-a-hash" });
      assert.equal(sent, 0, "the script's WRONGTYPE is the answer");
    } finally {
      await scripted.stop();
    }
  },
});
