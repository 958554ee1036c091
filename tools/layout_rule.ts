/**
 * The dependency rule of `src/`, checked from the imports themselves (`deno task check` runs
 * this file; `tests/tools/layout_rule_test.ts` holds it in the suite): the contract (types, errors, pure
 * checks) depends on nothing; the runtime (process state: the shared deadline timer, the
 * shutdown registry, the store source) on the contract alone; the
 * engine and `DailyId` see only the contract and the runtime (a store plugs in through them
 * without the engine knowing its name); and no store reaches up into the engine, `DailyId`, the
 * service or the CLI. And the layout of `tests/` ({@linkcode testLayoutViolations}): test files
 * in area folders, helpers in `tests/support/`, no test file imported.
 *
 *     deno run --allow-read tools/layout_rule.ts    # exits 1 and names each import that breaks it
 *
 * @module
 */

/** Where a folder of `src/` may import from (prefixes of paths under the repository root). */
export const LAYOUT_RULES: ReadonlyArray<{ from: string; only: readonly string[] }> = [
  { from: "src/contract/", only: ["src/contract/"] },
  { from: "src/runtime/", only: ["src/contract/", "src/runtime/"] },
  { from: "src/engine/", only: ["src/contract/", "src/runtime/", "src/engine/"] },
  {
    from: "src/daily/",
    only: ["src/contract/", "src/runtime/", "src/engine/", "src/daily/", "src/codec/"],
  },
  { from: "src/stores/", only: ["src/contract/", "src/runtime/", "src/stores/"] },
];

/** One import that breaks {@linkcode LAYOUT_RULES}. */
export interface LayoutViolation {
  /** The importing file, from the repository root. */
  file: string;
  /** The imported file, from the repository root. */
  imports: string;
}

const SPECIFIER =
  /(?:^|\n)\s*(?:import|export)\b[^;]*?\bfrom\s*["'](\.{1,2}\/[^"']+)["']|(?:^|\n)\s*import\s*["'](\.{1,2}\/[^"']+)["']|\bimport\(\s*["'](\.{1,2}\/[^"']+)["']\s*\)/g;

/** The relative imports of `source` (static, type-only, side-effect and literal dynamic ones). */
export function relativeImports(source: string): string[] {
  const found: string[] = [];
  for (const m of source.matchAll(SPECIFIER)) found.push(m[1] ?? m[2] ?? m[3]);
  return found;
}

function resolve(file: string, specifier: string): string {
  const parts = file.split("/").slice(0, -1);
  for (const p of specifier.split("/")) {
    if (p === "..") parts.pop();
    else if (p !== ".") parts.push(p);
  }
  return parts.join("/");
}

/** Every import under `root` (a repository checkout) that breaks the rule. */
export async function layoutViolations(root: URL): Promise<LayoutViolation[]> {
  const violations: LayoutViolation[] = [];
  const walk = async (dir: string): Promise<void> => {
    for await (const e of Deno.readDir(new URL(dir, root))) {
      const path = `${dir}/${e.name}`;
      if (e.isDirectory) await walk(path);
      else if (e.isFile && e.name.endsWith(".ts")) {
        const rule = LAYOUT_RULES.find((r) => path.startsWith(r.from));
        if (rule === undefined) continue;
        const text = await Deno.readTextFile(new URL(path, root));
        for (const spec of relativeImports(text)) {
          const target = resolve(path, spec);
          if (!rule.only.some((p) => target.startsWith(p))) {
            violations.push({ file: path, imports: target });
          }
        }
      }
    }
  };
  await walk("src");
  return violations;
}

/** Files of `tests/` that stay outside the area folders: the mutation run and the Node consumers. */
const TESTS_TOOLING = /^tests\/(mutate\w*\.ts|mutations\.ts|node\/)/;

/**
 * Where the files of `tests/` are, and what they import: a `*_test.ts` sits in an area folder
 * (never at the top of `tests/`, never in `tests/support/`), every other module of `tests/` is a
 * helper in `tests/support/`, no two test files share a name, and no file imports a test file
 * (test files import helpers, never the reverse). Each violation is one line saying what is wrong.
 */
export async function testLayoutViolations(root: URL): Promise<string[]> {
  const files: string[] = [];
  const walk = async (dir: string): Promise<void> => {
    for await (const e of Deno.readDir(new URL(dir, root))) {
      const path = `${dir}/${e.name}`;
      if (e.isDirectory) await walk(path);
      else if (e.isFile && /\.(ts|mts)$/.test(e.name)) files.push(path);
    }
  };
  try {
    await walk("tests");
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return [];
    throw err;
  }
  files.sort();
  const violations: string[] = [];
  const named = new Map<string, string>();
  for (const path of files) {
    if (TESTS_TOOLING.test(path)) continue;
    const name = path.slice(path.lastIndexOf("/") + 1);
    const folder = path.slice(0, path.lastIndexOf("/"));
    if (name.endsWith("_test.ts")) {
      if (folder === "tests") violations.push(`${path}: a test file goes in an area folder`);
      if (folder === "tests/support") {
        violations.push(`${path}: tests/support/ holds helpers, not test files`);
      }
      const other = named.get(name);
      if (other !== undefined) violations.push(`${path}: ${other} has the same name`);
      named.set(name, path);
    } else if (folder !== "tests/support") {
      violations.push(`${path}: a module that is not a test goes in tests/support/`);
    }
    const text = await Deno.readTextFile(new URL(path, root));
    for (const spec of relativeImports(text)) {
      const target = resolve(path, spec);
      if (target.endsWith("_test.ts")) violations.push(`${path} imports the test file ${target}`);
    }
  }
  return violations;
}

if (import.meta.main) {
  const root = new URL("../", import.meta.url);
  const violations = await layoutViolations(root);
  for (const v of violations) {
    console.error(`${v.file} imports ${v.imports}: the layout rule forbids it`);
  }
  const tests = await testLayoutViolations(root);
  for (const v of tests) console.error(`${v}: the layout of tests/ forbids it`);
  if (violations.length > 0 || tests.length > 0) Deno.exit(1);
  console.log("layout rule: every import of src/ follows it; tests/ is laid out by area");
}
