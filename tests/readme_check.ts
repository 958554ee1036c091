/**
 * Type-check every TypeScript block of README.md (fenced as `ts`) as the module a user would
 * write from it, with `@kvid/core` and `jsr:@kvid/core` (and their sub-exports) resolved to this
 * checkout. Blocks fenced as `ts ignore` are skipped: they need a package CI cannot reach
 * (`jsr:@db/redis`).
 *
 * Run by `deno task check`: `deno run -A tests/readme_check.ts`. Each block becomes a file named
 * after its first README line, so an error points at the README.
 */

const root = new URL("../", import.meta.url);
const readme = await Deno.readTextFile(new URL("README.md", root));
const config = JSON.parse(await Deno.readTextFile(new URL("deno.json", root))) as {
  exports: Record<string, string>;
  imports: Record<string, string>;
};

const dir = await Deno.makeTempDir({ prefix: "kvid-readme-" });
let failed = false;
try {
  const files: string[] = [];
  const lines = readme.split("\n");
  for (let i = 0; i < lines.length; i++) {
    if (lines[i] !== "```ts") continue;
    const start = i + 1;
    const body: string[] = [];
    for (i++; i < lines.length && lines[i] !== "```"; i++) body.push(lines[i]);
    const file = `${dir}/README.md-line-${start}.ts`;
    await Deno.writeTextFile(file, body.join("\n") + "\n");
    files.push(file);
  }
  // The package's own dependencies (e.g. `@noble/ciphers/aes.js` of ./codec), subpaths included:
  // an import map file, unlike deno.json, does not extend "name" to "name/...".
  const imports: Record<string, string> = {};
  for (const [name, target] of Object.entries(config.imports)) {
    imports[name] = target;
    const npm = /^npm:(@?[^@]+)@(.+)$/.exec(target);
    if (npm) imports[`${name}/`] = `npm:/${npm[1]}@${npm[2]}/`;
  }
  for (const [name, path] of Object.entries(config.exports)) {
    imports[`jsr:@kvid/core${name.slice(1)}`] = new URL(path, root).href;
    imports[`@kvid/core${name.slice(1)}`] = new URL(path, root).href;
  }
  await Deno.writeTextFile(`${dir}/imports.json`, JSON.stringify({ imports }));
  const { code } = await new Deno.Command(Deno.execPath(), {
    args: ["check", "--quiet", "--unstable-kv", `--import-map=${dir}/imports.json`, ...files],
    cwd: dir,
  }).spawn().status;
  failed = code !== 0;
  if (!failed) console.log(`README: ${files.length} code blocks type-check`);
} finally {
  await Deno.remove(dir, { recursive: true });
}
if (failed) Deno.exit(1);
