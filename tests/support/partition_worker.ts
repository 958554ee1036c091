/**
 * One partition scenario, run by `partition.ts` as the first process of a fresh network and PID
 * namespace (never run it directly: it rewrites the namespace's firewall). It starts 1 primary,
 * 2 replicas and 3 Sentinels, each on its own loopback address, two clients A and B (node-redis
 * `createSentinel`, each from an address of its own), runs generators on one counter while it
 * splits and heals the network with `nft`, and prints what every generator got as one JSON line.
 *
 * @module
 */

import { createClient, createSentinel } from "redis";
import postgres from "postgres";
import { PostgresStore } from "../../src/stores/postgres/mod.ts";
import { startPostgres, startPostgresStandby } from "./sql_servers.ts";
import { HttpStore } from "../../src/client/mod.ts";
import { createHandler } from "../../src/service/mod.ts";
import { fromNodeRedis, KvId, KvIdError, type RedisClient } from "../../mod.ts";
import { command, redisBinary } from "./redis_server.ts";
import type { GeneratorLog, Outcome, Scenario } from "./partition.ts";
import { prng } from "./partition.ts";

const scenario = JSON.parse(Deno.args[0]) as Scenario;
const P = "127.0.0.11", R1 = "127.0.0.12", R2 = "127.0.0.13";
const SENTINELS = ["127.0.0.21", "127.0.0.22", "127.0.0.23"];
const A = "127.0.0.31", B = "127.0.0.32";
const SERVICE = "127.0.0.41", HA = "127.0.0.51", HB = "127.0.0.52";
const NODES = [P, R1, R2];
const NAME = "kvid";
const COUNTER = "ids";
const events: string[] = [];
const t0 = performance.now();
const note = (what: string) =>
  events.push(`${((performance.now() - t0) / 1000).toFixed(2)}s ${what}`);

function run(bin: string, ...args: string[]): void {
  const out = new Deno.Command(bin, { args, stdout: "null", stderr: "piped" }).outputSync();
  if (!out.success) {
    throw new Error(`${bin} ${args.join(" ")}: ${new TextDecoder().decode(out.stderr)}`);
  }
}

// ---- the network ------------------------------------------------------------------------------
run("ip", "link", "set", "lo", "up");
run("nft", "add", "table", "inet", "kvid");
run("nft", "add", "chain", "inet", "kvid", "input", "{ type filter hook input priority 0; }");

/** Drop every packet between addresses of different groups (both ways). */
function split(groups: string[][]): void {
  run("nft", "flush", "chain", "inet", "kvid", "input");
  for (const from of groups) {
    for (const to of groups) {
      if (from === to || from.length === 0 || to.length === 0) continue;
      run(
        "nft",
        "add",
        "rule",
        "inet",
        "kvid",
        "input",
        `ip saddr { ${from.join(", ")} } ip daddr { ${to.join(", ")} } drop`,
      );
    }
  }
  note(`split ${groups.map((g) => `{${g.map(label).join(" ")}}`).join(" | ")}`);
}

function heal(): void {
  run("nft", "flush", "chain", "inet", "kvid", "input");
  note("healed");
}

const LABELS: Record<string, string> = {
  [P]: "P",
  [R1]: "R1",
  [R2]: "R2",
  [A]: "A",
  [B]: "B",
  [SENTINELS[0]]: "S1",
  [SENTINELS[1]]: "S2",
  [SENTINELS[2]]: "S3",
  [SERVICE]: "service",
  [HA]: "HA",
  [HB]: "HB",
};
const label = (ip: string) => LABELS[ip] ?? ip;

// ---- the servers -------------------------------------------------------------------------------
const dir = await Deno.makeTempDir({ prefix: "kvid-partition-" });
const children: Deno.ChildProcess[] = [];

async function start(ip: string, lines: string[][], sentinel = false): Promise<void> {
  const home = `${dir}/${ip}`;
  await Deno.mkdir(home);
  const conf = [
    ["bind", ip],
    ["port", sentinel ? "26379" : "6379"],
    ["dir", home],
    ["protected-mode", "no"],
    ["logfile", `${home}/log`],
    ["bind-source-addr", ip],
    ...(sentinel ? [] : [
      ["save", '""'],
      ["appendonly", "yes"],
      ["repl-diskless-sync-delay", "0"],
      ["repl-timeout", "5"],
    ]),
    ...lines,
  ];
  await Deno.writeTextFile(`${home}/redis.conf`, conf.map((l) => l.join(" ")).join("\n") + "\n");
  children.push(
    new Deno.Command(redisBinary(), {
      args: sentinel ? [`${home}/redis.conf`, "--sentinel"] : [`${home}/redis.conf`],
      stdin: "null",
      stdout: "null",
      stderr: "null",
    }).spawn(),
  );
  await until(
    `${label(ip)} answers`,
    async () => await command(`redis://${ip}:${sentinel ? 26379 : 6379}`, "PING") === "PONG",
    10_000,
  );
}

async function until(what: string, check: () => Promise<boolean>, ms = 20_000): Promise<void> {
  const deadline = performance.now() + ms;
  let last: unknown;
  while (true) {
    try {
      if (await check()) return;
    } catch (err) {
      last = err;
    }
    if (performance.now() > deadline) {
      throw new Error(`timed out waiting for ${what}${last ? ` (${last})` : ""}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function info(ip: string): Promise<Map<string, string>> {
  const text = String(await command(`redis://${ip}:6379`, "INFO", "replication"));
  return new Map(
    text.split("\r\n").filter((l) => l.includes(":")).map((l) => {
      const at = l.indexOf(":");
      return [l.slice(0, at), l.slice(at + 1)];
    }),
  );
}

/** The master every Sentinel names, or undefined while they disagree. */
async function agreedMaster(): Promise<string | undefined> {
  const seen = new Set<string>();
  for (const s of SENTINELS) {
    const reply = await command(`redis://${s}:26379`, "SENTINEL", "get-master-addr-by-name", NAME);
    seen.add((reply as string[])[0]);
  }
  return seen.size === 1 ? [...seen][0] : undefined;
}

/** Wait until the Sentinels agree on a master that says it is one, with `replicas` online. */
async function settled(replicas: number, ms = 30_000): Promise<string> {
  let master = "";
  await until(`one master with ${replicas} replicas online`, async () => {
    const m = await agreedMaster();
    if (m === undefined) return false;
    const r = await info(m);
    const online = [...r.entries()].filter(([k, v]) => /^slave\d/.test(k) && /online/.test(v));
    master = m;
    return r.get("role") === "master" && online.length >= replicas;
  }, ms);
  return master;
}

// ---- the clients and generators -----------------------------------------------------------------
type Sentinel = ReturnType<typeof createSentinel>;
const clients: Sentinel[] = [];

async function client(from: string): Promise<{ raw: Sentinel; redis: RedisClient }> {
  const socket = {
    localAddress: from,
    connectTimeout: 1_000,
    reconnectStrategy: (n: number) => Math.min(50 * n, 300),
  };
  const raw = createSentinel({
    name: NAME,
    sentinelRootNodes: SENTINELS.map((host) => ({ host, port: 26379 })),
    nodeClientOptions: { socket },
    sentinelClientOptions: { socket },
  });
  raw.on("error", () => {});
  await raw.connect();
  clients.push(raw);
  return { raw, redis: fromNodeRedis(raw) };
}

const logs: GeneratorLog[] = [];

/** A generator taking IDs until `stop()` says so, logging every ID and error. */
async function drive(
  name: string,
  redis: RedisClient,
  stop: () => boolean,
  extra: Record<string, unknown> = {},
): Promise<GeneratorLog> {
  const log: GeneratorLog = { name, runs: [], errors: {} };
  logs.push(log);
  await using gen = new KvId(COUNTER, {
    redis,
    replicas: scenario.replicas,
    minStep: 100,
    maxStep: 100,
    timeout: 2_000,
    ...scenario.options,
    ...extra,
  });
  while (!stop()) {
    try {
      record(log, await gen.nextBatch(50));
    } catch (err) {
      const key = err instanceof KvIdError
        ? `${err.code}: ${
          String((err.cause as Error | undefined)?.message ?? err.message).slice(0, 80)
        }`
        : String(err).slice(0, 80);
      log.errors[key] = (log.errors[key] ?? 0) + 1;
    }
    await new Promise((r) => setTimeout(r, 0));
  }
  return log;
}

function record(log: GeneratorLog, ids: number[]): void {
  for (const id of ids) {
    const lastRun = log.runs.at(-1);
    if (lastRun !== undefined && lastRun[0] + lastRun[1] === id) lastRun[1]++;
    else log.runs.push([id, 1]);
  }
}

const high = (log: GeneratorLog) => {
  const r = log.runs.at(-1);
  return r === undefined ? 0 : r[0] + r[1] - 1;
};
const count = (log: GeneratorLog) => log.runs.reduce((n, [, c]) => n + c, 0);
const maxOf = () => Math.max(0, ...logs.map(high));
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

// ---- the scenarios --------------------------------------------------------------------------------
async function sentinelScenario(): Promise<void> {
  await start(P, []);
  for (const r of [R1, R2]) await start(r, [["replicaof", `${P} 6379`]]);
  for (const s of SENTINELS) {
    await start(s, [
      ["sentinel", `monitor ${NAME} ${P} 6379 2`],
      ["sentinel", `down-after-milliseconds ${NAME} 1000`],
      ["sentinel", `failover-timeout ${NAME} 5000`],
      ["sentinel", `announce-ip ${s}`],
    ], true);
  }
  await settled(2);
  await until("every Sentinel sees 2 replicas and 2 other Sentinels", async () => {
    for (const s of SENTINELS) {
      const url = `redis://${s}:26379`;
      if ((await command(url, "SENTINEL", "REPLICAS", NAME) as unknown[]).length !== 2) {
        return false;
      }
      if ((await command(url, "SENTINEL", "SENTINELS", NAME) as unknown[]).length !== 2) {
        return false;
      }
    }
    return true;
  });
  note("P, R1, R2 and 3 Sentinels up");
  if (Deno.env.get("KVID_PARTITION_DEBUG")) {
    note(String(await command(`redis://${P}:6379`, "CLIENT", "LIST")));
  }
  const a = await client(A);
  const b = await client(B);

  if (scenario.kind === "split-live" || scenario.kind === "split-closed") {
    let stopA = false, stopB = false;
    const aRun = drive("A1", a.redis, () => stopA);
    const bRun = drive("B1", b.redis, () => stopB);
    const refused = (l: GeneratorLog) => Object.keys(l.errors).some((k) => k.startsWith("config"));
    await until(
      "A and B got IDs (or were refused)",
      () => Promise.resolve(logs.every((l) => count(l) >= 200 || refused(l))),
    );
    if (logs.every(refused)) {
      note("both generators refused before the split");
      stopA = stopB = true;
      await Promise.all([aRun, bRun]);
      return;
    }
    split([[P, R1, A], [R2, ...SENTINELS, B]]);
    await until(
      "the Sentinels promoted R2",
      async () => await agreedMaster() === R2 && (await info(R2)).get("role") === "master",
    );
    note(`R2 promoted; A has ${count(logs[0])} IDs, B ${count(logs[1])}`);
    await pause(3_000); // the split's duration: A serves from P meanwhile (or cannot)
    if (scenario.kind === "split-closed") {
      stopA = true;
      await aRun;
      a.raw.destroy();
      note(`A closed with ${count(logs[0])} IDs, up to ${high(logs[0])}`);
    }
    heal();
    await settled(2);
    note("P and R1 replicate R2");
    // B (and A, when live) carry on; a fresh generator on B takes IDs past every ID served.
    const target = maxOf();
    let fresh = false;
    const b2 = drive("B2", b.redis, () => fresh);
    await until(
      `a generator of B past ${target}`,
      () => Promise.resolve(logs.some((l) => l.name.startsWith("B") && high(l) > target)),
      20_000,
    ).catch((err) => note(String(err)));
    stopA = stopB = fresh = true;
    await Promise.all([aRun, bRun, b2]);
  } else if (scenario.kind === "nemesis") {
    // The schedule draws from its own PRNG, the generators' lifetimes from theirs: the same
    // seed stages the same splits whatever the timing.
    const random = prng(scenario.seed);
    const lifetimes = prng(scenario.seed ^ 0x5bd1e995);
    let stop = false;
    // Each client churns generators: one runs for a random while, closes, the next one opens.
    const churn = async (who: string, redis: RedisClient) => {
      for (let i = 1; !stop; i++) {
        const end = performance.now() + 500 + lifetimes() * 2_500;
        await drive(`${who}${i}`, redis, () => stop || performance.now() > end);
      }
    };
    const runs = [churn("A", a.redis), churn("B", b.redis)];
    const everyone = [...NODES, ...SENTINELS, A, B];
    const endAt = performance.now() + 24_000;
    while (performance.now() < endAt) {
      await pause(500 + random() * 1_500);
      // Half the splits isolate the current primary with a random few of the others (the
      // split that makes Sentinel promote while the old primary still serves); the other half
      // are random halves.
      const primary = random() < 0.5 ? await agreedMaster().catch(() => undefined) : undefined;
      const side = everyone.map((ip) =>
        primary === undefined
          ? random() < 0.5
          : ip === primary || (ip !== SENTINELS[0] && ip !== SENTINELS[1] && random() < 0.4)
      );
      if (side.every((s) => s === side[0])) side[Math.floor(random() * side.length)] = !side[0];
      split([everyone.filter((_, i) => side[i]), everyone.filter((_, i) => !side[i])]);
      await pause(2_000 + random() * 4_000);
      heal();
    }
    stop = true;
    await Promise.all(runs);
    await settled(2, 40_000);
    note(`settled after the nemesis; ${logs.length} generators`);
    // Fresh generators on both clients, past every ID served.
    const target = maxOf();
    let done = false;
    const last = [drive("A-final", a.redis, () => done), drive("B-final", b.redis, () => done)];
    await until(
      `a fresh generator past ${target}`,
      () => Promise.resolve(logs.some((l) => l.name.endsWith("final") && high(l) > target)),
      20_000,
    ).catch((err) => note(String(err)));
    done = true;
    await Promise.all(last);
  } else if (scenario.kind === "resent-wait") {
    // The control: a client that cannot name its connection (no clientInfo, no sendCommand),
    // so the WAIT is taken as it answers, as before the check.
    const unchecked: RedisClient = { ...a.redis, clientInfo: undefined, sendCommand: undefined };
    const gen = new KvId(COUNTER, {
      redis: scenario.unchecked ? unchecked : a.redis,
      replicas: scenario.replicas,
      minStep: 50,
      maxStep: 50,
      prefetchAt: 0,
      timeout: 5_000,
      ...scenario.options,
    });
    const log: GeneratorLog = { name: "A1", runs: [], errors: {} };
    logs.push(log);
    record(log, await gen.nextBatch(50));
    // P keeps both replicas listed (repl-timeout 5 s) but none acknowledges any more.
    split([[P, ...SENTINELS, A, B], [R1, R2]]);
    const pending = gen.nextBatch(50);
    let killed = "";
    await until("A's WAIT pending on P", async () => {
      const list = String(await command(`redis://${P}:6379`, "CLIENT", "LIST"));
      const line = list.split("\n").find((l) => l.includes(`addr=${A}:`) && /cmd=wait\b/.test(l));
      const id = line?.match(/\bid=(\d+)/)?.[1];
      if (id === undefined) return false;
      killed = String(await command(`redis://${P}:6379`, "CLIENT", "KILL", "ID", id));
      return true;
    }, 5_000);
    note(`killed A's connection while WAIT was pending (${killed})`);
    try {
      record(log, await pending);
      note(`A served up to ${high(log)}`);
    } catch (err) {
      log.errors[`${(err as KvIdError).code}`] = 1;
      note(`A's call failed: ${err}`);
    }
    await gen.close();
    a.raw.destroy();
    // Now the failover: P cut off from everyone; a replica that never got A's last range wins.
    split([[P, A], [R1, R2, ...SENTINELS, B]]);
    await until("a replica promoted", async () => {
      const m = await agreedMaster();
      return m !== undefined && m !== P && (await info(m)).get("role") === "master";
    });
    note(`promoted ${label((await agreedMaster())!)}`);
    // B takes IDs until past A's (bounded: 15 s), with replicas 0: the survivor has one
    // replica at most during the split.
    let done = false;
    const bound = setTimeout(() => done = true, 15_000);
    const bRun = drive("B1", b.redis, () => done || high(logs.at(-1)!) > high(log), {
      replicas: 0,
      durability: "best-effort",
    });
    await bRun;
    clearTimeout(bound);
  }
}

/**
 * PostgreSQL: a primary, a streaming standby (synchronous with `scenario.options.sync`); the
 * standby's replication link cut (its packets to the primary dropped: the walreceiver runs as
 * the user postgres, the generators as this process' user), the standby promoted while A still
 * commits on the old primary, then a fresh generator B on the promoted one.
 */
async function pgSplit(): Promise<void> {
  const sync = scenario.options?.sync === true;
  await using primary = await startPostgres();
  const admin = postgres(primary.url, { max: 1, onnotice: () => {} });
  await new PostgresStore(admin).ensureTable();
  await using standby = await startPostgresStandby(primary);
  if (sync) {
    await admin`ALTER SYSTEM SET synchronous_standby_names = '*'`;
    await admin`SELECT pg_reload_conf()`;
    await until(
      "the standby synchronous",
      async () =>
        (await admin`SELECT 1 FROM pg_stat_replication WHERE sync_state = 'sync'`).length > 0,
    );
  } else {
    await until(
      "the standby streaming",
      async () =>
        (await admin`SELECT 1 FROM pg_stat_replication WHERE state = 'streaming'`).length > 0,
    );
  }
  await admin.end({ timeout: 1 });
  note(`primary and ${sync ? "synchronous" : "asynchronous"} standby up`);
  const take = async (name: string, url: string, stop: () => boolean) => {
    const log: GeneratorLog = { name, runs: [], errors: {} };
    logs.push(log);
    const sql = postgres(url, { max: 1, onnotice: () => {}, connect_timeout: 2 });
    const gen = new KvId("order", {
      store: new PostgresStore(sql),
      minStep: 100,
      maxStep: 100,
      timeout: 2_000,
    });
    while (!stop()) {
      try {
        record(log, await gen.nextBatch(50));
      } catch (err) {
        const key = err instanceof KvIdError ? err.code : String(err).slice(0, 60);
        log.errors[key] = (log.errors[key] ?? 0) + 1;
      }
      await new Promise((r) => setTimeout(r, 0));
    }
    // A commit waiting for a standby that is gone never returns: do not wait for it.
    const bounded = (p: Promise<unknown>) =>
      Promise.race([p.catch(() => {}), new Promise((r) => setTimeout(r, 2_000))]);
    await bounded(gen.close());
    await bounded(sql.end({ timeout: 1 }));
  };
  let stopA = false;
  const aRun = take("A1", primary.url, () => stopA);
  await until("A got IDs", () => Promise.resolve(high(logs[0]) >= 500));
  run("nft", "add", "chain", "inet", "kvid", "output", "{ type filter hook output priority 0; }");
  run(
    "nft",
    "add",
    "rule",
    "inet",
    "kvid",
    "output",
    `ip daddr 127.0.0.1 tcp dport ${primary.port} meta skuid postgres drop`,
  );
  note(`replication cut; A has ${count(logs[0])} IDs`);
  await standby.promote();
  note("standby promoted");
  await pause(3_000); // A commits on the old primary meanwhile (or cannot)
  stopA = true;
  await aRun;
  note(`A closed with ${count(logs[0])} IDs, up to ${high(logs[0])}`);
  const target = high(logs[0]);
  let done = false;
  const bound = setTimeout(() => done = true, 15_000);
  await take("B1", standby.url, () => done || high(logs[1]) > target);
  clearTimeout(bound);
}

/**
 * HttpStore clients HA and HB on the service (in this process, on its own address), the service
 * on one Redis P: random splits among the four, generators closing and opening, every call
 * watched: it must settle (resolve or reject) within its timeout and a margin.
 */
async function httpNemesis(): Promise<void> {
  await start(P, []);
  const redisClient = createClient({
    socket: {
      host: P,
      port: 6379,
      localAddress: SERVICE,
      connectTimeout: 1_000,
      reconnectStrategy: (n: number) => Math.min(50 * n, 300),
    },
  });
  redisClient.on("error", () => {});
  await redisClient.connect();
  const token = "partition-token-0123456789";
  const service = createHandler({
    redis: fromNodeRedis(redisClient),
    tokens: `${token}:*`,
    log() {},
  });
  const server = Deno.serve({ hostname: SERVICE, port: 8080, onListen() {} }, service.fetch);
  const httpClients: Deno.HttpClient[] = [];
  const storeFrom = (from: string) => {
    const client = Deno.createHttpClient({ localAddress: from });
    httpClients.push(client);
    return new HttpStore(`http://${SERVICE}:8080`, {
      token,
      requestTimeout: 1_000,
      fetch: (input, init) => fetch(input, { ...init, client }),
    });
  };
  const random = prng(scenario.seed);
  const lifetimes = prng(scenario.seed ^ 0x5bd1e995);
  let stop = false;
  let unsettled = 0;
  const churn = async (who: string, from: string) => {
    const store = storeFrom(from);
    for (let i = 1; !stop; i++) {
      const end = performance.now() + 500 + lifetimes() * 2_500;
      const log: GeneratorLog = { name: `${who}${i}`, runs: [], errors: {} };
      logs.push(log);
      const gen = new KvId(COUNTER, { store, minStep: 100, maxStep: 100, timeout: 3_000 });
      while (!stop && performance.now() < end) {
        const started = performance.now();
        const watch = setTimeout(() => unsettled++, 3_000 + 5_000);
        try {
          record(log, await gen.nextBatch(50));
        } catch (err) {
          const key = err instanceof KvIdError ? err.code : String(err).slice(0, 60);
          log.errors[key] = (log.errors[key] ?? 0) + 1;
        } finally {
          clearTimeout(watch);
        }
        void started;
        await new Promise((r) => setTimeout(r, 0));
      }
      await gen.close().catch(() => {});
    }
  };
  const runs = [churn("HA", HA), churn("HB", HB)];
  const everyone = [P, SERVICE, HA, HB];
  const endAt = performance.now() + 20_000;
  while (performance.now() < endAt) {
    await pause(500 + random() * 1_500);
    const side = everyone.map(() => random() < 0.5);
    if (side.every((s) => s === side[0])) side[Math.floor(random() * side.length)] = !side[0];
    split([everyone.filter((_, i) => side[i]), everyone.filter((_, i) => !side[i])]);
    await pause(1_000 + random() * 3_000);
    heal();
  }
  stop = true;
  await Promise.all(runs);
  note(`${unsettled} calls unsettled past their timeout`);
  if (unsettled > 0) logs.push({ name: "unsettled", runs: [], errors: { unsettled } });
  await server.shutdown();
  await service.close();
  await redisClient.close().catch(() => {});
  for (const c of httpClients) c.close();
}

try {
  if (scenario.kind === "http-nemesis") await httpNemesis();
  else if (scenario.kind === "pg-split") await pgSplit();
  else await sentinelScenario();
} catch (err) {
  console.error(events.join("\n"));
  if (Deno.env.get("KVID_PARTITION_DEBUG")) {
    for (const ip of [...NODES, ...SENTINELS]) {
      const log = await Deno.readTextFile(`${dir}/${ip}/log`).catch(() => "");
      console.error(`--- ${label(ip)}\n${log.split("\n").slice(-25).join("\n")}`);
    }
  }
  throw err;
} finally {
  for (const c of clients) {
    try {
      c.destroy();
    } catch { /* closed */ }
  }
  for (const child of children) {
    try {
      child.kill("SIGKILL");
    } catch { /* exited */ }
    await child.status;
  }
  await Deno.remove(dir, { recursive: true });
}

const outcome: Outcome = { generators: logs, events };
console.log(JSON.stringify(outcome));
// Node-redis may keep a reconnect timer of a destroyed sentinel client; this process is done.
Deno.exit(0);
