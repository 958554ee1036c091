/**
 * The interleaved store on 3 real servers: residue blocks, layout, trend, a dead or hung server,
 * exactness near 2^63, and 1M IDs from 4 processes while a server is killed and restarted.
 *
 * Run as a program (`deno run -A tests/stores/interleaved/interleaved_redis_test.ts producer ...`) this file is the
 * producer process of the multi-process test.
 */

import "../../support/deadline.ts"; // a time limit on every test of this file
import assert from "node:assert/strict";
import { KvId, KvIdError, type RedisClient } from "../../../mod.ts";
import {
  type ClientKind,
  CLIENTS,
  type OpenClient,
  openClient,
} from "../../support/redis_clients.ts";
import { startProxy } from "../../support/proxy.ts";
import {
  command,
  ownServers,
  startNoScriptingServer,
  startServer,
  type TestServer,
} from "../../support/redis_server.ts";
import { assertConsecutiveButSkips, assertIncreasing, rejectsWith } from "../../support/assert.ts";

const N = 3;
const LAYOUT = "\u0000layout:";

async function openAll(kind: ClientKind, urls: string[]) {
  const opened: OpenClient[] = [];
  const close = async () => {
    await Promise.all(opened.map((c) => c.close()));
  };
  try {
    for (const url of urls) opened.push(await openClient(kind, url));
  } catch (err) {
    await close();
    throw err;
  }
  return { redis: opened.map((c) => c.redis), close, [Symbol.asyncDispose]: close };
}

const hget = async (s: TestServer, field: string) =>
  await command(s.url, "HGET", "kvid", field) as string | null;

/** The server index that issues the block holding `id`. */
const residue = (id: number, block: number) => Math.floor((id - 1) / block) % N;

Deno.test(ownServers("interleaved store on 3 servers"), async (t) => {
  await using s0 = await startServer({ persistence: "aof" });
  await using s1 = await startServer({ persistence: "aof" });
  await using s2 = await startServer({ persistence: "aof" });
  const servers = [s0, s1, s2];
  const urls = servers.map((s) => s.url);

  for (const kind of CLIENTS) {
    await using clients = await openAll(kind, urls);
    const redis = clients.redis;

    await t.step(`${kind}: one block per reservation, servers in turn, layout stored`, async () => {
      const name = `${kind}:turn`;
      // No prefetch: no reservation is in flight when the counters are read.
      const opts = { redis, block: 10, minStep: 10, maxStep: 10, prefetchAt: 0 };
      await using id = new KvId(name, opts);
      const ids = [];
      for (let i = 0; i < 300; i++) ids.push(await id.next());
      // Rotation plus the floor: each reservation is the next block, whoever serves it.
      assert.equal((ids[0] - 1) % 10, 0);
      assert.ok(ids[0] <= 21, `starts in the first cycle: ${ids[0]}`);
      assertConsecutiveButSkips(ids, 10); // a member skipped when slow: its block spent
      const high = Number(id.stats().high);
      let top = -1;
      for (let i = 0; i < N; i++) {
        const cycles = Number(await hget(servers[i], name));
        assert.ok(cycles >= 10, `server ${i} served ${cycles} cycles`);
        top = Math.max(top, (cycles - 1) * N + i);
        assert.equal(await hget(servers[i], LAYOUT + name), `v1 servers=3 block=10 index=${i}`);
      }
      assert.equal((top + 1) * 10, high, "the counters hold the next cycle of each server");
    });

    await t.step(`${kind}: a step of several blocks is several ranges of one server`, async () => {
      await using id = new KvId(`${kind}:multi`, {
        redis,
        block: 10,
        minStep: 35,
        maxStep: 35,
        prefetchAt: 0,
      });
      const ids = await id.nextBatch(40);
      const r = residue(ids[0], 10);
      assert.ok(ids.every((x) => residue(x, 10) === r), "4 blocks of the same server");
      for (let j = 0; j < 4; j++) {
        for (let i = 0; i < 10; i++) assert.equal(ids[j * 10 + i], ids[0] + j * 30 + i);
      }
      assert.equal(id.stats().remaining, 0, "35 rounded up to 4 whole blocks");
    });

    await t.step(`${kind}: a changed layout is refused`, async () => {
      const name = `${kind}:turn`;
      const counters = () => Promise.all(servers.map((s) => hget(s, name)));
      const layouts = () => Promise.all(servers.map((s) => hget(s, LAYOUT + name)));
      const before = await counters();
      const layoutsBefore = await layouts();
      // Another N or block: every server refuses, nothing is written.
      for (const options of [{ redis: [redis[0], redis[1]], block: 10 }, { redis, block: 20 }]) {
        await using id = new KvId(name, options);
        const err = await rejectsWith(id.next(), "config", /layout .*must not change/);
        assert.equal(err.field, name);
        // A refusal fails the next call too.
        await rejectsWith(id.next(), "config");
      }
      assert.deepEqual(await counters(), before);
      // Servers swapped: each server checks its own position, so the one left in place may
      // serve (its blocks are still its own) until a swapped one is asked and refuses.
      {
        await using id = new KvId(name, { redis: [redis[1], redis[0], redis[2]], block: 10 });
        const run = async () => {
          for (let i = 0; i < 3 * N; i++) await id.nextBatch(10);
        };
        await rejectsWith(run(), "config", /member [01]: this store holds the layout/);
      }
      assert.deepEqual(await layouts(), layoutsBefore);
      // Another name may use another layout on the same servers.
      await using other = new KvId(`${kind}:two`, { redis: [redis[0], redis[1]], block: 20 });
      assert.ok(await other.next() > 0);
      assert.throws(() => new KvId("x", { redis: [redis[0], redis[0]] }), /same client twice/);
      assert.throws(() => new KvId("x", { redis: redis[0], block: 10 }), /several servers/);
      assert.throws(() => new KvId("x", { redis: [] }), RangeError);
      assert.throws(() => new KvId("x", { redis, block: 0 }), RangeError);
    });

    await t.step(`${kind}: trend with a server killed and restarted`, async () => {
      const name = `${kind}:trend`;
      const B = 100;
      const opts = { redis, block: B, minStep: B, maxStep: B, timeout: 3000 };
      await using id = new KvId(name, opts);
      const ids: number[] = [];
      let stall = 0;
      const take = async (n: number) => {
        for (let i = 0; i < n; i += 100) {
          const t0 = performance.now();
          ids.push(...await id.nextBatch(100));
          stall = Math.max(stall, performance.now() - t0);
        }
      };
      await take(3000);
      await s1.kill();
      stall = 0;
      const down = ids.length;
      await take(3000);
      // Every call was served (none rejected at its 3 s timeout), and none by the dead server:
      // it was skipped. How long the skip took is machine speed: logged, not asserted.
      assert.ok(ids.slice(down).every((x) => residue(x, B) !== 1), "the dead server served IDs");
      const recoverMs = stall;
      await s1.restart();
      // Take IDs until the restarted server is used again (it is retried after a backoff).
      const back = ids.length;
      const deadline = performance.now() + 30_000;
      while (!ids.slice(back).some((x) => residue(x, B) === 1)) {
        assert.ok(performance.now() < deadline, "the restarted server is used again");
        await take(100);
      }
      await take(600); // every server serves again
      // A server that was down (so behind) never issues its old, lower blocks: IDs increase.
      assertIncreasing(ids);
      // And it jumps to its first block above the floor, not further: its first block after the
      // restart is within one cycle of the ID before it. (Elsewhere gaps may be longer: a live
      // member slower than its attempt limit on a loaded machine is skipped, its block spent.)
      const j = back + ids.slice(back).findIndex((x) => residue(x, B) === 1);
      const jump = ids[j] - ids[j - 1];
      assert.ok(jump < N * B, `restarted server jumped ${jump}: ${ids[j - 1]} -> ${ids[j]}`);
      assert.equal(id.stats().rollbacks, 0, "behind is not a rollback: AOF kept the counter");
      // A new generator (no floor yet) starts within one cycle of the front.
      await using late = new KvId(name, opts);
      const max = ids[ids.length - 1];
      const first = await late.next();
      assert.ok(first > max - N * B, `late joiner at ${first}, front at ${max}`);
      console.log(`${kind}: dead server skipped, longest wait ${recoverMs.toFixed(0)} ms`);
    });

    await t.step(`${kind}: a hung server is skipped after a short attempt`, async () => {
      await using proxy = await startProxy(s2);
      await using viaProxy = await openClient(kind, proxy.url);
      await using id = new KvId(`${kind}:hung`, {
        redis: [redis[0], redis[1], viaProxy.redis],
        block: 100,
        minStep: 100,
        maxStep: 100,
        timeout: 3000,
      });
      const ids: number[] = [];
      ids.push(...await id.nextBatch(1000));
      proxy.pause();
      const paused = ids.length;
      for (let i = 0; i < 20; i++) ids.push(...await id.nextBatch(100));
      const whilePaused = ids.slice(paused);
      proxy.resume();
      ids.push(...await id.nextBatch(1000));
      assertIncreasing(ids);
      // Every call was served within its timeout, none by the hung server: it was skipped.
      assert.ok(whilePaused.every((x) => residue(x, 100) !== 2), "the hung server served IDs");
    });

    await t.step(`${kind}: bigint IDs are exact up to 2^63-1, then overflow`, async () => {
      const name = `${kind}:top`;
      const block = 10n;
      const max = (1n << 63n) - 1n;
      // The last cycle of server i whose block ends at or below 2^63-1.
      const last = (i: bigint) => (max / block - i - 1n) / 3n;
      for (let i = 0; i < N; i++) {
        const layout = `v1 servers=${N} block=${block} index=${i}`;
        await command(urls[i], "HSET", "kvid", name, String(last(BigInt(i)) - 1n));
        await command(urls[i], "HSET", "kvid", LAYOUT + name, layout);
      }
      const expected = new Set<bigint>();
      for (let i = 0n; i < 3n; i++) {
        for (const m of [last(i) - 1n, last(i)]) {
          for (let x = 1n; x <= block; x++) expected.add((m * 3n + i) * block + x);
        }
      }
      await using id = new KvId(name, { redis, bigint: true, block: 10, minStep: 10, maxStep: 10 });
      const ids: bigint[] = [];
      let err: unknown;
      for (let i = 0; i < 100 && err === undefined; i++) {
        try {
          ids.push(await id.next());
        } catch (e) {
          err = e;
        }
      }
      assert.ok(err instanceof KvIdError && err.code === "overflow", `ended with ${err}`);
      assert.ok(ids.length >= 10, `${ids.length} IDs before the top`);
      assertIncreasing(ids);
      for (const x of ids) assert.ok(expected.has(x), `${x} is one of the last blocks`);
      assert.equal(ids.at(-1), 9223372036854775800n, "the very last block is served");
    });
  }
});

// ---------------------------------------------------------------------------------------------
// 1M IDs from 4 processes while one server is killed and restarted.

const PROCS = 4;
const PHASES = 3;
const TOTAL = 1_000_000;
const BLOCK = 1000;
const KILLED = 1;

/** Lines of text from a byte stream. */
class Lines {
  #reader: ReadableStreamDefaultReader<string>;
  #buf = "";
  constructor(stream: ReadableStream<Uint8Array>) {
    this.#reader = stream.pipeThrough(new TextDecoderStream()).getReader();
  }
  async next(): Promise<string | undefined> {
    while (true) {
      const nl = this.#buf.indexOf("\n");
      if (nl >= 0) {
        const line = this.#buf.slice(0, nl);
        this.#buf = this.#buf.slice(nl + 1);
        return line;
      }
      const { value, done } = await this.#reader.read();
      if (done) {
        const rest = this.#buf;
        this.#buf = "";
        return rest === "" ? undefined : rest;
      }
      this.#buf += value;
    }
  }
}

interface PhaseReport {
  phase: number;
  ids: number;
  ms: number;
  maxWaitMs: number;
}
interface FinalReport {
  done: true;
  rollbacks: number;
  failures: number;
  segments: number;
}

Deno.test(
  ownServers("1M IDs from 4 processes on 3 servers, one killed and restarted: no duplicate"),
  async () => {
    await using s0 = await startServer({ persistence: "aof" });
    await using s1 = await startServer({ persistence: "aof" });
    await using s2 = await startServer({ persistence: "aof" });
    const servers = [s0, s1, s2];
    const dir = await Deno.makeTempDir({ prefix: "kvid-interleaved-" });
    const quota = Math.ceil(TOTAL / PROCS / PHASES);
    const procs = Array.from({ length: PROCS }, (_, p) => {
      const child = new Deno.Command(Deno.execPath(), {
        args: [
          "run",
          "-A",
          "--quiet",
          new URL(import.meta.url).pathname,
          "producer",
          CLIENTS[p % CLIENTS.length],
          `${dir}/ids-${p}.bin`,
          String(quota),
          String(BLOCK),
          ...servers.map((s) => s.url),
        ],
        cwd: new URL("../../..", import.meta.url).pathname,
        stdin: "piped",
        stdout: "piped",
        stderr: "piped",
      }).spawn();
      const stderr = new Response(child.stderr).text();
      const stdin = child.stdin.getWriter();
      return { child, lines: new Lines(child.stdout), stdin, stderr };
    });
    const say = (line: string) =>
      Promise.all(procs.map((p) => p.stdin.write(new TextEncoder().encode(line + "\n"))));
    const reports: PhaseReport[][] = [];
    const finals: FinalReport[] = [];
    try {
      const hear = async () => {
        return await Promise.all(procs.map(async (p) => {
          const line = await p.lines.next();
          if (line === undefined) {
            await p.child.status;
            assert.fail(`a producer exited early: ${await p.stderr}`);
          }
          return JSON.parse(line);
        }));
      };
      reports.push(await hear()); // phase 1: every server up
      await s1.kill();
      await say("go");
      reports.push(await hear()); // phase 2: server 1 dead
      await s1.restart();
      await say(`go ${KILLED}`);
      reports.push(await hear()); // phase 3: server 1 back, used again
      finals.push(...await hear());
    } finally {
      await Promise.all(procs.map(async (p) => {
        await p.stdin.close().catch(() => {});
        while (await p.lines.next() !== undefined) { /* drain */ }
        const status = await p.child.status;
        const err = await p.stderr;
        if (!status.success) throw new Error(`producer failed (${status.code}): ${err}`);
      }));
    }

    // Every file increasing; all IDs distinct across processes.
    const files = await Promise.all(
      procs.map((_, p) => Deno.readFile(`${dir}/ids-${p}.bin`)),
    );
    await Deno.remove(dir, { recursive: true });
    let total = 0;
    for (const f of files) total += f.byteLength / 8;
    const all = new Float64Array(total);
    let at = 0;
    for (const [p, f] of files.entries()) {
      const ids = new Float64Array(f.buffer, f.byteOffset, f.byteLength / 8);
      assertIncreasing(ids, `producer ${p}`);
      all.set(ids, at);
      at += ids.length;
    }
    assert.ok(total >= TOTAL, `${total} IDs`);
    all.sort();
    for (let i = 1; i < all.length; i++) {
      if (all[i] === all[i - 1]) assert.fail(`duplicate ID ${all[i]}`);
    }
    for (const f of finals) assert.equal(f.rollbacks, 0);
    const rate = (r: PhaseReport[]) =>
      Math.round(
        r.reduce((n, x) => n + x.ids, 0) / r.reduce((m, x) => Math.max(m, x.ms), 0) * 1000,
      );
    const wait = (r: PhaseReport[]) => Math.round(r.reduce((m, x) => Math.max(m, x.maxWaitMs), 0));
    console.log(
      `${total} IDs, distinct. IDs/s all up ${rate(reports[0])}, one dead ${rate(reports[1])}, ` +
        `back ${rate(reports[2])}; longest wait per phase ${reports.map(wait).join(" / ")} ms; ` +
        `engine failures ${finals.map((f) => f.failures).join(",")}`,
    );
  },
);

/** The producer process: `producer <kind> <file> <quota per phase> <block> <url>...`. */
async function producer(args: string[]): Promise<void> {
  const [kind, file, quotaText, blockText, ...urls] = args;
  const quota = Number(quotaText);
  const block = Number(blockText);
  await using clients = await openAll(kind as ClientKind, urls);
  const redis: RedisClient[] = clients.redis;
  await using id = new KvId("mp", {
    redis,
    block,
    minStep: block,
    maxStep: 4 * block,
    timeout: 5000,
  });
  const stdin = new Lines(Deno.stdin.readable);
  const out = new TextEncoder();
  const say = async (obj: unknown) => {
    await Deno.stdout.write(out.encode(JSON.stringify(obj) + "\n"));
  };
  const chunks: number[][] = [];
  let revived = -1;
  for (let phase = 1; phase <= PHASES; phase++) {
    const started = performance.now();
    let made = 0;
    let maxWaitMs = 0;
    let seenRevived = revived < 0;
    while (made < quota || !seenRevived) {
      if (performance.now() - started > 30_000) throw new Error("phase took over 30 s");
      const t0 = performance.now();
      const ids = await id.nextBatch(1000);
      maxWaitMs = Math.max(maxWaitMs, performance.now() - t0);
      chunks.push(ids);
      made += ids.length;
      if (!seenRevived) seenRevived = ids.some((x) => residue(x, block) === revived);
    }
    await say({ phase, ids: made, ms: performance.now() - started, maxWaitMs });
    if (phase < PHASES) {
      const line = await stdin.next();
      const m = /^go(?: (\d+))?$/.exec(line ?? "");
      if (!m) throw new Error(`unexpected instruction ${line}`);
      revived = m[1] === undefined ? -1 : Number(m[1]);
    }
  }
  const all = new Float64Array(chunks.reduce((n, c) => n + c.length, 0));
  let at = 0;
  for (const c of chunks) {
    all.set(c, at);
    at += c.length;
  }
  await Deno.writeFile(file, new Uint8Array(all.buffer));
  const s = id.stats();
  await say({ done: true, rollbacks: s.rollbacks, failures: s.failures, segments: s.segments });
}

if (import.meta.main && Deno.args[0] === "producer") {
  await producer(Deno.args.slice(1));
}

Deno.test(
  ownServers("every generator mode refuses a counter of interleaved servers"),
  async (t) => {
    await using a = await startServer();
    await using b = await startServer();
    await using noScripts = await startNoScriptingServer();
    for (const kind of CLIENTS) {
      await t.step(kind, async () => {
        await using ca = await openClient(kind, a.url);
        await using cb = await openClient(kind, b.url);
        const name = `owned-${kind}`;
        {
          await using id = new KvId(name, {
            redis: [ca.redis, cb.redis],
            block: 50,
            prefetchAt: 0,
          });
          for (let i = 0; i < 120; i++) await id.next();
        }
        const before = await hget(a, name);
        for (const guard of [true, false]) {
          await using single = new KvId(name, { redis: ca.redis, guard, prefetchAt: 0 });
          await rejectsWith(single.next(), "config", /interleaved servers/);
        }
        assert.equal(await hget(a, name), before, "the block cycle was not incremented");
        // A server without scripting: the plain HINCRBY is refused too.
        await command(
          noScripts.url,
          "HSET",
          "kvid",
          name,
          "3",
          LAYOUT + name,
          "v1 servers=2 block=50 index=0",
        );
        await using cn = await openClient(kind, noScripts.url);
        await using plain = new KvId(name, { redis: cn.redis, prefetchAt: 0 });
        await rejectsWith(plain.next(), "config", /interleaved servers/);
        assert.equal(await hget(noScripts, name), "3");
      });
    }
  },
);

Deno.test(ownServers("interleaved servers refuse a single-server counter"), async () => {
  await using a = await startServer();
  await using b = await startServer();
  await using ca = await openClient("node-redis", a.url);
  await using cb = await openClient("node-redis", b.url);
  // A single-server generator handed out 1..2500 from server a.
  {
    // giveBack off: the counter keeps the whole reservation, 2,500, an ID and not a cycle.
    await using single = new KvId("taken", {
      redis: ca.redis,
      minStep: 2500,
      prefetchAt: 0,
      giveBack: false,
    });
    assert.equal(await single.next(), 1);
  }
  assert.equal(await hget(a, "taken"), "2500");
  // Server a refuses as soon as it is asked: its value is an ID, not a cycle (server b, which
  // never saw the counter, cannot tell: keep names of the two kinds apart).
  await using inter = new KvId("taken", { redis: [ca.redis, cb.redis], block: 1000 });
  const run = async () => {
    for (let i = 0; i < 4; i++) await inter.nextBatch(1000);
  };
  await rejectsWith(run(), "config", /member 0: .*single-store/);
  assert.equal(await hget(a, "taken"), "2500");
  assert.equal(await hget(a, LAYOUT + "taken"), null);
});
