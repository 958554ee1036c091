/**
 * Fault suite: `kill -9` of a server with AOF, and the `waitAof` confirmation.
 *
 * - redis-server (no `WAITAOF`) and valkey-server (`WAITAOF` sent after each reservation), each
 *   with `appendfsync everysec` and `always`, killed with SIGKILL while a generator takes IDs
 *   and restarted from its AOF: the generator alive across the crash and a fresh one after it
 *   re-issue 0 IDs (counted exactly over every ID handed out).
 * - On Valkey, `WAITAOF 1 0` is sent once per reservation and honoured: with the AOF turned off
 *   at run time (`CONFIG SET appendonly no`) reservations fail (`config`, naming the fix) and
 *   none of their IDs is served; with it back on, IDs resume above every spent range.
 */

import "../support/deadline.ts"; // a time limit on every test of this file
import assert from "node:assert/strict";
import { DailyId, fromNodeRedis, KvId, KvIdError, type RedisClient } from "../../mod.ts";
import { openClient } from "../support/redis_clients.ts";
import { onPath } from "../support/redis_replication.ts";
import { command } from "../support/redis_server.ts";
import { duplicates, waitUntil } from "../support/faults.ts";

const BINARIES = ["redis-server", "valkey-server"] as const;
type Binary = typeof BINARIES[number];

/** A server with AOF in `dir` on `port`, killed with SIGKILL and started again from its AOF. */
async function aofServer(bin: Binary, fsync: "everysec" | "always") {
  const dir = await Deno.makeTempDir({ prefix: `kvid-crash-${fsync}-` });
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  const url = `redis://127.0.0.1:${port}`;
  let child: Deno.ChildProcess | undefined;
  const start = async () => {
    child = new Deno.Command(bin, {
      args: ["--port", String(port), "--bind", "127.0.0.1", "--dir", dir, "--save", ""].concat(
        ["--appendonly", "yes", "--appendfsync", fsync, "--protected-mode", "no"],
      ),
      stdin: "null",
      stdout: "null",
      stderr: "null",
    }).spawn();
    await waitUntil(() => command(url, "PING").then((r) => r === "PONG", () => false), "PING");
  };
  const kill = async () => {
    const c = child;
    child = undefined;
    if (c === undefined) return;
    try {
      c.kill("SIGKILL");
    } catch { /* exited */ }
    await c.status;
  };
  await start();
  return {
    url,
    start,
    kill,
    async [Symbol.asyncDispose]() {
      await kill();
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    },
  };
}

/** A client counting the `WAITAOF` commands sent through it. */
function countingWaitAof(inner: RedisClient) {
  const replies: unknown[] = [];
  const client: RedisClient = {
    ...inner,
    waitAof: async (key, numlocal, numreplicas, ms) => {
      const reply = await inner.waitAof!(key, numlocal, numreplicas, ms);
      replies.push(reply);
      return reply;
    },
  };
  return { client, replies };
}

for (const bin of BINARIES) {
  for (const fsync of ["everysec", "always"] as const) {
    Deno.test({
      name: `crash: kill -9 of ${bin} with appendfsync ${fsync}: 0 IDs re-issued`,
      ignore: !onPath(bin),
      timeout: 120_000,
      fn: async () => {
        await using server = await aofServer(bin, fsync);
        await using open = await openClient("node-redis", server.url);
        const { client, replies } = countingWaitAof(open.redis);
        const live: number[] = [];
        // Small segments (many reservations); a timeout long enough to wait out the restart.
        await using id = new KvId("crash", {
          redis: client,
          minStep: 50,
          maxStep: 50,
          timeout: 30_000,
        });
        const taking = (async () => {
          while (live.length < 20_000) live.push(await id.next());
        })();
        await waitUntil(() => live.length >= 5_000, "5,000 IDs before the crash");
        await server.kill();
        const atCrash = live.length;
        await server.start();
        await taking;
        assert.ok(live.length === 20_000 && atCrash < 20_000, `crashed at ${atCrash}`);
        // A fresh generator (a new process would be the same) after the crash.
        await using fresh = new KvId("crash", { redis: open.redis, minStep: 100, maxStep: 100 });
        const after = await fresh.nextBatch(10_000);
        const reissued = duplicates([Float64Array.from(live), Float64Array.from(after)]);
        assert.equal(reissued.length, 0, `re-issued: ${reissued.slice(0, 5)}`);
        // Valkey confirmed every reservation with WAITAOF (fsynced locally); redis-server 7.0
        // has no WAITAOF: asked once, then skipped.
        if (bin === "valkey-server") {
          assert.ok(replies.length >= id.stats().segments, `${replies.length} WAITAOF replies`);
          for (const r of replies) assert.equal(Number((r as unknown[])[0]), 1, String(r));
        } else {
          assert.equal(replies.length, 0);
        }
      },
    });
  }
}

Deno.test({
  name: "waitAof: Valkey's WAITAOF is sent per reservation and honoured (AOF off: no ID)",
  ignore: !onPath("valkey-server"),
  timeout: 60_000,
  fn: async () => {
    await using server = await aofServer("valkey-server", "everysec");
    await using open = await openClient("node-redis", server.url);
    const { client, replies } = countingWaitAof(open.redis);
    // Step 10, no prefetch: one reservation per 10 IDs, each confirmed before its IDs.
    const fixed = { minStep: 10, maxStep: 10, prefetchAt: 0, timeout: 2_000 };
    await using id = new KvId("honoured", { redis: client, ...fixed });
    for (let n = 1; n <= 30; n++) assert.equal(await id.next(), n);
    assert.equal(replies.length, 3);
    assert.deepEqual(replies.map((r) => Number((r as unknown[])[0])), [1, 1, 1]);

    // The AOF turned off at run time: the next reservation is made, not confirmed, spent.
    await command(server.url, "CONFIG", "SET", "appendonly", "no");
    const err = await id.next().then(() => undefined, (e) => e);
    assert.ok(err instanceof KvIdError && err.code === "config", String(err));
    assert.match(err.message, /appendonly yes/);
    assert.match(err.message, /waitAof: false/);
    const spent = Number(await command(server.url, "HGET", "kvid", "honoured"));
    assert.ok(spent >= 40, `the reservation was made (counter ${spent})`);

    // Back on (once the server finished the rewrite it starts): IDs above every spent range.
    await command(server.url, "CONFIG", "SET", "appendonly", "yes");
    await waitUntil(async () => {
      const text = String(await command(server.url, "INFO", "persistence"));
      return /aof_enabled:1/.test(text) && /aof_rewrite_in_progress:0/.test(text) &&
        /aof_rewrite_scheduled:0/.test(text);
    }, "the AOF back on");
    await using after = new KvId("honoured", { redis: client, ...fixed });
    const resumed = await after.next();
    const high = Number(await command(server.url, "HGET", "kvid", "honoured"));
    assert.ok(resumed > spent, `resumed at ${resumed}, spent up to ${spent}`);
    assert.equal(resumed, high - 9);

    // waitAof: false sends none.
    const before = replies.length;
    await using off = new KvId("honoured-off", { redis: client, ...fixed, waitAof: false });
    for (let n = 1; n <= 30; n++) assert.equal(await off.next(), n);
    assert.equal(replies.length, before);

    // DailyId passes it on to each day's generator: on by default, off when told.
    for (const waitAof of [true, false]) {
      const counted: number = replies.length;
      await using daily = new DailyId(`daily-${waitAof}`, { redis: client, waitAof });
      assert.ok(typeof await daily.next() === "number");
      assert.equal(replies.length - counted, waitAof ? 1 : 0);
    }
  },
});

Deno.test({
  name: "waitAof: a server without WAITAOF (redis-server 7.0) is asked once, then skipped",
  ignore: !onPath("redis-server"),
  timeout: 60_000,
  fn: async () => {
    await using server = await aofServer("redis-server", "everysec");
    const info = String(await command(server.url, "INFO", "server"));
    if (/valkey_version|redis_version:7\.[2-9]|redis_version:[89]/.test(info)) return; // has it
    await using open = await openClient("node-redis", server.url);
    const sent: string[] = [];
    const inner = open.redis;
    const client: RedisClient = {
      hincrby: (k, f, n) => inner.hincrby(k, f, n),
      eval: (s, k, a) => inner.eval(s, k, a),
      evalsha: (s, k, a) => inner.evalsha(s, k, a),
      sendCommand: (c, a) => {
        sent.push(c);
        return inner.sendCommand!(c, a);
      },
    };
    await using id = new KvId("no-waitaof", {
      redis: client,
      minStep: 10,
      maxStep: 10,
      prefetchAt: 0,
    });
    for (let n = 1; n <= 50; n++) assert.equal(await id.next(), n);
    assert.deepEqual(sent.filter((c) => c === "WAITAOF"), ["WAITAOF"]);
    assert.equal(id.stats().failures, 0);
  },
});

// fromNodeRedis is what the tests' clients go through: its waitAof routes WAITAOF.
Deno.test("waitAof: the node-redis adapter sends WAITAOF 1 0 <ms>", async () => {
  const sent: unknown[] = [];
  const fake = {
    hIncrBy: () => Promise.resolve(1),
    eval: () => Promise.resolve(1),
    evalSha: () => Promise.resolve(1),
    sendCommand: (argv: string[]) => {
      sent.push(argv);
      return Promise.resolve([1, 0]);
    },
  };
  const client = fromNodeRedis(fake as unknown as Parameters<typeof fromNodeRedis>[0]);
  assert.deepEqual(await client.waitAof!("kvid", 1, 0, 900), [1, 0]);
  assert.deepEqual(sent, [["WAITAOF", "1", "0", "900"]]);
});
