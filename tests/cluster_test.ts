/**
 * KvId on a real 3-master Redis Cluster on loopback, through node-redis `createCluster` and
 * ioredis `Cluster`: hash tags, and no duplicate while the slot holding the counter is moved
 * (MIGRATING/IMPORTING, MIGRATE, SETSLOT NODE: ASK then MOVED redirects) during a run.
 */

import assert from "node:assert/strict";
import { createCluster } from "redis";
import { Cluster } from "ioredis";
import { fromIoredis, fromNodeRedis, KvId, type RedisClient } from "../mod.ts";
import { command } from "./server.ts";

const HOST = "127.0.0.1";

function onPath(bin: string): boolean {
  try {
    return new Deno.Command(bin, { args: ["--version"], stdout: "null", stderr: "null" })
      .outputSync().success;
  } catch {
    return false;
  }
}
// The cluster is made of redis-server processes, whatever server the other tests use.
const ignore = !onPath("redis-server") || !onPath("redis-cli");

/** A cluster-enabled redis-server started by the test. */
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
async function until(what: string, check: () => Promise<boolean>, ms = 10_000): Promise<void> {
  const deadline = performance.now() + ms;
  while (!(await check().catch(() => false))) {
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Start 3 masters and join them with `redis-cli --cluster create`. */
async function startCluster(dir: string): Promise<Node[]> {
  const taken = new Set<number>();
  const nodes: Node[] = [];
  try {
    for (let i = 0; i < 3; i++) {
      const port = clusterPort(taken);
      const child = new Deno.Command("redis-server", {
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
          "--appendonly",
          "no",
          "--protected-mode",
          "no",
          "--daemonize",
          "no",
        ],
        stdin: "null",
        stdout: "null",
        stderr: "null",
      }).spawn();
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
        "0",
        "--cluster-yes",
      ],
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).output();
    const out = new TextDecoder().decode(create.stdout) + new TextDecoder().decode(create.stderr);
    if (!create.success) throw new Error(`redis-cli --cluster create failed:\n${out}`);
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
  name: "KvId on a 3-master Redis Cluster with node-redis and ioredis",
  ignore,
}, async (t) => {
  const dir = await Deno.makeTempDir({ prefix: "kvid-cluster-" });
  const nodes = await startCluster(dir);
  const nodeRedis = createCluster({
    rootNodes: [{ url: nodes[0].url }],
    defaults: { socket: { reconnectStrategy: (n: number) => Math.min(50 * n, 500) } },
  });
  nodeRedis.on("error", () => {});
  const ioredis = new Cluster([{ host: HOST, port: nodes[0].port }], {
    clusterRetryStrategy: (n: number) => Math.min(50 * n, 500),
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
        await using id = new KvId(`${kind}:big`, { redis, bigint: true, minStep: 4 });
        assert.equal(await id.next(), 9007199254740991n);
        assert.equal(await id.next(), 9007199254740992n);
      }
    });

    await t.step("the counter's slot moves during a run: no duplicate, no error", async () => {
      const name = "moving";
      const slot = Number(await command(nodes[0].url, "CLUSTER", "KEYSLOT", "kvid"));
      // Small steps so that every stage of the move sees many reservations from both clients.
      const gens = clients.map(([, redis]) =>
        new KvId(name, { redis, minStep: 50, maxStep: 50, timeout: 5000 })
      );
      const ids: number[][] = gens.map(() => []);
      let running = true;
      const runs = gens.map(async (g, i) => {
        while (running) ids[i].push(...await g.nextBatch(25));
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
      console.log(
        `${ids.flat().length} IDs during 2 slot moves; redirects ${JSON.stringify(redirects)}`,
      );
      const all = ids.flat();
      assert.ok(all.length > 1000, `${all.length} IDs`);
      for (const list of ids) {
        for (let i = 1; i < list.length; i++) assert.ok(list[i] > list[i - 1], "increasing");
      }
      assert.equal(new Set(all).size, all.length, "no duplicate across clients");
      for (const g of gens) assert.equal(g.stats().failures, 0, "redirects are the client's job");
      const counter = Number(await ioredis.hget("kvid", name));
      assert.ok(counter >= Math.max(...all), "the counter moved with its hash");
    });
  } finally {
    nodeRedis.destroy();
    ioredis.disconnect();
    await stopCluster(nodes);
    await Deno.remove(dir, { recursive: true });
  }
});
