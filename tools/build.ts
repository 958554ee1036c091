/**
 * `deno task build`: the npm package of this checkout for Node and Bun, in `dist/` (gitignored):
 * `mod.mjs` (mod.ts bundled into one ESM file, Web APIs only), `mod.d.mts` (its type
 * declarations) and a `package.json` named `@kvid/core`. Then, in a Node or Bun project:
 *
 * ```sh
 * npm install /path/to/checkout/dist     # or: bun add /path/to/checkout/dist
 * ```
 *
 * and `import { KvId } from "@kvid/core"` works as it does from JSR. Only the main entry point:
 * `./deno-kv`, `./cli` and `./server` are Deno's; `./store` is not built yet.
 *
 * `deno bundle --declaration` leaves the `import type` of a module whose values it did not bundle
 * (`./store_contract.ts`: types only) pointing at a file that is not there, and exports the exports
 * of every bundled module: here those declarations are inlined, and only mod.ts's exports (the
 * names `deno doc mod.ts` lists) stay exported, so the types claim nothing mod.mjs does not have.
 *
 * @module
 */

const root = new URL("../", import.meta.url);
// The runtime's config (imports and lock without the development tools): a build from a fresh
// clone fetches only what the bundles contain.
const runConfig = new URL("deno.run.json", root).pathname;
const dist = new URL("dist/", root);
const config = JSON.parse(await Deno.readTextFile(new URL("deno.json", root))) as {
  name: string;
  version: string;
  license: string;
};

/** `deno bundle` of one module into `out` (an .mjs path), with its declarations beside it. */
async function bundle(entry: string, out: string): Promise<void> {
  const { code } = await new Deno.Command(Deno.execPath(), {
    args: [
      "bundle",
      "--config",
      runConfig,
      "--quiet",
      "--platform=browser",
      "--format=esm",
      "--declaration",
      "-o",
      out,
      entry,
    ],
    cwd: root,
  }).spawn().status;
  if (code !== 0) throw new Error(`deno bundle ${entry} failed (exit ${code})`);
}

const DECLARATION =
  /^(?:export )?(?:declare )?(?:abstract )?(?:const|let|var|function|class|interface|type|enum) (\w+)/;

/** The names declared at the top level of a declaration file. */
function declaredNames(types: string): Set<string> {
  const names = new Set<string>();
  for (const line of types.split("\n")) {
    const m = DECLARATION.exec(line);
    if (m) names.add(m[1]);
  }
  return names;
}

/**
 * A declaration file without the top-level declarations (each with its doc comment) of the
 * names in `declared`.
 */
function withoutDeclared(types: string, declared: Set<string>): string {
  const chunks: { lines: string[]; name?: string }[] = [];
  let current: { lines: string[]; name?: string } = { lines: [] };
  for (const line of types.split("\n")) {
    const m = DECLARATION.exec(line);
    if (current.name !== undefined && (line.startsWith("/**") || m)) {
      chunks.push(current);
      current = { lines: [] };
    }
    current.lines.push(line);
    if (m && current.name === undefined) current.name = m[1];
  }
  chunks.push(current);
  return chunks.filter((c) => c.name === undefined || !declared.has(c.name))
    .map((c) => c.lines.join("\n")).join("\n");
}

/** Every .ts file under `dir`, from the checkout's root. */
async function sourcesUnder(dir: string): Promise<string[]> {
  const found: string[] = [];
  for await (const e of Deno.readDir(new URL(`${dir}/`, root))) {
    if (e.isDirectory) found.push(...await sourcesUnder(`${dir}/${e.name}`));
    else if (e.name.endsWith(".ts")) found.push(`${dir}/${e.name}`);
  }
  return found;
}

/** The one source file whose path ends with `spec` (its `./` and `../` dropped). */
function sourceFor(spec: string, sources: string[]): string {
  const tail = spec.replace(/^(?:\.\.?\/)+/, "");
  const matches = sources.filter((f) => f === tail || f.endsWith(`/${tail}`));
  if (matches.length !== 1) {
    throw new Error(`the declarations import ${spec}: ${matches.length} files under src/ match`);
  }
  return matches[0];
}

/** The names a module exports, as `deno doc` lists them. */
async function exportsOf(entry: string): Promise<Set<string>> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["doc", "--config", runConfig, "--json", entry],
    cwd: root,
    stdout: "piped",
  }).output();
  if (out.code !== 0) throw new Error(`deno doc ${entry} failed (exit ${out.code})`);
  const doc = JSON.parse(new TextDecoder().decode(out.stdout));
  const nodes: { name: string }[] = Array.isArray(doc.nodes)
    ? doc.nodes
    : Object.values(doc.nodes as Record<string, { symbols: { name: string }[] }>)
      .flatMap((m) => m.symbols);
  return new Set(nodes.map((n) => n.name));
}

await Deno.remove(dist, { recursive: true }).catch(() => {});
const tmp = await Deno.makeTempDir({ prefix: "kvid-build-" });
try {
  await bundle("mod.ts", new URL("mod.mjs", dist).pathname);
  const declarations = new URL("mod.d.mts", dist);
  let types = await Deno.readTextFile(declarations);
  // The bundler leaves the type imports it could not inline as they were written in each source
  // file (relative to that file, e.g. "./redis_store.ts", "../contract/store.ts"): each is found
  // by its path's tail under src/ and its declarations inlined, until none is left. A
  // side-effect import (mod.ts installing the Redis resolver) has no types.
  types = types.replace(/^import "[^"]+";\n/gm, "");
  const sources = await sourcesUnder("src");
  const dangling = /^import (?:type )?\{[^}]*\} from "((?:\.\.?\/)+[\w/]+\.ts)";\n/gm;
  const inlined = new Set<string>();
  for (let round = 0; round < 10; round++) {
    const wanted = new Set<string>();
    for (const [, spec] of types.matchAll(dangling)) wanted.add(sourceFor(spec, sources));
    types = types.replace(dangling, "");
    const fresh = [...wanted].filter((file) => !inlined.has(file));
    if (fresh.length === 0) break;
    for (const file of fresh) {
      inlined.add(file);
      const name = file.replace(/\//g, "_").replace(/\.ts$/, "");
      await bundle(file, `${tmp}/${name}.mjs`);
      const part = await Deno.readTextFile(`${tmp}/${name}.d.mts`);
      // Its types, not its functions (mod.mjs does not export those), and none declared already
      // (a type the bundle of mod.ts has, or another file's copy of the same constant).
      types += `\n// From ${file}\n` +
        withoutDeclared(
          part.replace(/^export declare function /gm, "declare function ")
            .replace(/^import "[^"]+";\n/gm, "")
            .replace(/^export \{\};\n?/gm, ""),
          declaredNames(types),
        );
    }
  }
  // The bundled declarations export every module's exports; the package exports mod.ts's only.
  const publicNames = await exportsOf("mod.ts");
  types = types.replace(
    /^export ((?:declare )?(?:abstract )?(?:function|class|const|let|var|enum|interface|type) (\w+))/gm,
    (line, declaration: string, name: string) => publicNames.has(name) ? line : declaration,
  );
  if (!/^export \{\};$/m.test(types)) types += "\nexport {};\n";
  await Deno.writeTextFile(declarations, types);
  // Deno reads the types from this comment; Node, Bun and TypeScript from package.json.
  const code = new URL("mod.mjs", dist);
  await Deno.writeTextFile(
    code,
    `// @ts-self-types="./mod.d.mts"\n` + await Deno.readTextFile(code),
  );
  const pkg = {
    name: config.name,
    version: config.version,
    description:
      "Globally unique, trend-increasing 64-bit IDs in segment mode (built from a checkout)",
    license: config.license,
    type: "module",
    exports: { ".": { types: "./mod.d.mts", default: "./mod.mjs" } },
    files: ["mod.mjs", "mod.d.mts", "README.md", "LICENSE"],
    sideEffects: false,
  };
  await Deno.writeTextFile(new URL("package.json", dist), JSON.stringify(pkg, null, 2) + "\n");
  for (const f of ["README.md", "LICENSE"]) await Deno.copyFile(new URL(f, root), new URL(f, dist));
} finally {
  await Deno.remove(tmp, { recursive: true });
}
for await (const f of Deno.readDir(dist)) {
  const { size } = await Deno.stat(new URL(f.name, dist));
  console.log(`dist/${f.name}\t${size} bytes`);
}
