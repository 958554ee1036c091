/**
 * `kvid durability`'s exit paths against real servers: exit 0 and `durable: yes` for a server a generator
 * serves from, exit 1 and the problem for one it refuses, with and without `--json`.
 */

import "../support/deadline.ts"; // a time limit on every test of this file
import assert from "node:assert/strict";
import { startServer } from "../support/redis_server.ts";

const CLI = new URL("../../src/cli/mod.ts", import.meta.url).pathname;

async function kvid(...args: string[]) {
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

Deno.test("cli: durability exits 0 for a server a generator serves from, with --json too", async () => {
  await using server = await startServer(); // appendonly yes
  const plain = await kvid("durability", "--url", server.url);
  assert.equal(plain.code, 0, plain.stderr);
  assert.match(plain.stdout, /^appendonly\tyes$/m);
  assert.match(plain.stdout, /^durable: yes$/m);
  assert.doesNotMatch(plain.stdout, /problem:/);
  const json = await kvid("durability", "--json", "--key", "ids", "--url", server.url);
  assert.equal(json.code, 0, json.stderr);
  const d = JSON.parse(json.stdout);
  assert.deepEqual(Object.keys(d), ["key", "durable", "settings", "problems"]);
  assert.equal(d.key, "ids");
  assert.equal(d.durable, true);
  assert.equal(d.settings.appendonly, "yes");
  assert.deepEqual(d.problems, []);
});

Deno.test("cli: durability exits 1 for a server a generator would refuse, with --json too", async () => {
  await using server = await startServer({ persistence: "snapshots" }); // appendonly no
  const plain = await kvid("durability", "--url", server.url);
  assert.equal(plain.code, 1, plain.stdout);
  assert.match(plain.stderr, /can lose reservations/);
  assert.match(plain.stdout, /^durable: NO$/m);
  assert.match(plain.stdout, /^problem: AOF is off/m);
  const json = await kvid("durability", "--json", "--url", server.url);
  assert.equal(json.code, 1, json.stdout);
  const d = JSON.parse(json.stdout);
  assert.equal(d.key, "kvid");
  assert.equal(d.durable, false);
  assert.equal(d.settings.appendonly, "no");
  assert.ok(d.problems.some((p: string) => /AOF is off/.test(p)), json.stdout);
});
