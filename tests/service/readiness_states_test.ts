/**
 * The service's first answers say what is so: on a healthy Redis the first `/readyz` after start
 * is ready (the probe waits for the connection it starts), not "does not answer"; a store not
 * reached yet is "starting"; a Redis without AOF under `KVID_DURABILITY=strict` answers (so
 * `kvid_store_up` is 1) but is refused, the ID request 503 with the server's problem and the
 * service's own knob, and `kvid_store_durability_refused` is 1.
 */

import "../support/deadline.ts"; // a time limit on every test of this file
import assert from "node:assert/strict";
import { optionsFromEnv } from "../../src/service/mod.ts";
import { startProxy } from "../support/proxy.ts";
import { redisOnly, startServer } from "../support/redis_server.ts";
import { serveService } from "../support/service.ts";

const TOKEN = "test-token-states-0123456789";
const auth = { authorization: `Bearer ${TOKEN}` };

function sample(metrics: string, series: string): number | undefined {
  for (const line of metrics.split("\n")) {
    if (line.startsWith(series + " ")) return Number(line.slice(series.length + 1));
  }
  return undefined;
}

/** The service as `deno task serve` makes it from its environment, on `url`. */
function serviceOn(url: string, more: Record<string, string> = {}) {
  const env = new Map(Object.entries({ KVID_REDIS_URL: url, KVID_TOKENS: `${TOKEN}:*`, ...more }));
  const config = optionsFromEnv((name) => env.get(name));
  const svc = serveService({ ...config.options, timeout: 1_000 });
  return {
    url: svc.url,
    logged: svc.logged,
    [Symbol.asyncDispose]: async () => {
      await svc.close();
      await config.close();
    },
  };
}

Deno.test("service states: ready at the first probe on a healthy Redis", async () => {
  await using server = await startServer();
  await using svc = await serviceOn(server.url);
  // Until the store's client has connected, "starting"; the first answer after that is "ready",
  // never "the store does not answer" (the service used to say so before its first probe).
  const seen: string[] = [];
  let ready: Response;
  for (const until = Date.now() + 10_000;;) {
    ready = await fetch(`${svc.url}/readyz`);
    const text = await ready.text();
    seen.push(text);
    if (!text.startsWith("not ready: starting") || Date.now() > until) break;
    await new Promise((r) => setTimeout(r, 20));
  }
  assert.ok(seen.slice(0, -1).every((t) => t.startsWith("not ready: starting")), seen.join(""));
  assert.equal(seen.at(-1), "ready\n");
  assert.equal(ready.status, 200);
  const m = await (await fetch(`${svc.url}/metrics`, { headers: auth })).text();
  assert.equal(sample(m, "kvid_store_up"), 1);
  assert.equal(sample(m, "kvid_store_durability_refused"), 0);
});

Deno.test("service states: starting while the store was never reached", async () => {
  await using server = await startServer();
  await using proxy = await startProxy(server);
  proxy.pause(); // a service started before its Redis
  await using svc = await serviceOn(proxy.url);
  const ready = await fetch(`${svc.url}/readyz`);
  assert.equal(ready.status, 503);
  assert.match(await ready.text(), /^not ready: starting/);
  const m = await (await fetch(`${svc.url}/metrics`, { headers: auth })).text();
  assert.equal(sample(m, "kvid_store_up"), 0);
  proxy.resume();
  let status = 0;
  for (const until = Date.now() + 20_000; status !== 200 && Date.now() < until;) {
    status = (await (async () => {
      const r = await fetch(`${svc.url}/readyz`);
      await r.body?.cancel();
      return r;
    })()).status;
  }
  assert.equal(status, 200);
});

Deno.test({
  ...redisOnly(
    "service states: a Redis without AOF answers, and is refused with 503 and KVID_DURABILITY",
    "it stages appendonly no",
  ),
  fn: async () => {
    await using server = await startServer({ persistence: "snapshots" }); // appendonly no
    await using svc = await serviceOn(server.url);
    const ids = await fetch(`${svc.url}/v1/ids/order`, { method: "POST", headers: auth });
    assert.equal(ids.status, 503);
    const { error } = await ids.json();
    assert.equal(error.code, "unavailable");
    assert.match(error.message, /can lose reservations.*appendonly.*KVID_DURABILITY=best-effort/s);
    const ready = await fetch(`${svc.url}/readyz`);
    assert.equal(ready.status, 503);
    const why = await ready.text();
    assert.match(why, /^not ready: the store can lose reservations.*KVID_DURABILITY=best-effort/s);
    assert.doesNotMatch(why, /field ""|hash "kvid"/);
    const m = await (await fetch(`${svc.url}/metrics`, { headers: auth })).text();
    assert.equal(sample(m, "kvid_store_up"), 1, "it answers");
    assert.equal(sample(m, "kvid_store_durability_refused"), 1);
    assert.equal(sample(m, "kvid_store_config_error"), 0);
  },
});
