/**
 * `HttpStore` (src/client/): the shared Store spec through the service on a real Redis; its
 * failures classified as any store's; and TinyID's deployment: 4 edge processes of `KvId` on
 * `HttpStore` against 2 service instances on one Redis, one instance restarted mid-run.
 */

import "../support/deadline.ts"; // a time limit on every test of this file
import assert from "node:assert/strict";
import { KvId, KvIdError } from "../../mod.ts";
import { HttpStore } from "../../src/client/mod.ts";
import { openClient } from "../support/redis_clients.ts";
import { lines } from "../support/lines.ts";
import { startProxy } from "../support/proxy.ts";
import { command, startServer } from "../support/redis_server.ts";
import { serveService, startServiceProcess } from "../support/service.ts";
import { runStoreSpec } from "../support/store_spec.ts";

const ALL = "http-store-all-0123456789";
const ORDERS = "http-store-orders-012345";
const ADMIN = "http-store-admin-0123456789";
const TOKENS = `${ALL}:*,${ORDERS}:order,${ADMIN}:admin=*`;

Deno.test("store spec: HttpStore through the service on Redis", async (t) => {
  await using server = await startServer();
  await using client = await openClient("node-redis", server.url);
  await using s = serveService({ redis: client.redis, tokens: TOKENS });
  await runStoreSpec(t, {
    // Administrative: the spec raises counters far past their value.
    store: new HttpStore(s.url, { token: ADMIN }),
    contiguous: true,
    key: "kvid",
    corrupt: async (key, field) => void await command(server.url, "HSET", key, field, "x1"),
  });
});

Deno.test("HttpStore: the service's counters, exact past 2^53; give-back and step over HTTP", async () => {
  await using server = await startServer();
  await using client = await openClient("node-redis", server.url);
  await using s = serveService({ redis: client.redis, tokens: TOKENS });
  await command(server.url, "HSET", "kvid", "big", String(2n ** 53n));
  await using BIG = new KvId("big", { store: new HttpStore(s.url, { token: ALL }), bigint: true });
  assert.equal(await BIG.next(), 2n ** 53n + 1n);
  // The service's own /v1/ids on the same counter: after the edge's segment.
  const res = await fetch(`${s.url}/v1/ids/big`, {
    method: "POST",
    headers: { authorization: `Bearer ${ALL}` },
  });
  assert.ok(BigInt((await res.text()).trim()) > 2n ** 53n + 1n);
  // Give-back on close through POST /v1/segments/{name}/release.
  const gen = new KvId("given", { store: new HttpStore(s.url, { token: ALL }), minStep: 100 });
  assert.equal(await gen.next(), 1);
  await gen.close();
  assert.equal(await command(server.url, "HGET", "kvid", "given"), "1");
  // The remembered step, read and written through /v1/segments/{name}/step.
  await command(server.url, "HSET", "kvid", "\0step:stepped", "300");
  await using stepped = new KvId("stepped", { store: new HttpStore(s.url, { token: ALL }) });
  await stepped.next();
  assert.equal(stepped.stats().step, 300);
});

Deno.test("HttpStore: failures classify as any store's", async (t) => {
  await using server = await startServer();
  await using proxy = await startProxy(server);
  await using client = await openClient("node-redis", proxy.url);
  const s = serveService({ redis: client.redis, tokens: TOKENS, timeout: 300 });
  const reserve = (store: HttpStore, name: string) =>
    store.reserve("kvid", name, 10, { floor: 0n, raiseTo: 0n, guard: true, exact: true });
  const code = async (p: Promise<unknown>) => {
    try {
      await p;
      return "ok";
    } catch (err) {
      assert.ok(err instanceof KvIdError, String(err));
      return err.code;
    }
  };
  try {
    await t.step("401 (a wrong token) and 403 (a name outside it): config", async () => {
      assert.equal(
        await code(reserve(new HttpStore(s.url, { token: "wrong-token-0123456789" }), "order")),
        "config",
      );
      assert.equal(await code(reserve(new HttpStore(s.url, { token: ORDERS }), "user")), "config");
      assert.equal(await code(reserve(new HttpStore(s.url, { token: ORDERS }), "order")), "ok");
      // A KvId fails fast on it instead of retrying until its timeout.
      await using gen = new KvId("user", {
        store: new HttpStore(s.url, { token: ORDERS }),
        timeout: 60_000,
      });
      const t0 = performance.now();
      await assert.rejects(gen.next(), (err: KvIdError) => err.code === "config");
      assert.ok(performance.now() - t0 < 30_000);
    });
    await t.step("the store hangs: 503 from the service, transient here", async () => {
      proxy.pause();
      try {
        assert.equal(
          await code(reserve(new HttpStore(s.url, { token: ALL }), "hang")),
          "unavailable",
        );
      } finally {
        proxy.resume();
      }
    });
    await t.step("a key other than the service's: config, naming the fix", async () => {
      const store = new HttpStore(s.url, { token: ALL });
      await assert.rejects(
        store.reserve("other", "order", 1, { floor: 0n, raiseTo: 0n, guard: true, exact: true }),
        (err: KvIdError) => err.code === "config" && /key option/.test(err.message),
      );
      assert.throws(() => new HttpStore("ftp://x", { token: ALL }), TypeError);
      assert.throws(() => new HttpStore(s.url, { token: "short" }), TypeError);
    });
  } finally {
    await s.close();
  }
  await t.step("the service gone: connection", async () => {
    assert.equal(await code(reserve(new HttpStore(s.url, { token: ALL }), "order")), "connection");
  });
});

Deno.test({
  name: "HttpStore: 4 edge processes, 2 service instances on one Redis, one restarted mid-run",
  async fn() {
    await using server = await startServer();
    const env = { KVID_TOKENS: `${ALL}:*`, KVID_REDIS_URL: server.url, KVID_KV_PATH: "" };
    const a = await startServiceProcess(env);
    await using b = await startServiceProcess(env);
    const port = new URL(a.url).port;
    const CALLS = 1500;
    const workers = [a.url, a.url, b.url, b.url].map((url) =>
      new Deno.Command(Deno.execPath(), {
        args: [
          "run",
          "-A",
          new URL("../support/http_store_worker.ts", import.meta.url).pathname,
          url,
          String(CALLS),
          ALL,
        ],
        stdout: "piped",
        stderr: "piped",
      }).spawn()
    );
    const seen: bigint[][] = workers.map(() => []);
    let restarted: Promise<void> | undefined;
    let again: Awaited<ReturnType<typeof startServiceProcess>> | undefined;
    try {
      const reading = workers.map(async (w, i) => {
        for await (const line of lines(w.stdout)) {
          seen[i].push(BigInt(line));
          // A quarter of the way through: kill instance a and start it again on its port.
          if (restarted === undefined && seen.reduce((n, s) => n + s.length, 0) >= CALLS) {
            restarted = (async () => {
              a.child.kill("SIGKILL");
              await a.status;
              again = await startServiceProcess(env, ["--host", "127.0.0.1", "--port", port]);
            })();
          }
        }
      });
      const errors = workers.map(async (w) => {
        let text = "";
        for await (const line of lines(w.stderr)) text += line + "\n";
        return text;
      });
      const statuses = await Promise.all(workers.map((w) => w.status));
      await Promise.all(reading);
      const stderr = await Promise.all(errors);
      await restarted;
      statuses.forEach((s, i) => assert.equal(s.code, 0, `worker ${i}: ${stderr[i]}`));
      // Every call settled with an ID, and no ID twice.
      seen.forEach((ids, i) => assert.equal(ids.length, CALLS, `worker ${i}`));
      const all = new Set(seen.flat());
      assert.equal(all.size, 4 * CALLS, "duplicate IDs");
      assert.ok(again !== undefined, "instance a was not restarted");
      // The restarted instance served segments: its workers went on through it.
      const m = await (await fetch(`${again.url}/metrics`, {
        headers: { authorization: `Bearer ${ALL}` },
      })).text();
      assert.match(m, /^kvid_segments_total\{name="order"\} [1-9]/m);
      // Each worker's IDs increase (one process, one generator).
      for (const ids of seen) {
        for (let i = 1; i < ids.length; i++) assert.ok(ids[i] > ids[i - 1]);
      }
    } finally {
      for (const w of workers) {
        try {
          w.kill("SIGKILL");
        } catch {
          // exited
        }
      }
      await Promise.allSettled(workers.map((w) => w.status));
      await restarted?.catch(() => {});
      await again?.[Symbol.asyncDispose]();
      await a[Symbol.asyncDispose]();
    }
  },
});
