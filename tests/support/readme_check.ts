/**
 * Type-check every Deno block of README.md and docs/*.md (fenced as `ts`, see `readme_blocks.ts`)
 * as the module a user would write from it, with `@kvid/core` and `jsr:@kvid/core` (and their
 * sub-exports) resolved to this checkout. `readme_test.ts` runs them.
 *
 * Run by `deno task check`: `deno run -A tests/support/readme_check.ts`. Each block becomes a file named
 * after its document and first line, so an error points at the line.
 */

import { checkoutImportMap, docsFiles, markdownDocBlocks, readmeBlocks } from "./readme_blocks.ts";

const readme = await Deno.readTextFile(new URL("../../README.md", import.meta.url));
const dir = await Deno.makeTempDir({ prefix: "kvid-readme-" });
let failed = false;
try {
  const files: string[] = [];
  for (const block of readmeBlocks(readme).filter((b) => b.runtime === "deno")) {
    const file = `${dir}/README.md-line-${block.line}.ts`;
    await Deno.writeTextFile(file, block.code);
    files.push(file);
  }
  // The `ts` blocks of docs/*.md too (their `ts ignore` ones need what a type-check cannot give).
  for (const doc of await docsFiles()) {
    const markdown = await Deno.readTextFile(new URL(`../../${doc}`, import.meta.url));
    const fences = markdown.split("\n");
    for (const block of markdownDocBlocks(doc, markdown)) {
      if (fences[block.line - 2] !== "```ts") continue;
      const file = `${dir}/${doc.replace("/", "_")}-line-${block.line}.ts`;
      await Deno.writeTextFile(file, block.code);
      files.push(file);
    }
  }
  await Deno.writeTextFile(`${dir}/imports.json`, JSON.stringify(await checkoutImportMap()));
  const { code } = await new Deno.Command(Deno.execPath(), {
    args: ["check", "--quiet", "--unstable-kv", `--import-map=${dir}/imports.json`, ...files],
    cwd: dir,
  }).spawn().status;
  failed = code !== 0;
  if (!failed) console.log(`README and docs/*.md: ${files.length} Deno blocks type-check`);
} finally {
  await Deno.remove(dir, { recursive: true });
}
if (failed) Deno.exit(1);
