/**
 * The CLI refuses what a generator refuses: `next` and `floor` on a Redis without AOF exit 1
 * with the server's problem and the opt-out, reserving nothing; `--durability best-effort`
 * accepts the loss, as the library's `durability: "best-effort"` does.
 */

import "../support/deadline.ts"; // a time limit on every test of this file
import assert from "node:assert/strict";
import { command, redisOnly, startServer } from "../support/redis_server.ts";

const CLI = new URL("../../src/cli/mod.ts", import.meta.url).pathname;

async function kvid(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--quiet", CLI, ...args],
    env: { KVID_REDIS_URL: "", KVID_STORE_URL: "" },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder();
  return { code: out.code, stdout: text.decode(out.stdout), stderr: text.decode(out.stderr) };
}

Deno.test({
  ...redisOnly(
    "cli: next and floor refuse a Redis without AOF unless --durability best-effort",
    "it stages appendonly no",
  ),
  fn: async () => {
    await using server = await startServer({ persistence: "snapshots" }); // appendonly no
    const url = ["--url", server.url];
    for (const args of [["next", "order", "--create"], ["floor", "order", "100", "--create"]]) {
      const run = await kvid([...args, ...url]);
      assert.equal(run.code, 1, `${args[0]}: ${run.stdout} ${run.stderr}`);
      assert.match(run.stderr, /can lose reservations.*appendonly.*--durability best-effort/s);
      assert.equal(run.stdout, "");
    }
    assert.equal(await command(server.url, "HGET", "kvid", "order"), null, "nothing reserved");
    const next = await kvid(["next", "order", "--create", "--durability", "best-effort", ...url]);
    assert.equal(next.code, 0, next.stderr);
    assert.equal(next.stdout, "1\n");
    const floor = await kvid(["floor", "order", "100", "--durability=best-effort", ...url]);
    assert.equal(floor.code, 0, floor.stderr);
    const bad = await kvid(["next", "order", "--durability", "maybe", ...url]);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /--durability must be "strict" or "best-effort"/);
  },
});

Deno.test("cli: next serves on a Redis with AOF, checking it first", async () => {
  await using server = await startServer(); // appendonly yes
  const run = await kvid(["next", "order", "-n", "2", "--create", "--url", server.url]);
  assert.equal(run.code, 0, run.stderr);
  assert.equal(run.stdout, "1\n2\n");
});
