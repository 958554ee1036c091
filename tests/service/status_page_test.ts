/**
 * The ID service's status page in a real headless browser (Debian `chromium` through
 * `npm:puppeteer-core`; `.ci/run` installs chromium when missing).
 */

import "../support/deadline.ts"; // a time limit on every test of this file
import assert from "node:assert/strict";
import { DenoKvStore } from "../../src/stores/deno_kv/deno_kv_store.ts";
import { findChromium, launchBrowser } from "../support/browser.ts";
import { serveService } from "../support/service.ts";
import { chartScale, shortCount } from "../../src/service/page.ts";

const ALL = "page-token-all-0123456789";
const ORDERS = "page-token-orders-012345";

Deno.test({
  name: "status page: sign in by form, session cookie, live generators and chart, offline",
  async fn(t) {
    const executablePath = findChromium();
    assert.ok(executablePath, "no chromium on PATH (apt-get install chromium, or set CHROMIUM)");
    using store = new DenoKvStore(":memory:");
    await using s = serveService({ store, tokens: `${ALL}:*,${ORDERS}:order` });
    const post = (path: string) =>
      fetch(s.url + path, { method: "POST", headers: { authorization: `Bearer ${ALL}` } })
        .then((r) => r.text());
    await post("/v1/ids/order?count=500");
    await post("/v1/ids/user?count=20");
    await post("/v1/daily/ticket");

    const browser = await launchBrowser(executablePath);
    try {
      const page = await browser.newPage();
      const requested: string[] = [];
      page.on("request", (r) => requested.push(r.url()));

      await t.step("without a session: the sign-in form, no data", async () => {
        const res = await page.goto(`${s.url}/`);
        assert.equal(res?.status(), 200);
        assert.ok(await page.$('form[action="/login"] input[type="password"][name="token"]'));
        assert.equal(await page.$("table"), null);
        assert.match(res?.headers()["content-security-policy"] ?? "", /default-src 'none'/);
      });

      await t.step("a wrong token: refused, not echoed", async () => {
        await page.type('input[name="token"]', "wrong-token-0123456789");
        const [res] = await Promise.all([
          page.waitForNavigation(),
          page.click('button[type="submit"]'),
        ]);
        assert.equal(res?.status(), 401);
        const html = await page.content();
        assert.match(html, /not valid/);
        assert.ok(!html.includes("wrong-token-0123456789"));
      });

      await t.step(
        "the right token: a session cookie (HttpOnly, SameSite=Strict), the status",
        async () => {
          await page.type('input[name="token"]', ORDERS);
          await Promise.all([page.waitForNavigation(), page.click('button[type="submit"]')]);
          assert.equal(new URL(page.url()).pathname, "/");
          const cookies = await browser.cookies();
          const session = cookies.find((c) => c.name === "kvid_session");
          assert.ok(session, "no session cookie");
          assert.equal(session.httpOnly, true);
          assert.equal(session.sameSite, "Strict");
          assert.equal(session.secure, false); // plain http here; Secure over https
          assert.ok(!session.value.includes(ORDERS));
          assert.equal(await page.evaluate("document.cookie"), ""); // out of script's reach
          const rows = await page.$$eval(
            "tbody tr",
            (trs) => trs.map((tr) => tr.textContent ?? ""),
          );
          assert.equal(rows.length, 1, rows.join("|")); // this token sees "order" only
          assert.match(rows[0], /order\s*ids/);
          // Nothing of the names outside its scope, not even how many there are.
          assert.doesNotMatch(await page.content(), /\buser\b|\bticket\b|outside/);
          assert.ok(await page.$("svg polyline"), "no chart");
          const label = await page.$eval("svg", (el) => el.getAttribute("aria-label") ?? "");
          assert.match(label, /IDs per second over the last 5 minutes/);
        },
      );

      await t.step(
        "a narrow screen (360 px): the page fits, the table scrolls in its box and says so",
        async () => {
          await page.setViewport({ width: 360, height: 740 });
          await page.reload();
          const widths = await page.evaluate(
            "[document.documentElement.scrollWidth, window.innerWidth]",
          ) as number[];
          assert.ok(widths[0] <= widths[1], `the page is ${widths[0]} px wide on ${widths[1]}`);
          const ticks = await page.$$eval("svg text", (els) => els.map((e) => e.textContent ?? ""));
          assert.ok(ticks.includes("now") && ticks.includes("-5 min"), ticks.join("|"));
          // Said that the table scrolls; the chart's labels drawn at a readable size.
          const hint = await page.$eval(
            ".hint",
            (el) => (el as unknown as { offsetParent: unknown }).offsetParent !== null,
          );
          assert.ok(hint, "no visible hint that the table scrolls");
          const sizes = await page.$$eval(
            "svg text",
            (els) => els.map((e) => e.getBoundingClientRect().height).filter((h) => h > 0),
          );
          assert.ok(
            sizes.length > 0 && sizes.every((s) => s >= 9),
            `chart labels ${sizes} px high`,
          );
          await page.setViewport({ width: 1024, height: 768 });
        },
      );

      await t.step("no token in any URL, nothing fetched from elsewhere", () => {
        for (const url of requested) {
          assert.ok(url.startsWith(s.url), `fetched ${url}`);
          assert.ok(!url.includes(ORDERS) && !url.includes("token="), `a token in ${url}`);
        }
      });

      await t.step("sign out ends the session", async () => {
        await Promise.all([page.waitForNavigation(), page.click('form[action="/logout"] button')]);
        assert.ok(await page.$('input[name="token"]'));
        assert.equal(await page.$("table"), null);
      });
    } finally {
      await browser.close();
    }
  },
});

Deno.test("status page chart: a burst switches the y axis to a log scale with labelled ticks", () => {
  const steady = Array.from({ length: 300 }, () => 50);
  const linear = chartScale(steady);
  assert.equal(linear.log, false);
  assert.deepEqual(linear.ticks, [0, 25, 50]);
  assert.equal(linear.y(50), 1);
  const burst = [...steady.slice(1), 100_000];
  const log = chartScale(burst);
  assert.equal(log.log, true);
  assert.deepEqual(log.ticks, [0, 1, 10, 100, 1_000, 10_000, 100_000]);
  // The steady traffic stays a third of the way up instead of flat on the baseline.
  assert.ok(log.y(50) > 0.3, String(log.y(50)));
  assert.ok(Math.abs(log.y(100_000) - 1) < 1e-9);
  assert.equal(chartScale(Array(300).fill(0)).log, false);
  assert.deepEqual([950, 1_200, 35_000, 1_500_000].map(shortCount), ["950", "1.2k", "35k", "1.5M"]);
});
