/**
 * Fault suite, scenarios 1 and 2: several processes on one counter, and a producer killed with
 * SIGKILL mid-run. Real server, real Deno subprocesses (tests/support/fault_producer.ts).
 */

import "../support/deadline.ts"; // a time limit on every test of this file
import assert from "node:assert/strict";
import { command, startServer } from "../support/redis_server.ts";
import {
  assertIncreasing,
  assertNoDuplicates,
  type Producer,
  readIds,
  sortedUnion,
  spawnProducer,
} from "../support/faults.ts";

Deno.test({
  name: "faults: 4 processes x 250k IDs on one name: no duplicate, each file increasing",
  // Four processes on two cores: keep the bound loose, it only stops a hang.
  timeout: 120_000,
  fn: async () => {
    await using server = await startServer();
    const dir = await Deno.makeTempDir({ prefix: "kvid-faults-" });
    const name = "shared";
    const per = 250_000;
    // Both npm clients, default adaptive steps and small fixed caps (many interleaved
    // reservations), with and without the guard script.
    const configs = [
      { client: "node-redis", maxStep: undefined, guard: true },
      { client: "ioredis", maxStep: undefined, guard: true },
      { client: "node-redis", maxStep: 200, guard: false },
      { client: "ioredis", maxStep: 500, guard: true },
    ] as const;
    const producers: Producer[] = configs.map((c, i) =>
      spawnProducer({ url: server.url, name, count: per, out: `${dir}/p${i}.txt`, ...c })
    );
    try {
      const results = await Promise.all(producers.map((p) => p.done));
      for (const [i, r] of results.entries()) {
        assert.equal(r.status.code, 0, `producer ${i} failed: ${r.stderr}`);
        assert.match(r.last, new RegExp(`^done ${per} `));
      }
      const files = await Promise.all(configs.map((_, i) => readIds(`${dir}/p${i}.txt`)));
      for (const [i, ids] of files.entries()) {
        assert.equal(ids.length, per, `file ${i}`);
        assertIncreasing(ids, `file ${i}`);
        assert.ok(ids[0] >= 1);
      }
      assertNoDuplicates(files, "union of 4 files");
      // Every ID handed out came from the counter: nothing above its final value.
      const top = Number(await command(server.url, "HGET", "kvid", name));
      const all = sortedUnion(files);
      assert.ok(all[all.length - 1] <= top, `${all[all.length - 1]} above counter ${top}`);
    } finally {
      await Promise.all(producers.map((p) => p[Symbol.asyncDispose]()));
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name: "faults: a producer killed with SIGKILL mid-run, then a new one: no duplicate",
  timeout: 120_000,
  fn: async () => {
    await using server = await startServer();
    const dir = await Deno.makeTempDir({ prefix: "kvid-faults-" });
    const name = "killed";
    const url = server.url;
    // A runs until killed, with small steps so a reservation is often in flight; C runs
    // alongside the whole time on the other client, and gives nothing back when it ends: a range
    // C gave back would be B's first (the pool is taken first) and may lie below A's last ID,
    // which is trend-increasing, not the "only ranges reserved after A died" checked below.
    const a = spawnProducer({ url, name, count: 0, out: `${dir}/a.txt`, maxStep: 50, flush: 1000 });
    const c = spawnProducer({
      url,
      name,
      count: 200_000,
      out: `${dir}/c.txt`,
      client: "ioredis",
      maxStep: 100,
      giveBack: false,
      flush: 1000,
    });
    let b: Producer | undefined;
    try {
      await a.progress(30_000);
      const status = await a.kill();
      assert.equal(status.signal, "SIGKILL");
      b = spawnProducer({ url, name, count: 100_000, out: `${dir}/b.txt`, flush: 1000 });
      const [rb, rc] = await Promise.all([b.done, c.done]);
      assert.equal(rb.status.code, 0, rb.stderr);
      assert.equal(rc.status.code, 0, rc.stderr);

      const [ia, ib, ic] = await Promise.all(
        ["a", "b", "c"].map((f) => readIds(`${dir}/${f}.txt`)),
      );
      assert.ok(ia.length >= 30_000, `a wrote ${ia.length}`);
      assert.equal(ib.length, 100_000);
      assert.equal(ic.length, 200_000);
      for (const [f, ids] of [["a", ia], ["b", ib], ["c", ic]] as const) {
        assertIncreasing(ids, f);
      }
      assertNoDuplicates([ia, ib, ic], "a, b and c");
      // The new process only gets ranges reserved after the old one died: above all of its IDs,
      // written or not (gaps are fine).
      assert.ok(ib[0] > ia[ia.length - 1], `b starts at ${ib[0]}, a reached ${ia.at(-1)}`);
    } finally {
      await a[Symbol.asyncDispose]();
      await b?.[Symbol.asyncDispose]();
      await c[Symbol.asyncDispose]();
      await Deno.remove(dir, { recursive: true });
    }
  },
});
