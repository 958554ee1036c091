/**
 * The code blocks of README.md, by the runtime their fence names, and the scripts made from them.
 *
 * | fence info       | what it is                             | checked by                                            |
 * | ---------------- | -------------------------------------- | ----------------------------------------------------- |
 * | `ts`             | a Deno script                          | type-checked (readme_check.ts), run (readme_test.ts)  |
 * | `js node`        | a Node script (an ES module)           | run on Node through the built package (.ci/runtimes)  |
 * | `js bun`         | a Bun script                           | run on Bun the same way                               |
 * | `ts ignore`      | needs a JSR package CI cannot reach    | nothing (`jsr:@db/redis`)                             |
 *
 * In `docs/*.md` both `ts` and `ts ignore` blocks are Deno scripts, as the module docs' `ts ignore`
 * blocks are ({@linkcode markdownDocBlocks}): run by `readme_test.ts` unless it lists the block with
 * the reason it cannot run here; `ts` ones are also type-checked (readme_check.ts).
 *
 * A script is the block as written with the Redis address `127.0.0.1:6379` changed to the
 * server the check started; `jsr:@kvid/core` and `@kvid/core` (and sub-exports) resolve to this
 * checkout (an import map for Deno, the package `deno task build` writes for Node and Bun).
 *
 * @module
 */

/** Which runtime runs a block. */
export type Runtime = "deno" | "node" | "bun";

/** One block of README.md. */
export interface Block {
  runtime: Runtime;
  /** The README line of its first line of code (1-based). */
  line: number;
  code: string;
}

const FENCES: Record<string, Runtime> = {
  "```ts": "deno",
  "```js node": "node",
  "```js bun": "bun",
};

/** The runnable blocks of `markdown`, in order. */
export function readmeBlocks(markdown: string): Block[] {
  const blocks: Block[] = [];
  const lines = markdown.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const runtime = FENCES[lines[i]];
    if (runtime === undefined) continue;
    const line = i + 2;
    const body: string[] = [];
    for (i++; i < lines.length && lines[i] !== "```"; i++) body.push(lines[i]);
    blocks.push({ runtime, line, code: body.join("\n") + "\n" });
  }
  return blocks;
}

/** A `ts ignore` block of a module's JSDoc (`deno test --doc` runs the others). */
export interface DocBlock extends Block {
  /** The module, from the package root. */
  file: string;
}

/**
 * The `ts ignore` blocks of the JSDoc of `text` (the module `file`): the examples that need a
 * server, which `deno test --doc` cannot give them.
 */
export function ignoredDocBlocks(file: string, text: string): DocBlock[] {
  const blocks: DocBlock[] = [];
  const lines = text.split("\n");
  for (let i = 0; i < lines.length; i++) {
    if (!/^\s*\* ```ts ignore\s*$/.test(lines[i])) continue;
    const line = i + 2;
    const body: string[] = [];
    for (i++; i < lines.length && !/^\s*\* ?```\s*$/.test(lines[i]); i++) {
      body.push(lines[i].replace(/^\s*\* ?/, ""));
    }
    blocks.push({ runtime: "deno", file, line, code: body.join("\n") + "\n" });
  }
  return blocks;
}

/**
 * The Deno blocks of a published Markdown document (`docs/*.md`, the module `file`), fenced `ts` or
 * `ts ignore`: scripts like the module docs' `ts ignore` blocks, which need a server.
 */
export function markdownDocBlocks(file: string, markdown: string): DocBlock[] {
  const blocks: DocBlock[] = [];
  const lines = markdown.split("\n");
  for (let i = 0; i < lines.length; i++) {
    if (!/^```ts( ignore)?\s*$/.test(lines[i])) continue;
    const line = i + 2;
    const body: string[] = [];
    for (i++; i < lines.length && lines[i] !== "```"; i++) body.push(lines[i]);
    blocks.push({ runtime: "deno", file, line, code: body.join("\n") + "\n" });
  }
  return blocks;
}

/** The published Markdown documents under `docs/`, as paths from the package root, sorted. */
export async function docsFiles(): Promise<string[]> {
  const files: string[] = [];
  for await (const e of Deno.readDir(new URL("../../docs/", import.meta.url))) {
    if (e.isFile && e.name.endsWith(".md")) files.push(`docs/${e.name}`);
  }
  return files.sort();
}

/** The block as a script for the server at `host:port`. */
export function scriptFor(block: Block, host: string, port: number): string {
  return block.code.replaceAll("127.0.0.1:6379", `${host}:${port}`)
    .replaceAll('hostname: "127.0.0.1", port: 6379', `hostname: "${host}", port: ${port}`);
}

/** An import map resolving `@kvid/core` and `jsr:@kvid/core` (and sub-exports) to the checkout. */
export async function checkoutImportMap(): Promise<{ imports: Record<string, string> }> {
  const root = new URL("../../", import.meta.url);
  const config = JSON.parse(await Deno.readTextFile(new URL("deno.json", root))) as {
    exports: Record<string, string>;
    imports: Record<string, string>;
  };
  // The package's own imports (the CLI's "redis", ./codec's "@noble/ciphers/aes.js"), as its
  // deno.json gives them on JSR; subpaths too: an import map file, unlike deno.json, does not
  // extend "name" to "name/...".
  const imports: Record<string, string> = { ...config.imports };
  for (const [name, target] of Object.entries(config.imports)) {
    const npm = /^npm:(@?[^@]+)@(.+)$/.exec(target);
    if (npm) imports[`${name}/`] = `npm:/${npm[1]}@${npm[2]}/`;
  }
  for (const [name, path] of Object.entries(config.exports)) {
    imports[`jsr:@kvid/core${name.slice(1)}`] = new URL(path, root).href;
    imports[`@kvid/core${name.slice(1)}`] = new URL(path, root).href;
  }
  return { imports };
}

/** What running one script gave. */
export interface ScriptRun {
  block: Block;
  code: number;
  stdout: string;
  stderr: string;
  /** It did not end by itself within the time allowed and was killed. */
  hung: boolean;
}

/**
 * Run each block of `runtime` as a script file in `dir` (`args` before the file) against the
 * server at `host:port`, one at a time, each on an empty server (`flush` before it) and killed
 * after `timeoutMs`: a script that does not end by itself is a failure, not a hang.
 */
export async function runBlocks(
  blocks: Block[],
  options: {
    dir: string;
    exe: string;
    args: string[];
    ext: string;
    host: string;
    port: number;
    flush: () => Promise<unknown>;
    timeoutMs: number;
  },
): Promise<ScriptRun[]> {
  const runs: ScriptRun[] = [];
  for (const block of blocks) {
    const from = "file" in block ? String(block.file).replaceAll("/", "_") : "README.md";
    const file = `${options.dir}/${from}-line-${block.line}${options.ext}`;
    await Deno.writeTextFile(file, scriptFor(block, options.host, options.port));
    await options.flush();
    const abort = new AbortController();
    let hung = false;
    const timer = setTimeout(() => {
      hung = true;
      abort.abort();
    }, options.timeoutMs);
    try {
      const out = await new Deno.Command(options.exe, {
        args: [...options.args, file],
        cwd: options.dir,
        stdin: "null",
        stdout: "piped",
        stderr: "piped",
        signal: abort.signal,
      }).output();
      const text = new TextDecoder();
      runs.push({
        block,
        code: out.code,
        stdout: text.decode(out.stdout),
        stderr: text.decode(out.stderr),
        hung,
      });
    } finally {
      clearTimeout(timer);
    }
  }
  return runs;
}
