/**
 * The CLI's `encode` and `decode`, run as subprocesses: arguments, standard input one value a
 * line, the key from `KVID_ID_KEY`, and the exit codes of bad input.
 */

import "../support/deadline.ts"; // a time limit on every test of this file
import assert from "node:assert/strict";
import { decimal, encrypted, parseKeys } from "../../src/codec/mod.ts";

const CLI = new URL("../../src/cli/mod.ts", import.meta.url).pathname;
const ROOT = new URL("../..", import.meta.url).pathname;
const KEY = "000102030405060708090a0b0c0d0e0f";

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** Run the CLI with `input` on standard input; `KVID_ID_KEY` only if given. */
async function kvid(
  args: string[],
  env: Record<string, string> = {},
  input?: string,
): Promise<Run> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--quiet", CLI, ...args],
    cwd: ROOT,
    env: { KVID_ID_KEY: "", ...env },
    stdin: input === undefined ? "null" : "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  if (input !== undefined) {
    const writer = child.stdin.getWriter();
    await writer.write(new TextEncoder().encode(input));
    await writer.close();
  }
  const out = await child.output();
  const text = new TextDecoder();
  return { code: out.code, stdout: text.decode(out.stdout), stderr: text.decode(out.stderr) };
}

function expect(run: Run, code: number, stderr?: RegExp): Run {
  assert.equal(run.code, code, `exit code; stdout: ${run.stdout}\nstderr: ${run.stderr}`);
  if (stderr) assert.match(run.stderr, stderr);
  return run;
}

Deno.test("kvid encode and decode", async (t) => {
  const codec = encrypted(decimal(12), { ...parseKeys(KEY), tweak: "order" });

  await t.step("plain forms from arguments", async () => {
    const run = expect(await kvid(["encode", "--width", "12", "1001", "0"]), 0);
    assert.equal(run.stdout, "000000001001\n000000000000\n");
    const b62 = expect(await kvid(["encode", "--form", "base62", "--prefix", "s/", "1000000"]), 0);
    assert.equal(b62.stdout, "s/4C92\n");
    const back = expect(await kvid(["decode", "--form", "base62", "--prefix", "s/", "s/4C92"]), 0);
    assert.equal(back.stdout, "1000000\n");
  });

  await t.step(
    "the keyed form, 20,000 values on standard input, key from KVID_ID_KEY",
    async () => {
      const ids = Array.from({ length: 20_000 }, (_, i) => String(i + 1));
      const args = ["--encrypt", "--width", "12", "--tweak", "order"];
      const enc = expect(
        await kvid(["encode", ...args], { KVID_ID_KEY: KEY }, ids.join("\n") + "\n"),
        0,
      );
      const lines = enc.stdout.trimEnd().split("\n");
      assert.equal(lines.length, ids.length);
      assert.deepEqual(lines.slice(0, 3), ids.slice(0, 3).map((id) => codec.encode(BigInt(id))));
      assert.equal(new Set(lines).size, lines.length);
      const dec = expect(await kvid(["decode", ...args], { KVID_ID_KEY: KEY }, enc.stdout), 0);
      assert.deepEqual(dec.stdout.trimEnd().split("\n"), ids);
      const json = expect(await kvid(["encode", ...args, "--json", "7"], { KVID_ID_KEY: KEY }), 0);
      assert.deepEqual(JSON.parse(json.stdout), { id: "7", encoded: codec.encode(7) });
    },
  );

  await t.step(
    "bad input: exit 1 naming the value, exit 2 for bad options; no key in output",
    async () => {
      const bad = expect(
        await kvid(["encode", "--width", "6"], {}, "1\n2\n1000000\n4\n"),
        1,
        /line 3: ID 1000000 is outside the codec's domain 0\.\.999999/,
      );
      assert.equal(bad.stdout, "000001\n000002\n", "the values before the bad one");
      expect(
        await kvid(["decode", "--form", "base36", "LFLS"]),
        1,
        /argument 1: character "L" at 0 is not in the alphabet/,
      );
      expect(await kvid(["encode", "-5"]), 2);
      expect(
        await kvid(["encode", "--encrypt", "--width", "12", "1"]),
        2,
        /\$KVID_ID_KEY, which is not set/,
      );
      expect(await kvid(["encode", "--encrypt", "1"], { KVID_ID_KEY: KEY }), 2, /needs --width/);
      const short = expect(
        await kvid(["encode", "--encrypt", "--width", "12", "1"], { KVID_ID_KEY: KEY.slice(2) }),
        2,
        /must be 32, 48 or 64 hex digits/,
      );
      assert.ok(!short.stderr.includes(KEY.slice(2, 20)), short.stderr);
      expect(
        await kvid(["decode", "--encrypt", "--width", "12", "9" + "0".repeat(12)], {
          KVID_ID_KEY: KEY,
        }),
        1,
        /unknown key identifier "9"/,
      );
      expect(
        await kvid(["encode", "--form", "base64", "1"]),
        2,
        /--form must be decimal, base36 or base62/,
      );
      expect(await kvid(["encode", "--key", KEY, "1"]), 2);
      const help = expect(await kvid(["encode", "--help"]), 0);
      assert.match(help.stdout, /KVID_ID_KEY/);
    },
  );
});
