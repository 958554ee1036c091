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

/** The names a module exports, as `deno doc` lists them. */
async function exportsOf(entry: string): Promise<Set<string>> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["doc", "--json", entry],
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
  const dangling = /^import type \{[^}]*\} from "\.\/([\w/]+)\.ts";\n/gm;
  const inlined = new Set<string>();
  for (const [, name] of types.matchAll(dangling)) inlined.add(name);
  types = types.replace(dangling, "");
  for (const name of inlined) {
    await bundle(`src/${name}.ts`, `${tmp}/${name}.mjs`);
    const part = await Deno.readTextFile(`${tmp}/${name}.d.mts`);
    // Its types, not its functions: mod.mjs does not export those.
    types += `\n// From src/${name}.ts\n` +
      part.replace(/^export declare function /gm, "declare function ")
        .replace(/^export \{\};\n?/gm, "");
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
