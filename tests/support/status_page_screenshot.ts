/**
 * Make docs/service.md's screenshot of the status page (docs/service-status.png): run the
 * service on Deno KV in memory, send a few minutes' worth of varying traffic, sign in with
 * headless chromium and capture the page.
 *
 *     deno run -A --unstable-kv tests/support/status_page_screenshot.ts [out.png] [seconds, default 90]
 *
 * @module
 */

import { DenoKvStore } from "../../src/stores/deno_kv/deno_kv_store.ts";
import { findChromium, launchBrowser } from "./browser.ts";
import { serveService } from "./service.ts";

const out = Deno.args[0] ?? "docs/service-status.png";
const seconds = Number(Deno.args[1] ?? "90");
const TOKEN = "screenshot-token-0123456789";

const chromium = findChromium();
if (chromium === undefined) throw new Error("no chromium on PATH");
using store = new DenoKvStore(":memory:");
await using s = serveService({ store, tokens: `${TOKEN}:*`, storeLabel: "Deno KV (in memory)" });
const post = (path: string) =>
  fetch(s.url + path, { method: "POST", headers: { authorization: `Bearer ${TOKEN}` } })
    .then((r) => r.body?.cancel());

// Every 100 ms: orders rising and falling, invoices steady, a daily ticket now and then; still
// running while the page is captured.
let running = true;
const traffic = (async () => {
  for (let tick = 0; running; tick++) {
    const wave = Math.round(40 + 35 * Math.sin(tick / 60));
    await Promise.all([
      post(`/v1/ids/order?count=${wave}`),
      post("/v1/ids/invoice?count=12"),
      tick % 7 === 0 ? post("/v1/daily/ticket") : undefined,
      tick % 3 === 0 ? post("/v1/ids/user") : undefined,
    ]);
    await new Promise((r) => setTimeout(r, 100));
  }
})();
await new Promise((r) => setTimeout(r, seconds * 1000));

const browser = await launchBrowser(chromium);
try {
  const page = await browser.newPage();
  await page.setViewport({ width: 1100, height: 600 });
  await page.goto(`${s.url}/`);
  await page.type('input[name="token"]', TOKEN);
  await Promise.all([page.waitForNavigation(), page.click('button[type="submit"]')]);
  await page.screenshot({ path: out, type: "png" });
  console.log(`wrote ${out}`);
} finally {
  await browser.close();
  running = false;
  await traffic;
}
