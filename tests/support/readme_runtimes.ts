/**
 * Run the README's Node blocks (fenced `js node`) on Node, or its Bun and Node blocks on Bun, as
 * written, against a real server started here; each must end by itself having printed `1` first.
 * Called by `.ci/runtimes` from a project that has `@kvid/core` (the package `deno task build`
 * writes), `redis` and `ioredis` installed:
 *
 * ```sh
 * deno run -A tests/support/readme_runtimes.ts <project dir> node|bun <executable>
 * ```
 *
 * @module
 */

import { readmeBlocks, runBlocks, type Runtime } from "./readme_blocks.ts";
import { command, startServer } from "./redis_server.ts";

const [dir, runtime, exe] = Deno.args;
if (!dir || (runtime !== "node" && runtime !== "bun") || !exe) {
  console.error("usage: readme_runtimes.ts <project dir> node|bun <executable>");
  Deno.exit(2);
}
const wanted: Runtime[] = runtime === "node" ? ["node"] : ["bun", "node"];
const readme = await Deno.readTextFile(new URL("../../README.md", import.meta.url));
const blocks = readmeBlocks(readme).filter((b) => wanted.includes(b.runtime));
let failed = 0;
{
  await using server = await startServer();
  const runs = await runBlocks(blocks, {
    dir,
    exe,
    args: [],
    ext: ".mjs",
    host: server.host,
    port: server.port,
    flush: () => command(server.url, "FLUSHALL"),
    timeoutMs: 30_000,
  });
  for (const r of runs) {
    const ok = !r.hung && r.code === 0 && /^1\b/.test(r.stdout);
    const what = `README.md line ${r.block.line} (a ${r.block.runtime} block) on ${runtime}`;
    if (ok) console.log(`ok   ${what}: ${r.stdout.trim()}`);
    else {
      failed++;
      console.error(
        `FAIL ${what}: ${r.hung ? "did not end by itself within 30 s" : `exit ${r.code}`}\n` +
          `stdout: ${r.stdout}\nstderr: ${r.stderr}`,
      );
    }
  }
}
console.log(`README on ${runtime}: ${blocks.length - failed} of ${blocks.length} blocks ran`);
if (failed > 0 || blocks.length === 0) Deno.exit(1);
