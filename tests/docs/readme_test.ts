/**
 * Every Deno block of README.md (fenced as `ts`) runs as written, as a script of its own, against
 * a real server this test starts, and ends by itself having made an ID: its first line of output
 * is `1` (each runs on an empty server; the SQL blocks on a PostgreSQL 15 and a MariaDB started
 * here, through `DATABASE_URL` and `MYSQL_URL`, their counters new). `@kvid/core` and `jsr:@kvid/core` resolve to this
 * checkout; `npm:` packages come from the npm registry. The Node and Bun blocks run in
 * `.ci/runtimes` (`readme_runtimes.ts`).
 */

import "../support/deadline.ts"; // a time limit on every test of this file
import assert from "node:assert/strict";
import {
  type Block,
  checkoutImportMap,
  type DocBlock,
  docsFiles,
  ignoredDocBlocks,
  markdownDocBlocks,
  readmeBlocks,
  runBlocks,
  type ScriptRun,
} from "../support/readme_blocks.ts";
import { command, startServer } from "../support/redis_server.ts";
import { startMariaDb, startPostgres } from "../support/sql_servers.ts";

Deno.test("README: every Deno block runs as written and ends by itself", async () => {
  const readme = await Deno.readTextFile(new URL("../../README.md", import.meta.url));
  const blocks = readmeBlocks(readme).filter((b) => b.runtime === "deno");
  assert.ok(blocks.length >= 5, `found ${blocks.length} Deno blocks`);
  await using server = await startServer();
  // The SQL blocks read DATABASE_URL (PostgreSQL) and MYSQL_URL (MariaDB); each script inherits
  // this process's environment.
  await using postgres = await startPostgres();
  await using mariadb = await startMariaDb();
  Deno.env.set("DATABASE_URL", postgres.url);
  Deno.env.set("MYSQL_URL", mariadb.url);
  const runs = await runInCheckout(blocks, server);
  for (const r of runs) {
    const where = `README.md line ${r.block.line}`;
    assert.ok(!r.hung, `${where} did not end by itself within 60 s: ${r.stderr}`);
    assert.equal(r.code, 0, `${where} exited ${r.code}: ${r.stderr}`);
    assert.match(r.stdout, /^1\b/, `${where} printed its first ID: ${r.stdout}`);
  }
});

/**
 * Run `blocks` as scripts of this checkout (an import map naming its entry points, no JSR), each
 * with the Redis of `server` (the blocks' 127.0.0.1:6379 rewritten to it, flushed between them),
 * each bounded at 60 s.
 */
async function runInCheckout(
  blocks: Block[],
  server: { host: string; port: number; url: string },
): Promise<ScriptRun[]> {
  const dir = await Deno.makeTempDir({ prefix: "kvid-blocks-run-" });
  try {
    await Deno.writeTextFile(`${dir}/imports.json`, JSON.stringify(await checkoutImportMap()));
    return await runBlocks(blocks, {
      dir,
      exe: Deno.execPath(),
      args: ["run", "-A", "--quiet", "--unstable-kv", "--import-map=imports.json"],
      ext: ".ts",
      host: server.host,
      port: server.port,
      flush: () => command(server.url, "FLUSHALL"),
      timeoutMs: 60_000,
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/**
 * The module docs' `ts ignore` blocks and the `docs/*.md` Deno blocks not run here, and why; every
 * other one runs. An entry that
 * matches no block fails the test, so the list stays true.
 */
const NOT_RUN: { file: string; has: string; why: string }[] = [
  {
    file: "docs/replicas.md",
    has: "createSentinel",
    why: "needs a Sentinel deployment (redis_sentinel_test.ts)",
  },
  {
    file: "docs/operations.md",
    has: 'addSignalListener("SIGTERM"',
    why: "logs until SIGTERM: tests/docs/docs_sigterm_test.ts runs it and sends it",
  },
  { file: "src/daily/daily.ts", has: "jsr:@db/redis", why: "needs JSR" },
  { file: "src/engine/kvid.ts", has: "jsr:@db/redis", why: "needs JSR" },
  {
    file: "src/client/mod.ts",
    has: "https://ids.example.com",
    why: "needs a running service and its token (http_store_test.ts)",
  },
  {
    file: "src/stores/interleaved/interleaved_store.ts",
    has: "new RedisStore(redis)",
    why: "a fragment: redis is a client",
  },
  {
    file: "src/stores/redis/adapters.ts",
    has: 'from "bun"',
    why: "Bun only: the README's Bun block runs",
  },
  {
    file: "src/stores/deno_kv/deno_kv_store.ts",
    has: "Deno.serve",
    why: "serves until stopped (Deno Deploy)",
  },
  {
    file: "src/stores/postgres/postgres_store.ts",
    has: "const b = new PostgresStore(postgres(",
    why: "a fragment: two stores, never used",
  },
];

Deno.test("module docs and docs/*.md: every server example runs as written and ends by itself, or says why not", async () => {
  const root = new URL("../../", import.meta.url);
  const files = ["mod.ts"];
  // Every source file under src/, whatever folder it lives in.
  const walk = async (dir: string): Promise<void> => {
    for await (const e of Deno.readDir(new URL(dir, root))) {
      if (e.isDirectory) await walk(`${dir}/${e.name}`);
      else if (e.isFile && e.name.endsWith(".ts")) files.push(`${dir}/${e.name}`);
    }
  };
  await walk("src");
  const all: DocBlock[] = [];
  for (const file of files.sort()) {
    all.push(...ignoredDocBlocks(file, await Deno.readTextFile(new URL(file, root))));
  }
  const docs = await docsFiles();
  assert.ok(docs.length >= 5, `found ${docs.length} documents under docs/`);
  for (const file of docs) {
    all.push(...markdownDocBlocks(file, await Deno.readTextFile(new URL(file, root))));
  }
  const skipped = NOT_RUN.map((n) =>
    all.filter((b) => b.file === n.file && b.code.includes(n.has))
  );
  skipped.forEach((found, i) => assert.ok(found.length > 0, `NOT_RUN[${i}] matches no block`));
  const blocks = all.filter((b) => !skipped.flat().includes(b));
  assert.ok(blocks.length >= 5, `found ${blocks.length} blocks to run`);
  await using server = await startServer();
  // The SQL stores' blocks read DATABASE_URL (PostgreSQL) and MYSQL_URL (MariaDB).
  await using postgres = await startPostgres();
  await using mariadb = await startMariaDb();
  Deno.env.set("DATABASE_URL", postgres.url);
  Deno.env.set("MYSQL_URL", mariadb.url);
  const runs = await runInCheckout(blocks, server);
  const failed = runs.filter((r) => r.hung || r.code !== 0).map((r) => {
    const b = r.block as DocBlock;
    return `${b.file} line ${b.line}: ${r.hung ? "did not end by itself" : `exit ${r.code}`}` +
      ` ${r.stderr.slice(0, 400)}`;
  });
  assert.deepEqual(failed, []);
});

Deno.test("README: a checkout used through deno.json links, without JSR", async () => {
  const dir = await Deno.makeTempDir({ prefix: "kvid-links-" });
  try {
    const checkout = new URL("../../", import.meta.url).pathname;
    // The README's recipe: the entry `deno add` writes, and "links" to the checkout.
    const config = { imports: { "@kvid/core": "jsr:@kvid/core@^0.1.0" }, links: [checkout] };
    await Deno.writeTextFile(`${dir}/deno.json`, JSON.stringify(config));
    await Deno.writeTextFile(
      `${dir}/main.ts`,
      `import { KvId } from "@kvid/core";
import { DenoKvStore } from "@kvid/core/deno-kv";
import { KvId as Same } from "jsr:@kvid/core";
await using ids = new KvId("order", { store: new DenoKvStore(":memory:") });
console.log(await ids.next(), Same === KvId);
`,
    );
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", "--quiet", "--unstable-kv", "main.ts"],
      cwd: dir,
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
      signal: AbortSignal.timeout(60_000),
    }).output();
    const text = new TextDecoder();
    assert.equal(out.code, 0, text.decode(out.stderr));
    assert.equal(text.decode(out.stdout), "1 true\n");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
