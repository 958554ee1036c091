/**
 * KvId on a real 3-master Redis Cluster on loopback, through node-redis `createCluster` and
 * ioredis `Cluster`: hash tags, and no duplicate while the slot holding the counter is moved
 * (MIGRATING/IMPORTING, MIGRATE, SETSLOT NODE: ASK then MOVED redirects) during a run.
 */

import "../../support/deadline.ts"; // a time limit on every test of this file
import assert from "node:assert/strict";
import { createCluster } from "redis";
import { Cluster } from "ioredis";
import { fromIoredis, fromNodeRedis, KvId, type RedisClient } from "../../../mod.ts";
import { command, redisBinary, redisBinaryMissing } from "../../support/redis_server.ts";
import { assertDisjoint, IdRuns } from "../../support/assert.ts";

// Routing steps, with replicas 0: a master with a replica not confirmed on is refused under
// "strict" (a failover to it re-issues IDs); the failover itself is the replicas-1 step's.
const BEST_EFFORT = "best-effort" as const;

const HOST = "127.0.0.1";

function onPath(bin: string): boolean {
  try {
    return new Deno.Command(bin, { args: ["--version"], stdout: "null", stderr: "null" })
      .outputSync().success;
  } catch {
    return false;
  }
}
// The cluster is made of redis-server processes (valkey-server with KVID_TEST_SERVER), joined by
// redis-cli, which speaks to both.
const ignore = redisBinaryMissing() || !onPath("redis-cli");

/** A cluster-enabled server started by the test. */
interface Node {
  port: number;
  url: string;
  id: string;
  child: Deno.ChildProcess;
}

function portFree(port: number): boolean {
  try {
    Deno.listen({ hostname: HOST, port }).close();
    return true;
  } catch {
    return false;
  }
}

/** A port whose cluster bus port (+10000) is free too. */
function clusterPort(taken: Set<number>): number {
  for (let i = 0; i < 1000; i++) {
    const port = 20000 + Math.floor(Math.random() * 30000);
    if (taken.has(port) || taken.has(port + 10000)) continue;
    if (portFree(port) && portFree(port + 10000)) {
      taken.add(port).add(port + 10000);
      return port;
    }
  }
  throw new Error("no free port pair for a cluster node");
}

/** Resolves once `check` holds, polling every 50 ms for at most `ms`. */
async function until(what: string, check: () => Promise<boolean>, ms = 30_000): Promise<void> {
  const deadline = performance.now() + ms;
  while (!(await check().catch(() => false))) {
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Start a cluster-enabled redis-server on `port` (again, after a kill: it keeps its config). */
function spawnNode(dir: string, port: number): Deno.ChildProcess {
  return new Deno.Command(redisBinary(), {
    args: [
      "--port",
      String(port),
      "--bind",
      HOST,
      "--cluster-enabled",
      "yes",
      "--cluster-config-file",
      `${dir}/nodes-${port}.conf`,
      "--cluster-node-timeout",
      "3000",
      "--dir",
      dir,
      "--save",
      "",
      // AOF on (WAITAOF needs it), a directory of its own per node in the shared one.
      "--appendonly",
      "yes",
      "--appenddirname",
      `aof-${port}`,
      "--repl-diskless-sync-delay",
      "0",
      "--protected-mode",
      "no",
      "--daemonize",
      "no",
    ],
    stdin: "null",
    stdout: "null",
    stderr: "null",
  }).spawn();
}

/**
 * Start 3 masters and 3 replicas and join them with `redis-cli --cluster create`; the first
 * 3 nodes returned are the masters, node `i + 3` replicates node `i`.
 */
async function startCluster(dir: string): Promise<Node[]> {
  const taken = new Set<number>();
  const nodes: Node[] = [];
  try {
    for (let i = 0; i < 6; i++) {
      const port = clusterPort(taken);
      const child = spawnNode(dir, port);
      const url = `redis://${HOST}:${port}`;
      nodes.push({ port, url, id: "", child });
      await until(`node ${port}`, async () => await command(url, "PING") === "PONG");
      nodes[i].id = String(await command(url, "CLUSTER", "MYID"));
    }
    const create = await new Deno.Command("redis-cli", {
      args: [
        "--cluster",
        "create",
        ...nodes.map((n) => `${HOST}:${n.port}`),
        "--cluster-replicas",
        "1",
        "--cluster-yes",
      ],
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).output();
    const out = new TextDecoder().decode(create.stdout) + new TextDecoder().decode(create.stderr);
    if (!create.success) throw new Error(`redis-cli --cluster create failed:\n${out}`);
    // redis-cli picks masters and replicas itself: put them in the order promised above.
    const roles = await Promise.all(nodes.map((n) => info(n.url, "replication")));
    const masters = nodes.filter((_, i) => roles[i].get("role") === "master");
    const replicaOf = (m: Node) =>
      nodes.find((_, i) => roles[i].get("master_port") === String(m.port))!;
    nodes.splice(0, nodes.length, ...masters, ...masters.map(replicaOf));
    for (const m of masters) await waitReplicaOnline(m);
    for (const n of nodes) {
      await until("cluster_state:ok", async () => {
        const info = String(await command(n.url, "CLUSTER", "INFO"));
        // Every node must also know all three masters' slots.
        const slots = await command(n.url, "CLUSTER", "SLOTS") as unknown[];
        return info.includes("cluster_state:ok") && slots.length === 3;
      });
    }
    return nodes;
  } catch (err) {
    await stopCluster(nodes);
    throw err;
  }
}

async function stopCluster(nodes: Node[]): Promise<void> {
  await Promise.all(nodes.map(async (n) => {
    try {
      n.child.kill("SIGKILL");
    } catch { /* exited */ }
    await n.child.status;
  }));
}

/** `INFO <section>` as a map. */
async function info(url: string, section: string): Promise<Map<string, string>> {
  const text = String(await command(url, "INFO", section));
  return new Map(
    text.split("\r\n").filter((l) => l.includes(":")).map((l) => {
      const at = l.indexOf(":");
      return [l.slice(0, at), l.slice(at + 1)];
    }),
  );
}

/** Resolves once `master` reports one replica online. */
function waitReplicaOnline(master: Node): Promise<void> {
  return until(`a replica of ${master.port} online`, async () => {
    const r = await info(master.url, "replication");
    return r.get("role") === "master" && /state=online/.test(r.get("slave0") ?? "");
  }, 30_000);
}

/** The node serving `slot` now. */
async function owner(nodes: Node[], slot: number): Promise<Node> {
  const slots = await command(nodes[0].url, "CLUSTER", "SLOTS") as [number, number, unknown[]][];
  for (const [lo, hi, master] of slots) {
    if (slot >= lo && slot <= hi) return nodes.find((n) => n.port === Number(master[1]))!;
  }
  throw new Error(`slot ${slot} is not served`);
}

/**
 * Move `slot` from `from` to `to` the way `redis-cli --cluster reshard` does, calling
 * `between(stage)` after each stage so clients run against it.
 */
async function moveSlot(
  nodes: Node[],
  slot: number,
  from: Node,
  to: Node,
  between: (stage: string) => Promise<void>,
): Promise<void> {
  const s = String(slot);
  await command(to.url, "CLUSTER", "SETSLOT", s, "IMPORTING", from.id);
  await command(from.url, "CLUSTER", "SETSLOT", s, "MIGRATING", to.id);
  await between("migrating (the key still on the source)");
  const keys = await command(from.url, "CLUSTER", "GETKEYSINSLOT", s, "100") as string[];
  assert.ok(keys.length > 0, "the counter's hash is in the slot");
  await command(from.url, "MIGRATE", HOST, String(to.port), "", "0", "5000", "KEYS", ...keys);
  await between("migrated, slot not yet reassigned (ASK redirects)");
  for (const n of [to, from, ...nodes.filter((n) => n !== to && n !== from)]) {
    await command(n.url, "CLUSTER", "SETSLOT", s, "NODE", to.id);
  }
  await between("reassigned (MOVED redirects)");
}

Deno.test({
  name: "KvId on a 3-master Redis Cluster with node-redis and ioredis" +
    (ignore ? " (ignored: the test server binary or redis-cli is not on PATH)" : ""),
  ignore,
}, async (t) => {
  const dir = await Deno.makeTempDir({ prefix: "kvid-cluster-" });
  const all = await startCluster(dir);
  const nodes = all.slice(0, 3); // the masters; all[i + 3] replicates nodes[i]
  const nodeRedis = createCluster({
    rootNodes: [{ url: nodes[0].url }],
    defaults: { socket: { reconnectStrategy: (n: number) => Math.min(50 * n, 500) } },
  });
  nodeRedis.on("error", () => {});
  const ioredis = new Cluster([{ host: HOST, port: nodes[0].port }], {
    clusterRetryStrategy: (n: number) => Math.min(50 * n, 500),
    // A node connection (slot refreshes open their own) ends its socket and keeps a timer of
    // disconnectTimeout (2 s) until the socket closes: one closed just before the end of the
    // test would outlive it. 0: the socket is destroyed on the next turn instead.
    redisOptions: { disconnectTimeout: 0 },
  });
  ioredis.on("error", () => {});
  try {
    await nodeRedis.connect();
    const clients: [string, RedisClient][] = [
      ["node-redis", fromNodeRedis(nodeRedis)],
      ["ioredis", fromIoredis(ioredis)],
    ];
    // sendCommand is routed by its first argument on both cluster clients.
    for (const [, c] of clients) {
      await c.sendCommand!("HSET", ["{kvid}probe", "f", "7"]);
      assert.equal(String(await c.sendCommand!("HGET", ["{kvid}probe", "f"])), "7");
    }

    await t.step(
      "each client: unique increasing IDs, on any key, hash tags share a slot",
      async () => {
        for (const [kind, redis] of clients) {
          for (const key of ["kvid", "{kvid}orders", "{kvid}users"]) {
            await using id = new KvId(`${kind}:basic`, {
              redis,
              key,
              maxStep: 1000,
              prefetchAt: 0,
              durability: BEST_EFFORT,
            });
            const ids = await id.nextBatch(20_000);
            for (let i = 1; i < ids.length; i++) assert.equal(ids[i], ids[i - 1] + 1);
            assert.equal(ids[0], 1);
            assert.equal(await ioredis.hget(key, `${kind}:basic`), String(id.stats().high));
          }
        }
        const slot = (k: string) => command(nodes[0].url, "CLUSTER", "KEYSLOT", k);
        assert.equal(await slot("{kvid}orders"), await slot("{kvid}users"));
        assert.equal(await slot("{kvid}orders"), await slot("kvid"));
      },
    );

    await t.step("bigint above 2^53 is exact through both cluster clients", async () => {
      for (const [kind, redis] of clients) {
        await ioredis.hset("kvid", `${kind}:big`, "9007199254740990");
        await using id = new KvId(`${kind}:big`, {
          redis,
          bigint: true,
          minStep: 4,
          durability: BEST_EFFORT,
        });
        assert.equal(await id.next(), 9007199254740991n);
        assert.equal(await id.next(), 9007199254740992n);
      }
    });

    await t.step("the counter's slot moves during a run: no duplicate, no error", async () => {
      const name = "moving";
      const slot = Number(await command(nodes[0].url, "CLUSTER", "KEYSLOT", "kvid"));
      // Small steps so that every stage of the move sees many reservations from both clients.
      const gens = clients.map(([, redis]) =>
        new KvId(name, { redis, minStep: 50, maxStep: 50, timeout: 5000, durability: BEST_EFFORT })
      );
      // Runs of consecutive IDs, not every ID: how many IDs are made depends on machine speed.
      const ids = gens.map(() => new IdRuns());
      let running = true;
      const runs = gens.map(async (g, i) => {
        while (running) ids[i].add(await g.nextBatch(25));
      });
      const segments = () => gens.map((g) => g.stats().segments);
      const between = async (stage: string) => {
        const before = segments();
        // Let each generator reserve at least 5 times in this stage.
        await until(
          `reservations while ${stage}`,
          () => Promise.resolve(segments().every((n, i) => n >= before[i] + 5)),
        );
      };
      try {
        await between("start");
        const first = await owner(nodes, slot);
        const other = nodes.find((n) => n !== first)!;
        await moveSlot(nodes, slot, first, other, between);
        assert.equal((await owner(nodes, slot)).port, other.port);
        await moveSlot(nodes, slot, other, first, between);
        assert.equal((await owner(nodes, slot)).port, first.port);
      } finally {
        running = false;
        await Promise.all(runs);
        await Promise.all(gens.map((g) => g.close()));
      }
      // The clients were redirected both ways during the run.
      const redirects = { ASK: 0, MOVED: 0 };
      for (const n of nodes) {
        const info = String(await command(n.url, "INFO", "errorstats"));
        for (const kind of ["ASK", "MOVED"] as const) {
          redirects[kind] += Number(
            new RegExp(`errorstat_${kind}:count=(\\d+)`).exec(info)?.[1] ?? 0,
          );
        }
      }
      assert.ok(redirects.ASK > 0 && redirects.MOVED > 0, `redirects ${JSON.stringify(redirects)}`);
      const made = ids.reduce((n, r) => n + r.count, 0);
      console.log(`${made} IDs during 2 slot moves; redirects ${JSON.stringify(redirects)}`);
      assert.ok(made > 1000, `${made} IDs`);
      // Each IdRuns checked its generator's IDs increase as they were added.
      assertDisjoint(ids);
      // Redirects are the client's job: no failure where nothing confirms a reservation (Redis
      // 7.0). Where WAITAOF confirms each one (Valkey 8, Redis 7.2+), it is sent to the node
      // owning the slot in the client's map: when that changed between the reservation and its
      // confirmation, the connection check refuses the confirmation and the range is spent and
      // reserved again (a counted failure, never an error to a caller nor a duplicate).
      const serverInfo = String(await command(nodes[0].url, "INFO", "server"));
      const [major, minor] = (/redis_version:(\d+)\.(\d+)/.exec(serverInfo) ?? []).slice(1).map(
        Number,
      );
      const waitAof = major > 7 || (major === 7 && minor >= 2);
      for (const g of gens) {
        const { failures } = g.stats();
        if (waitAof) assert.ok(failures <= redirects.ASK + redirects.MOVED, `${failures} failures`);
        else assert.equal(failures, 0, "redirects are the client's job");
      }
      const counter = Number(await ioredis.hget("kvid", name));
      const highest = ids.reduce((m, r) => Math.max(m, r.max), 0);
      assert.ok(counter >= highest, "the counter moved with its hash");
    });

    await t.step("replicas 1: the counter's master is killed, its replica takes over", async () => {
      const name = "failover";
      const slot = Number(await command(nodes[0].url, "CLUSTER", "KEYSLOT", "kvid"));
      const gens = clients.map(([, redis]) =>
        // A timeout far above the failover (promotion after cluster-node-timeout 3000, then the
        // old master's return as a replica): a slow machine waits, it does not fail.
        new KvId(name, { redis, replicas: 1, minStep: 50, maxStep: 50, timeout: 60_000 })
      );
      // Runs of consecutive IDs, not every ID: how many IDs are made depends on machine speed.
      const ids = gens.map(() => new IdRuns());
      const unexpected: unknown[] = [];
      // Commands counted from here: the earlier steps' generators sent WAITAOF everywhere.
      for (const n of nodes) await command(n.url, "CONFIG", "RESETSTAT");
      let running = true;
      const runs = gens.map(async (g, i) => {
        while (running) {
          try {
            ids[i].add(await g.nextBatch(25));
          } catch (err) {
            // The docs promise no call fails across the failover: any error fails the test
            // (below, so that the loop ends and nothing is left unhandled).
            unexpected.push(err);
            return;
          }
        }
      });
      const segments = () => gens.map((g) => g.stats().segments);
      const reservations = async (stage: string) => {
        const before = segments();
        await until(`reservations ${stage}`, () => {
          // A generator that stopped on an unexpected error will not reserve again (thrown,
          // not rejected: until() takes a rejection for "not yet").
          if (unexpected.length) throw unexpected[0];
          return Promise.resolve(segments().every((n, i) => n >= before[i] + 5));
        }, 60_000);
      };
      try {
        await reservations("before the kill");
        const victim = await owner(nodes, slot);
        // WAIT went to the counter's master, over the connection that reserved: a WAIT on
        // another node would count replicas of nothing and confirm at once.
        const calls = async (n: Node, stat: string) =>
          Number(
            /calls=(\d+)/.exec((await info(n.url, "commandstats")).get(stat) ?? "")?.[1] ?? 0,
          );
        const waits = (n: Node) => calls(n, "cmdstat_wait");
        assert.ok(await waits(victim) > 0, "WAITs on the counter's master");
        for (const n of nodes) {
          if (n !== victim) assert.equal(await waits(n), 0, "no WAIT elsewhere");
        }
        // WAITAOF too, where the server has it (Valkey, Redis >= 7.2): on that master only.
        const hasWaitAof = /valkey_version|redis_version:(7\.[2-9]|[89])/.test(
          String(await command(victim.url, "INFO", "server")),
        );
        if (hasWaitAof) {
          assert.ok(await calls(victim, "cmdstat_waitaof") > 0, "WAITAOFs on the master");
          for (const n of nodes) {
            if (n !== victim) assert.equal(await calls(n, "cmdstat_waitaof"), 0, "elsewhere");
          }
        }
        const heir = all[nodes.indexOf(victim) + 3];
        victim.child.kill("SIGKILL");
        await victim.child.status;
        await until("the replica promoted", async () => {
          const r = await info(heir.url, "replication");
          return r.get("role") === "master" && (await owner(all, slot)) === heir;
        }, 60_000);
        // Back with its cluster config, the old master rejoins as the new one's replica: WAIT 1
        // can succeed again.
        victim.child = spawnNode(dir, victim.port);
        await waitReplicaOnline(heir);
        await reservations("after the failover");
      } finally {
        running = false;
        await Promise.all(runs);
        await Promise.all(gens.map((g) => g.close()));
      }
      assert.deepEqual(unexpected, [], "no call failed across the failover");
      // Each IdRuns checked its generator's IDs increase as they were added.
      assertDisjoint(ids);
      const counter = Number(await ioredis.hget("kvid", name));
      const highest = ids.reduce((m, r) => Math.max(m, r.max), 0);
      assert.ok(counter >= highest, "the new master's counter is above every ID handed out");
      const made = ids.reduce((n, r) => n + r.count, 0);
      console.log(`${made} IDs across a master failover, no call failed`);
    });
  } finally {
    nodeRedis.destroy();
    ioredis.disconnect();
    await stopCluster(all);
    await Deno.remove(dir, { recursive: true });
  }
});
