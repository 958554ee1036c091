/**
 * docs/security.md names a test for each promise: every test file it names exists, every test
 * name it quotes after one (in the same section) is in that file, every section names a test,
 * and every mutation it runs (`deno task mutate <filter>...`) is one of tests/mutations.ts.
 * Reads files only (no server).
 */

import "../support/deadline.ts"; // a time limit on every test of this file
import assert from "node:assert/strict";
import { MUTATIONS } from "../mutations.ts";

const root = new URL("../../", import.meta.url);
const read = (path: string) => Deno.readTextFileSync(new URL(path, root));
/** Whitespace collapsed: a quoted name may be wrapped across lines. */
const flat = (text: string) => text.replace(/\s+/g, " ");

/** Each test file a section names, and the names quoted after it: [section, file, name?]. */
export function testReferences(doc: string): [string, string, string | undefined][] {
  const refs: [string, string, string | undefined][] = [];
  for (const section of doc.split(/^## /m).slice(1)) {
    const title = section.slice(0, section.indexOf("\n"));
    // Code spans hold no test names ("\0step:<name>"), but may hold the files.
    const text = section.replace(
      /`([^`]*)`/g,
      (_, code: string) => /^tests\/[\w/]+\.ts$/.test(code) ? code : " ".repeat(code.length),
    );
    let file: string | undefined;
    for (const m of text.matchAll(/(tests\/[\w/]+_test\.ts)|"([^"]+)"/g)) {
      if (m[1] !== undefined) {
        file = m[1];
        refs.push([title, file, undefined]);
      } else if (file !== undefined) {
        refs.push([title, file, flat(m[2])]);
      }
    }
  }
  return refs;
}

Deno.test("security docs: each promise names a test that exists", async (t) => {
  const doc = read("docs/security.md");
  const refs = testReferences(doc);

  await t.step("the parser finds files and names, and only after a file", () => {
    const sample = '## A\n"not a test" in `tests/x_test.ts`, "one: name"; `"code"`\n## B\n"no"\n';
    assert.deepEqual(testReferences(sample), [
      ["A", "tests/x_test.ts", undefined],
      ["A", "tests/x_test.ts", "one: name"],
    ]);
  });

  await t.step("every section names a test file", () => {
    const titles = [...doc.matchAll(/^## (.*)$/gm)].map((m) => m[1]);
    assert.ok(titles.length >= 6, `sections: ${titles}`);
    for (const title of titles) {
      assert.ok(refs.some(([s]) => s === title), `section "${title}" names no test`);
    }
  });

  await t.step("every named file exists, and every quoted name is in it", () => {
    assert.ok(refs.filter(([, , name]) => name !== undefined).length >= 15, "too few names");
    for (const [section, file, name] of refs) {
      const text = flat(read(file));
      if (name === undefined) continue;
      // In a string literal of the file: a test's name, or the end of it ("service guarantee:
      // an honest ..." quoted without its prefix), or a step's.
      const quoted = new RegExp(`"[^"]*${name.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}"`);
      assert.ok(quoted.test(text), `${section}: "${name}" is not a test of ${file}`);
    }
  });

  await t.step("every mutation it runs is one of tests/mutations.ts", () => {
    const runs = [...flat(doc).matchAll(/`deno task mutate ([^`]+)`/g)]
      .flatMap((m) => m[1].trim().split(" "));
    assert.ok(runs.length >= 5, `mutations: ${runs}`);
    for (const filter of runs) {
      assert.ok(MUTATIONS.some((m) => m.id.includes(filter)), `no mutation matches ${filter}`);
    }
  });
});
