/**
 * `deno task build`: the npm package of this checkout for Node and Bun, in `dist/`
 * (gitignored): every entry point that runs outside Deno (`ENTRIES`: `@kvid/core`, `/store`,
 * `/client`, `/codec`, `/postgres`, `/mysql`) as one split bundle, an ESM file and its type
 * declarations per entry point and the code they share in chunks (one `KvIdError` class for all),
 * and a `package.json` named `@kvid/core` exporting them. Then, in a Node or Bun project:
 *
 * ```sh
 * npm install /path/to/checkout/dist     # or: bun add /path/to/checkout/dist
 * ```
 *
 * and `import { KvId } from "@kvid/core"` works as it does from JSR. `./deno-kv`, `./cli`,
 * `./server` and `./serve` are Deno's.
 *
 * `deno bundle --declaration` leaves the `import type` of a module whose values it did not bundle
 * (`./store_contract.ts`: types only) pointing at a file that is not there, and exports the exports
 * of every bundled module: here those declarations are inlined, and only mod.ts's exports (the
 * names `deno doc` lists for the entry) stay exported, so the types claim nothing the entry does
 * not have.
 *
 * @module
 */

const root = new URL("../", import.meta.url);
// deno.json holds the runtime's imports and lock (the development tools are deno.dev.json's): a
// build from a fresh clone fetches only what the bundles contain.
const runConfig = new URL("deno.json", root).pathname;
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

/** Copy the files under `from` into `to` (directories made as needed). */
async function copyTree(from: string, to: string): Promise<void> {
  for await (const e of Deno.readDir(from)) {
    if (e.isDirectory) {
      await Deno.mkdir(`${to}/${e.name}`, { recursive: true });
      await copyTree(`${from}/${e.name}`, `${to}/${e.name}`);
    } else await Deno.copyFile(`${from}/${e.name}`, `${to}/${e.name}`);
  }
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
    // Not --config: the names are all it is asked for; an npm module it cannot resolve (the
    // drivers, loaded by URL scheme at run time) is warned of, never fetched.
    args: ["doc", "--no-config", "--import-map", runConfig, "--json", entry],
    cwd: root,
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (out.code !== 0) {
    throw new Error(
      `deno doc ${entry} failed (exit ${out.code}): ${new TextDecoder().decode(out.stderr)}`,
    );
  }
  const doc = JSON.parse(new TextDecoder().decode(out.stdout));
  const nodes: { name: string }[] = Array.isArray(doc.nodes)
    ? doc.nodes
    : Object.values(doc.nodes as Record<string, { symbols: { name: string }[] }>)
      .flatMap((m) => m.symbols);
  return new Set(nodes.map((n) => n.name));
}

/**
 * The entry points built, by package.json export: every one that runs outside Deno (`./deno-kv`,
 * `./cli`, `./server` and `./serve` use Deno's APIs). `js` is where the split bundle writes it.
 */
const ENTRIES = [
  { name: ".", source: "mod.ts", js: "mod.js", out: "mod" },
  { name: "./store", source: "src/stores/mod.ts", js: "src/stores/mod.js", out: "store" },
  { name: "./client", source: "src/client/mod.ts", js: "src/client/mod.js", out: "client" },
  { name: "./codec", source: "src/codec/mod.ts", js: "src/codec/mod.js", out: "codec" },
  {
    name: "./postgres",
    source: "src/stores/postgres/mod.ts",
    js: "src/stores/postgres/mod.js",
    out: "postgres",
  },
  {
    name: "./mysql",
    source: "src/stores/mysql/mod.ts",
    js: "src/stores/mysql/mod.js",
    out: "mysql",
  },
] as const;

/** One source file's bundled declarations, as the bundler writes them; once per file. */
const fileDeclarations = new Map<string, Promise<string>>();
function declarationsOfFile(file: string, tmp: string): Promise<string> {
  let found = fileDeclarations.get(file);
  if (found === undefined) {
    const name = file.replace(/\//g, "_").replace(/\.ts$/, "");
    found = bundle(file, `${tmp}/${name}.mjs`).then(() =>
      Deno.readTextFile(`${tmp}/${name}.d.mts`)
    );
    fileDeclarations.set(file, found);
  }
  return found;
}

/**
 * The declarations of one entry point, standing alone: `deno bundle --declaration` of it, its
 * dangling type imports inlined, only its own exports (as `deno doc` lists them) exported.
 */
async function declarationsOf(entry: string, tmp: string): Promise<string> {
  const base = entry.replace(/\//g, "_").replace(/\.ts$/, "");
  await bundle(entry, `${tmp}/${base}.mjs`);
  let types = await Deno.readTextFile(`${tmp}/${base}.d.mts`);
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
      const part = await declarationsOfFile(file, tmp);
      // Its types, not its functions (the entry does not export those), and none declared
      // already (a type the entry's bundle has, or another file's copy of the same constant).
      types += `\n// From ${file}\n` +
        withoutDeclared(
          part.replace(/^export declare function /gm, "declare function ")
            .replace(/^import "[^"]+";\n/gm, "")
            .replace(/^export \{\};\n?/gm, ""),
          declaredNames(types),
        );
    }
  }
  // The bundled declarations export every module's exports; the entry exports its own only.
  const publicNames = await exportsOf(entry);
  types = types.replace(
    /^export ((?:declare )?(?:abstract )?(?:function|class|const|let|var|enum|interface|type) (\w+))/gm,
    (line, declaration: string, name: string) => publicNames.has(name) ? line : declaration,
  );
  // `export type * from` / `export { a, b }` lists the bundler kept: names it already declared.
  if (!/^export \{\};$/m.test(types)) types += "\nexport {};\n";
  return types;
}

await Deno.remove(dist, { recursive: true }).catch(() => {});
const tmp = await Deno.makeTempDir({ prefix: "kvid-build-" });
try {
  // One split bundle of every entry point: the code they share (KvIdError, the engine) is one
  // chunk, so `instanceof KvIdError` holds for an error from any entry point.
  const split = `${tmp}/split`;
  const { code } = await new Deno.Command(Deno.execPath(), {
    args: [
      "bundle",
      "--config",
      runConfig,
      "--quiet",
      "--platform=browser",
      "--format=esm",
      "--code-splitting",
      "--outdir",
      split,
      ...ENTRIES.map((e) => e.source),
    ],
    cwd: root,
  }).spawn().status;
  if (code !== 0) throw new Error(`deno bundle of the entry points failed (exit ${code})`);
  await Deno.mkdir(dist, { recursive: true });
  await copyTree(split, dist.pathname);
  const exports: Record<string, { types: string; default: string }> = {};
  const files = ["README.md", "LICENSE"];
  // The entries' declarations side by side (each file's bundle is made once, for all).
  const declarations = await Promise.all(ENTRIES.map((e) => declarationsOf(e.source, tmp)));
  for (const [i, entry] of ENTRIES.entries()) {
    // Each entry's types beside it; Deno reads them from the comment, Node, Bun and TypeScript
    // from package.json.
    const js = `./${entry.out}.mjs`;
    const dts = `./${entry.out}.d.mts`;
    await Deno.writeTextFile(new URL(dts, dist), declarations[i]);
    // Moved to the top level: an entry file is imported by no chunk, its imports re-pointed.
    const depth = entry.js.split("/").length - 1;
    let body = await Deno.readTextFile(new URL(entry.js, dist));
    if (depth > 0) body = body.replaceAll(`"${"../".repeat(depth)}`, `"./`);
    await Deno.writeTextFile(new URL(js, dist), `// @ts-self-types="${dts}"\n` + body);
    await Deno.remove(new URL(entry.js, dist));
    exports[entry.name] = { types: dts, default: js };
    files.push(js.slice(2), dts.slice(2));
  }
  await Deno.remove(new URL("src/", dist), { recursive: true }).catch(() => {});
  // The shared chunks, and those of the modules the entries import on first use (a store's
  // driver glue): every .js file the split bundle wrote.
  for await (const f of Deno.readDir(dist)) if (f.name.endsWith(".js")) files.push(f.name);
  const pkg = {
    name: config.name,
    version: config.version,
    description:
      "Globally unique, trend-increasing 64-bit IDs in segment mode (built from a checkout)",
    license: config.license,
    type: "module",
    exports,
    files,
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
