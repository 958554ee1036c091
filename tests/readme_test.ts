/**
 * Every Deno block of README.md (fenced as `ts`) runs as written, as a script of its own, against
 * a real server this test starts, and ends by itself having made an ID: its first line of output
 * is `1` (each runs on an empty server). `@kvid/core` and `jsr:@kvid/core` resolve to this
 * checkout; `npm:` packages come from the npm registry. The Node and Bun blocks run in
 * `.ci/runtimes` (`readme_runtimes.ts`).
 */

import assert from "node:assert/strict";
import { checkoutImportMap, readmeBlocks, runBlocks } from "./readme_blocks.ts";
import { command, startServer } from "./server.ts";

Deno.test("README: every Deno block runs as written and ends by itself", async () => {
  const readme = await Deno.readTextFile(new URL("../README.md", import.meta.url));
  const blocks = readmeBlocks(readme).filter((b) => b.runtime === "deno");
  assert.ok(blocks.length >= 5, `found ${blocks.length} Deno blocks`);
  await using server = await startServer();
  const dir = await Deno.makeTempDir({ prefix: "kvid-readme-run-" });
  try {
    await Deno.writeTextFile(`${dir}/imports.json`, JSON.stringify(await checkoutImportMap()));
    const runs = await runBlocks(blocks, {
      dir,
      exe: Deno.execPath(),
      args: ["run", "-A", "--quiet", "--unstable-kv", "--import-map=imports.json"],
      ext: ".ts",
      host: server.host,
      port: server.port,
      flush: () => command(server.url, "FLUSHALL"),
      timeoutMs: 60_000,
    });
    for (const r of runs) {
      const where = `README.md line ${r.block.line}`;
      assert.ok(!r.hung, `${where} did not end by itself within 60 s: ${r.stderr}`);
      assert.equal(r.code, 0, `${where} exited ${r.code}: ${r.stderr}`);
      assert.match(r.stdout, /^1\b/, `${where} printed its first ID: ${r.stdout}`);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
