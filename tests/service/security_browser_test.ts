/**
 * The unauthenticated mode driven as a web page would (issue 33): a real headless chromium loads
 * a page of another origin that sends the service every cross-site request a page can send
 * without asking (a `no-cors` fetch with a JSON body as text/plain, forms, an `<img>`), and a
 * page whose own name is pointed at 127.0.0.1 (DNS rebinding, through chromium's host resolver
 * rules). None changes a counter or makes an ID; the service on a Redis server the test starts.
 */

import "../support/deadline.ts"; // a time limit on every test of this file
import assert from "node:assert/strict";
import { createClient } from "redis";
import { fromNodeRedis } from "../../mod.ts";
import { createHandler } from "../../src/service/mod.ts";
import { listen } from "../../src/service/serve.ts";
import { findChromium, launchBrowser } from "../support/browser.ts";
import { command, startServer } from "../support/redis_server.ts";

/** The attacker's page: every request fires on load; `S` is the service's origin. */
function attackPage(service: string): string {
  const raise = JSON.stringify({ count: 1, floor: "9223372036854775806" });
  return `<!doctype html><meta charset="utf-8"><title>a page of another site</title>
<iframe name="sink"></iframe><iframe name="sink2"></iframe>
<form id="f1" method="post" enctype="text/plain" target="sink"
  action="${service}/v1/segments/order"><input name='${raise.slice(0, -1)},"x":"' value='"}'></form>
<form id="f2" method="post" target="sink2" action="${service}/v1/ids/order?count=10000">
  <input name="a" value="b"></form>
<script>
const S = ${JSON.stringify(service)};
fetch(S + "/v1/segments/order/release", { method: "POST", mode: "no-cors",
  headers: { "content-type": "text/plain" }, body: '{"first":"1","last":"100"}' });
fetch(S + "/v1/segments/order", { method: "POST", mode: "no-cors", body: ${
    JSON.stringify(raise)
  } });
fetch(S + "/v1/ids/order?count=10000", { method: "POST", mode: "no-cors" });
new Image().src = S + "/v1/ids/order?count=10000";
document.getElementById("f1").submit();
document.getElementById("f2").submit();
</script>`;
}

Deno.test({
  name: "security: pages of other origins and a rebinding page change no counter, make no ID",
  async fn(t) {
    const executablePath = findChromium();
    assert.ok(executablePath, "no chromium on PATH (apt-get install chromium, or set CHROMIUM)");
    await using server = await startServer();
    const client = await createClient({ url: server.url }).connect();
    const service = createHandler({ redis: fromNodeRedis(client), auth: "none", log() {} });
    const seen: string[] = [];
    const l = listen({
      hostname: "127.0.0.1",
      port: 0,
      log() {},
      handler: async (req, info) => {
        const res = await service.fetch(req, info);
        seen.push(`${res.status} ${req.method} ${new URL(req.url).pathname}`);
        return res;
      },
    });
    const P = l.addr.port;
    const attacker = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen() {} },
      (req) =>
        new Response(attackPage(new URL(req.url).searchParams.get("to")!), {
          headers: { "content-type": "text/html; charset=utf-8" },
        }),
    );
    const A = attacker.addr.port;
    await command(server.url, "HSET", "kvid", "order", "100");
    const counters = async () => JSON.stringify(await command(server.url, "HGETALL", "kvid"));
    const before = await counters();
    const browser = await launchBrowser(executablePath, [
      "--host-resolver-rules=MAP attacker.test 127.0.0.1, MAP evil.test 127.0.0.1",
    ]);
    try {
      const page = await browser.newPage();
      for (
        const origin of [`http://attacker.test:${A}`, `http://127.0.0.1:${A}`]
      ) {
        await t.step(`a page of ${origin}: six requests, each refused`, async () => {
          seen.length = 0;
          await page.goto(`${origin}/?to=${encodeURIComponent(`http://127.0.0.1:${P}`)}`);
          // Six requests reach the service (two forms, three fetches, an image): wait for them.
          for (const until = performance.now() + 20_000; seen.length < 6;) {
            assert.ok(performance.now() < until, `the service saw ${seen.join("; ")}`);
            await new Promise((r) => setTimeout(r, 50));
          }
          assert.equal(seen.length, 6, seen.join("; "));
          for (const s of seen) assert.match(s, /^403 /, seen.join("; "));
          assert.equal(await counters(), before, "a counter changed");
        });
      }

      await t.step(
        "a rebinding page (evil.test -> 127.0.0.1): the page, IDs, metrics 403",
        async () => {
          seen.length = 0;
          const res = await page.goto(`http://evil.test:${P}/`);
          assert.equal(res?.status(), 403);
          const statuses = await page.evaluate(async () => {
            const json = { "content-type": "application/json" };
            return [
              (await fetch("/v1/ids/order?count=10000", { method: "POST", headers: json })).status,
              (await fetch("/v1/segments/order", {
                method: "POST",
                headers: json,
                body: '{"count":1,"floor":"9223372036854775806"}',
              })).status,
              (await fetch("/metrics")).status,
              (await fetch("/v1/segments/order/step")).status,
            ];
          });
          assert.deepEqual(statuses, [403, 403, 403, 403], seen.join("; "));
          assert.equal(await counters(), before, "a counter changed");
        },
      );

      await t.step("the service still serves a client on loopback", async () => {
        const ok = await fetch(`http://127.0.0.1:${P}/v1/ids/order?count=2`, {
          method: "POST",
          headers: { "content-type": "application/json" },
        });
        assert.equal(await ok.text(), "101\n102\n");
      });
    } finally {
      await browser.close();
      await attacker.shutdown();
      await l.shutdown();
      await service.close();
      client.destroy();
    }
  },
});
