/**
 * docs/operations.md's `stats()` example, as written (its server address changed to a Redis this
 * test starts): it prints its first ID and real figures (one segment, `high` 1), and on SIGTERM it closes the
 * generator and the client and the process ends by itself.
 */

import "../support/deadline.ts"; // a time limit on every test of this file
import assert from "node:assert/strict";
import { markdownDocBlocks } from "../support/readme_blocks.ts";
import { startServer } from "../support/redis_server.ts";

const root = new URL("../../", import.meta.url);

Deno.test("docs/operations.md: the stats() example reports figures and stops on SIGTERM", async () => {
  const file = "docs/operations.md";
  const block = markdownDocBlocks(file, await Deno.readTextFile(new URL(file, root)))
    .find((b) => b.code.includes('addSignalListener("SIGTERM"'));
  assert.ok(block !== undefined, `${file} has no block stopping on SIGTERM`);
  await using server = await startServer();
  const dir = await Deno.makeTempDir({ prefix: "kvid-docs-" });
  const script = `${dir}/stats.ts`;
  await Deno.writeTextFile(
    script,
    block.code.replaceAll("redis://127.0.0.1:6379", server.url)
      .replaceAll('"@kvid/core"', JSON.stringify(new URL("mod.ts", root).href)),
  );
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--quiet", script],
    cwd: root,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  try {
    const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
    let out = "";
    while (out.split("\n").length < 3) { // the ID, the first report
      const { value, done } = await reader.read();
      if (done) break;
      out += value;
    }
    const [first, report] = out.split("\n");
    assert.equal(first, "1");
    const stats = JSON.parse(report);
    assert.equal(stats.name, "order");
    assert.equal(stats.segments, 1, report);
    assert.equal(stats.high, "1", report);
    assert.ok(stats.step >= 1 && stats.durability.durable === true, report);
    child.kill("SIGTERM");
    // Ends by itself: nothing left holding it once the listener closed the generator and client.
    let timer: ReturnType<typeof setTimeout> | undefined;
    const status = await Promise.race([
      child.status,
      new Promise<undefined>((resolve) => timer = setTimeout(() => resolve(undefined), 30_000)),
    ]);
    clearTimeout(timer);
    assert.ok(status !== undefined, "still running 30 s after SIGTERM");
    assert.equal(status.code, 0, `exit ${status.code} (signal ${status.signal})`);
    reader.releaseLock();
    await child.stdout.cancel().catch(() => {});
  } finally {
    await child.stderr.cancel().catch(() => {});
    try {
      child.kill("SIGKILL");
    } catch { /* it ended */ }
    await Deno.remove(dir, { recursive: true });
  }
});
