/**
 * Fault suite: transient server states. A server loading its data (`LOADING`), a demoted primary
 * (`READONLY`), a replica cut off from its primary (`MASTERDOWN`), a script past its time limit
 * (`BUSY`), a cluster node without its slots (`CLUSTERDOWN`) and writes refused for now (too few
 * replicas `NOREPLICAS`, out of memory `OOM`, a failed save `MISCONF`) are retried until the caller's
 * deadline, with the server's words in the cause; real refusals still fail fast.
 */

import "../support/deadline.ts"; // a time limit on every test of this file
import assert from "node:assert/strict";
import { KvId, KvIdError, type RedisClient } from "../../mod.ts";
import { toKvIdError } from "../../src/contract/store_errors.ts";
import { openClient } from "../support/redis_clients.ts";
import { command } from "../support/redis_server.ts";
import { Recorder, rejectsWith, spawnRedis, waitUntil } from "../support/faults.ts";

/** A client that runs `heal` (once) when the server first replies with `word`. */
function healOn(inner: RedisClient, word: string, heal: () => Promise<unknown>) {
  const rec = new Recorder(inner, { probes: true });
  let healing: Promise<unknown> | undefined;
  const watch = <T>(p: Promise<T>) =>
    p.catch((err) => {
      if (new RegExp(`^${word}\\b|: ${word}\\b`).test(String(err?.message))) healing ??= heal();
      throw err;
    });
  const client: RedisClient = {
    hincrby: (k, f, n) => watch(rec.hincrby(k, f, n)),
    eval: (s, k, a) => watch(rec.eval(s, k, a)),
    evalsha: (s, k, a) => watch(rec.evalsha(s, k, a)),
  };
  return { client, rec, healed: () => healing };
}

/** The calls that failed with the server's `word`. */
function failedWith(rec: Recorder, word: string): number {
  return rec.calls.filter((c) => String((c.error as Error | undefined)?.message).includes(word))
    .length;
}

Deno.test({
  name: "states: LOADING (a restart with data) is waited out, not a reply error",
  timeout: 60_000,
  fn: async () => {
    const dir = await Deno.makeTempDir({ prefix: "kvid-loading-" });
    try {
      {
        // Snapshots only (no AOF), so the restart loads the snapshot, slowly.
        await using a = await spawnRedis(
          ["--enable-debug-command", "yes", "--appendonly", "no"],
          dir,
        );
        await waitUntil(() => command(a.url, "PING").catch(() => false), "PING");
        await command(a.url, "DEBUG", "POPULATE", "40000");
        await command(a.url, "HSET", "kvid", "loading", "41");
        await command(a.url, "SAVE");
        await a.stop();
      }
      // 40,000 keys at 50 µs each: about two seconds of LOADING, answering meanwhile.
      await using b = await spawnRedis([
        "--appendonly",
        "no",
        "--key-load-delay",
        "50",
        "--loading-process-events-interval-bytes",
        "1024",
      ], dir);
      await using open = await openClient("node-redis", b.url, { readyCheck: false });
      const rec = new Recorder(open.redis, { probes: true });
      // No AOF here on purpose (to stage the slow load): WAITAOF could not confirm, and
      // best-effort durability accepts a server without one.
      await using id = new KvId("loading", {
        redis: rec,
        timeout: 30_000,
        waitAof: false,
        durability: "best-effort",
      });
      assert.equal(await id.next(), 42);
      assert.ok(failedWith(rec, "LOADING") >= 1, "the server had loaded already: nothing staged");
      assert.equal(id.stats().lastError, undefined);
    } finally {
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  },
});

Deno.test({
  name: "states: READONLY (a demoted primary) and MASTERDOWN are retried until promoted",
  timeout: 60_000,
  fn: async () => {
    await using primary = await spawnRedis();
    await using replica = await spawnRedis();
    await waitUntil(() => command(replica.url, "PING").catch(() => false), "PING");
    await using open = await openClient("ioredis", replica.url);
    for (
      const [word, setup] of [
        ["READONLY", [["REPLICAOF", "127.0.0.1", String(primary.port)]]],
        // A writable replica whose primary is gone and which may not serve stale data.
        ["MASTERDOWN", [
          ["CONFIG", "SET", "replica-read-only", "no"],
          ["CONFIG", "SET", "replica-serve-stale-data", "no"],
          ["REPLICAOF", "127.0.0.1", String(primary.port)],
        ]],
      ] as const
    ) {
      for (const c of setup) await command(replica.url, ...c);
      if (word === "MASTERDOWN") await primary.stop();
      const { client, rec, healed } = healOn(
        open.redis,
        word,
        () => command(replica.url, "REPLICAOF", "NO", "ONE"),
      );
      await using id = new KvId(`state-${word}`, { redis: client, timeout: 30_000 });
      const first = await id.next();
      assert.ok(first >= 1, `id ${first}`);
      assert.ok(healed() !== undefined, `the server never replied ${word}: nothing staged`);
      assert.ok(failedWith(rec, word) >= 1);
    }
  },
});

Deno.test({
  name: "states: BUSY (a script past its time limit) is retried; its cause has the server's words",
  timeout: 60_000,
  fn: async () => {
    await using server = await spawnRedis(["--lua-time-limit", "10"]);
    await waitUntil(() => command(server.url, "PING").catch(() => false), "PING");
    await using open = await openClient("node-redis", server.url);
    // A read-only script that never ends by itself: killed when the generator was told BUSY.
    const busy = command(server.url, "EVAL", "while true do end", "0").catch((e) => e);
    await waitUntil(
      () => command(server.url, "PING").then(() => false, (e) => /^BUSY/.test(e.message)),
      "the script to make the server BUSY",
    );
    // A caller with a short deadline times out, with the server's words in the cause...
    const heldRec = new Recorder(open.redis, { probes: true });
    const err = await (async () => {
      // 3 s: room for several attempts however slow the machine (the script never ends alone).
      await using held = new KvId("state-busy-held", { redis: heldRec, timeout: 3_000 });
      return await rejectsWith(held.next(), "timeout");
    })();
    const cause = err.cause as KvIdError;
    assert.ok(cause instanceof KvIdError, `cause ${err.cause}`);
    assert.equal(cause.code, "unavailable");
    assert.match(cause.message, /BUSY/);
    assert.ok(heldRec.calls.length >= 2, "retried, not failed at once");
    // ...and one with time to wait gets its ID once the script is gone.
    const { client, rec, healed } = healOn(
      open.redis,
      "BUSY",
      () => command(server.url, "SCRIPT", "KILL"),
    );
    await using id = new KvId("state-busy", { redis: client, timeout: 30_000 });
    assert.equal(await id.next(), 1);
    assert.ok(healed() !== undefined && failedWith(rec, "BUSY") >= 1);
    await busy;
  },
});

Deno.test({
  name: "states: CLUSTERDOWN (a node without its slots) is retried until the slots are served",
  timeout: 60_000,
  fn: async () => {
    await using node = await spawnRedis([
      "--cluster-enabled",
      "yes",
      "--cluster-config-file",
      "nodes.conf",
    ]);
    await waitUntil(() => command(node.url, "PING").catch(() => false), "PING");
    await using open = await openClient("node-redis", node.url);
    const { client, rec, healed } = healOn(
      open.redis,
      "CLUSTERDOWN",
      () => command(node.url, "CLUSTER", "ADDSLOTSRANGE", "0", "16383"),
    );
    await using id = new KvId("state-cluster", { redis: client, timeout: 30_000 });
    assert.equal(await id.next(), 1);
    assert.ok(healed() !== undefined && failedWith(rec, "CLUSTERDOWN") >= 1);
  },
});

Deno.test({
  name: "states: NOREPLICAS, OOM and MISCONF (writes refused for now) are retried, not 500",
  timeout: 90_000,
  fn: async (t) => {
    // Each staged for real on a server of its own; `heal` is what the operator does.
    const cases: {
      word: string;
      args?: (dir: string) => string[];
      stage: (url: string, dir: string) => Promise<unknown>;
      heal: (url: string) => Promise<unknown>;
    }[] = [{
      word: "NOREPLICAS",
      stage: (url) => command(url, "CONFIG", "SET", "min-replicas-to-write", "1"),
      heal: (url) => command(url, "CONFIG", "SET", "min-replicas-to-write", "0"),
    }, {
      // A tiny maxmemory with noeviction: every write is refused.
      word: "OOM",
      stage: async (url) => {
        await command(url, "CONFIG", "SET", "maxmemory-policy", "noeviction");
        await command(url, "CONFIG", "SET", "maxmemory", "1");
      },
      heal: (url) => command(url, "CONFIG", "SET", "maxmemory", "0"),
    }, {
      // A BGSAVE that failed (its directory vanished) with stop-writes-on-bgsave-error (the
      // default) and a save schedule: writes are refused until a save succeeds.
      word: "MISCONF",
      args: (dir) => ["--dir", `${dir}/gone`, "--save", "3600 1"],
      stage: async (url, dir) => {
        await command(url, "CONFIG", "SET", "stop-writes-on-bgsave-error", "yes");
        await Deno.remove(`${dir}/gone`, { recursive: true });
        await command(url, "BGSAVE");
        await waitUntil(async () => {
          const text = String(await command(url, "INFO", "persistence"));
          return /rdb_bgsave_in_progress:0/.test(text) && /rdb_last_bgsave_status:err/.test(text);
        }, "the BGSAVE to fail");
      },
      heal: (url) => command(url, "CONFIG", "SET", "stop-writes-on-bgsave-error", "no"),
    }];
    for (const { word, args, stage, heal } of cases) {
      await t.step(word, async () => {
        const dir = await Deno.makeTempDir({ prefix: `kvid-${word}-` });
        await Deno.mkdir(`${dir}/gone`);
        await using _dir = { [Symbol.asyncDispose]: () => Deno.remove(dir, { recursive: true }) };
        await using server = await spawnRedis(args?.(dir) ?? [], dir);
        await waitUntil(() => command(server.url, "PING").catch(() => false), "PING");
        await stage(server.url, dir);
        await assert.rejects(
          command(server.url, "HINCRBY", "kvid", "probe", "1"),
          (e: Error) => e.message.startsWith(word),
        );
        await using open = await openClient("node-redis", server.url);
        // A caller with a short deadline: retried until it, then a timeout whose cause is
        // "unavailable" with the server's words (the service's 503 with Retry-After).
        const heldRec = new Recorder(open.redis);
        const err = await (async () => {
          await using held = new KvId(`held-${word}`, { redis: heldRec, timeout: 300 });
          return await rejectsWith(held.next(), "timeout");
        })();
        const cause = err.cause as KvIdError;
        assert.ok(cause instanceof KvIdError, `cause ${err.cause}`);
        assert.equal(cause.code, "unavailable");
        assert.match(cause.message, new RegExp(word));
        assert.ok(
          heldRec.calls.length >= 2,
          `retried, not failed at once: ${heldRec.calls.length}`,
        );
        // One with time to wait gets its ID once the operator healed the server.
        const { client, rec, healed } = healOn(open.redis, word, () => heal(server.url));
        await using id = new KvId(`state-${word}`, { redis: client, timeout: 30_000 });
        assert.equal(await id.next(), 1);
        assert.ok(healed() !== undefined && failedWith(rec, word) >= 1);
      });
    }
  },
});

Deno.test("states: which server words are transient and which are refusals", () => {
  class ReplyError extends Error {}
  const code = (message: string) => toKvIdError(new ReplyError(message), "kvid", "x").code;
  for (
    const m of [
      "LOADING Redis is loading the dataset in memory",
      "LOADING kvrocks is restoring the db from backup", // Kvrocks
      "ERR LOADING kvrocks is restoring the db from backup", // Kvrocks, prefixed
      "READONLY You can't write against a read only replica.",
      "READONLY You can't write against a read only slave.", // Kvrocks
      "MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.",
      "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSCRIPT.",
      "TRYAGAIN Multiple keys request during rehashing of slot",
      "TRYAGAIN Can't write to slot being migrated which is in write forbidden phase", // Kvrocks
      "CLUSTERDOWN The cluster is down",
      "CLUSTERDOWN Hash slot not served",
      "ERR Error running script (call to f_1): @user_script:12: READONLY You can't write", // in a script
      "NOREPLICAS Not enough good replicas to write.",
      "OOM command not allowed when used memory > 'maxmemory'.",
      "ERR Error running script (call to f_1): @user_script:3: OOM command not allowed when used memory > 'maxmemory'.",
      "MISCONF Redis is configured to save RDB snapshots, but it's currently unable to persist to disk.",
      "MISCONF Valkey is configured to save RDB snapshots, but it's currently unable to persist to disk.",
    ]
  ) assert.equal(code(m), "unavailable", m);
  for (
    const [m, c] of [
      ["WRONGTYPE Operation against a key holding the wrong kind of value", "reply"],
      ["ERR hash value is not an integer", "reply"],
      ["ERR increment or decrement would overflow", "overflow"],
      ["BUSYKEY Target key name already exists.", "reply"],
    ] as const
  ) assert.equal(code(m), c, m);
});
