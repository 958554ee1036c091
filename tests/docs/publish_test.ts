/**
 * The package page on JSR: every relative link and image of the published README and of the
 * published modules' JSDoc points at a file that is published. The file list is the one
 * `deno publish --dry-run` prints (it reads deno.json `publish.include` and `exclude`).
 *
 * JSR resolves a relative link of the README or of a module's docs against the package root (or
 * the linked repository's root), not against the module's folder: `docs/x.png` in src/service/mod.ts is
 * the package's `docs/x.png`. Other published Markdown files are read as files, so their links are
 * resolved against their own folder.
 */

import "../support/deadline.ts"; // a time limit on every test of this file
import assert from "node:assert/strict";

const ROOT = new URL("../../", import.meta.url);

/** The published files, as paths from the package root. */
async function publishedFiles(): Promise<Set<string>> {
  const out = await new Deno.Command(Deno.execPath(), {
    // --no-check: the file list does not depend on type-checking (deno task check does that).
    args: ["publish", "--dry-run", "--allow-dirty", "--no-check"],
    cwd: ROOT,
    stdout: "piped",
    stderr: "piped",
    env: { NO_COLOR: "1" },
  }).output();
  const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
  assert.equal(out.code, 0, text);
  const files = new Set<string>();
  for (const [, url] of text.matchAll(/^\s+(file:\/\/\S+) \(/gm)) {
    files.add(decodeURIComponent(url.slice(ROOT.href.length)));
  }
  assert.ok(files.has("README.md") && files.has("mod.ts"), `published: ${[...files]}`);
  return files;
}

/** The Markdown of a file: the whole of a .md, the JSDoc comments of a .ts. */
function markdownOf(path: string, text: string): string {
  if (path.endsWith(".md")) return text;
  return [...text.matchAll(/\/\*\*([^]*?)\*\//g)]
    .map((m) => m[1].replace(/^[ \t]*\* ?/gm, ""))
    .join("\n");
}

/** Relative link and image targets of some Markdown, outside code. */
function relativeTargets(markdown: string): string[] {
  const prose = markdown.replace(/^```[^]*?^```/gm, "").replace(/`[^`\n]*`/g, "");
  const targets = [
    ...[...prose.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)].map((m) => m[1]),
    ...[...prose.matchAll(/<(?:img|a)\s[^>]*?(?:src|href)="([^"]+)"/g)].map((m) => m[1]),
  ];
  return targets.filter((t) => !/^([a-z][a-z0-9+.-]*:|#|\/\/)/i.test(t));
}

Deno.test("the package page: every relative link and image is a published file", async () => {
  const files = await publishedFiles();
  const broken: string[] = [];
  let checked = 0;
  for (const path of files) {
    if (!path.endsWith(".md") && !path.endsWith(".ts")) continue;
    const text = await Deno.readTextFile(new URL(path, ROOT));
    const base = path === "README.md" || path.endsWith(".ts")
      ? ROOT
      : new URL(path.replace(/[^/]*$/, ""), ROOT);
    for (const target of relativeTargets(markdownOf(path, text))) {
      checked++;
      const file = new URL(target.replace(/[#?].*$/, ""), base).href.slice(ROOT.href.length);
      if (!files.has(decodeURIComponent(file))) broken.push(`${path}: ${target}`);
    }
  }
  assert.ok(checked >= 10, `only ${checked} links found: is the parser blind?`);
  assert.deepEqual(broken, [], "links to files that are not published (deno.json publish.include)");
});
