/**
 * `deno task mutate:all`'s own bookkeeping: every mutant it excuses as equivalent is one mutant
 * of the code as it is (an entry left behind by an edit, or one that would excuse two mutants,
 * fails here), every file it mutates and every test file it runs exists, and the mutants of a
 * small text are the ones its doc lists.
 */

import "../support/deadline.ts"; // a time limit on every test of this file
import assert from "node:assert/strict";
import { EQUIVALENT, mutantsOf, numberSet, TARGETS } from "../mutate_all.ts";

const root = new URL("../../", import.meta.url);

Deno.test("mutate:all: each EQUIVALENT entry names exactly one mutant of the code as it is", async () => {
  const count = new Map<string, number>();
  for (const target of TARGETS) {
    const text = await Deno.readTextFile(new URL(target.file, root));
    for (const m of mutantsOf(target.file, text)) count.set(m.key, (count.get(m.key) ?? 0) + 1);
  }
  const ambiguous = [...count].filter(([, n]) => n > 1).map(([key]) => key);
  assert.deepEqual(ambiguous, [], "two mutants share a key");
  const stale = Object.keys(EQUIVALENT).filter((key) => !count.has(key));
  assert.deepEqual(stale, [], "EQUIVALENT entries that match no mutant");
  for (const [key, why] of Object.entries(EQUIVALENT)) {
    assert.ok(why.trim().length > 10, `${key}: no reason given`);
  }
});

Deno.test("mutate:all: every target and every test file it runs exists", async () => {
  const files = new Set(TARGETS.map((t) => t.file));
  assert.equal(files.size, TARGETS.length, "a file listed twice");
  for (const target of TARGETS) {
    assert.ok((await Deno.stat(new URL(target.file, root))).isFile, target.file);
    assert.ok(target.tests.length > 0, `${target.file}: no test file`);
    for (const test of target.tests) {
      assert.match(test, /_test\.ts$/, `${target.file}: ${test} is not a test file`);
      assert.ok((await Deno.stat(new URL(test, root))).isFile, `${target.file}: ${test}`);
    }
  }
});

Deno.test("mutate:all: the mutants of a small text, one key each", () => {
  const text = "if (a > b && c > d) {\n  n++;\n}\nconst e = !f || g === 1;\n";
  const mutants = mutantsOf("x.ts", text);
  const applied = mutants.map((m) => text.slice(0, m.start) + m.to + text.slice(m.end));
  for (
    const expected of [
      "if (a >= b && c > d) {",
      "if (a > b && c <= d) {",
      "if (a > b || c > d) {",
      "if (true) {",
      "if (false) {",
      "if (a > b && c > d) {}",
      "  n--;",
      "const e = f || g === 1;",
      "const e = !f && g === 1;",
      "const e = !f || g !== 1;",
    ]
  ) {
    assert.ok(applied.some((t) => t.includes(expected)), `no mutant gives: ${expected}`);
  }
  assert.equal(new Set(mutants.map((m) => m.key)).size, mutants.length, "two mutants, one key");
  // The two `>` to `>=` of the first line, told apart by their place on it.
  const keys = mutants.filter((m) => m.to === ">=").map((m) => m.key);
  assert.deepEqual(keys, [
    "x.ts|if (a > b && c > d) {|>|>= #1",
    "x.ts|if (a > b && c > d) {|>|>= #2",
  ]);
  assert.equal(mutants.find((m) => m.to === "--")?.line, 2);
});

Deno.test("mutate:all: --ids and --lines take numbers and ranges, and refuse anything else", () => {
  const pick = numberSet("3,17,40-45");
  assert.ok(pick !== undefined);
  assert.deepEqual([2, 3, 17, 39, 40, 45, 46].filter(pick), [3, 17, 40, 45]);
  assert.equal(numberSet(undefined), undefined);
  assert.throws(() => numberSet("3,x"), /not a number or range: x/);
});
