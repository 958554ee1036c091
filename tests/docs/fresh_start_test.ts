/**
 * A fresh clone's first minutes fetch only what they run: the README's service quick start on an
 * empty Deno cache (its shell block as written, `deno task serve`, on a free port) answers with IDs
 * having fetched only the runtime's packages (deno.json's imports, locked in `deno.lock`), none of
 * the development tools of `deno.dev.json`; the demo fetches nothing. And the two configs agree:
 * every runtime import, every driver's range (`src/stores/drivers.ts`) and every locked version is
 * the development config's, which the tests ran.
 *
 * Starts no Redis server (the quick start runs on Deno KV); it fetches from the npm registry.
 *
 * @module
 */

import "../support/deadline.ts"; // a time limit on every test of this file
import assert from "node:assert/strict";
import { DRIVERS } from "../../src/stores/drivers.ts";

const root = new URL("../../", import.meta.url);
const text = (p: string) => Deno.readTextFileSync(new URL(p, root));

interface Lock {
  npm?: Record<string, unknown>;
}

/** The packages a lock holds, `name@version`, without the peer-dependency suffix. */
function lockedPackages(lock: Lock): Map<string, string> {
  const found = new Map<string, string>();
  for (const id of Object.keys(lock.npm ?? {})) {
    const m = /^(@?[^@]+)@([^_]+)/.exec(id)!;
    found.set(m[1], m[2]);
  }
  return found;
}

/** The npm packages under an (empty at first) DENO_DIR, by name. */
function fetched(denoDir: string): string[] {
  const dir = `${denoDir}/npm/registry.npmjs.org`;
  const names: string[] = [];
  try {
    for (const e of Deno.readDirSync(dir)) {
      if (!e.name.startsWith("@")) names.push(e.name);
      else for (const s of Deno.readDirSync(`${dir}/${e.name}`)) names.push(`${e.name}/${s.name}`);
    }
  } catch (err) {
    if (!(err instanceof Deno.errors.NotFound)) throw err;
  }
  return names.sort();
}

function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  try {
    return (listener.addr as Deno.NetAddr).port;
  } finally {
    listener.close();
  }
}

Deno.test("the runtime config is the development config's, without the development tools", () => {
  const run = JSON.parse(text("deno.json")) as {
    imports: Record<string, string>;
    exports: Record<string, string>;
  };
  const dev = JSON.parse(text("deno.dev.json")) as {
    imports: Record<string, string>;
    exports: Record<string, string>;
    lock: string;
  };
  // The package as the tests see it (`@kvid/core/...` resolved to this checkout) is the package.
  assert.deepEqual(dev.exports, run.exports, "deno.dev.json's exports differ from deno.json's");
  for (const [name, target] of Object.entries(run.imports)) {
    assert.deepEqual(target, dev.imports[name], `deno.json's ${name} differs from deno.dev.json's`);
  }
  for (const [name, range] of Object.entries(DRIVERS)) {
    assert.deepEqual(`npm:${name}@${range}`, run.imports[name], `drivers.ts's ${name}`);
  }
  // The tools stay out of what runs: each one named here is a development config's import only.
  for (const tool of ["fast-check", "puppeteer-core", "autocannon", "typescript"]) {
    assert.ok(tool in dev.imports && !(tool in run.imports), `${tool} belongs to deno.dev.json`);
  }
  // The same versions as the tests ran: a runtime lock that drifted would serve untested code.
  const devLock = lockedPackages(JSON.parse(text(dev.lock)));
  for (const [name, version] of lockedPackages(JSON.parse(text("deno.lock")))) {
    if (name.startsWith("@types/")) continue; // type declarations: nothing of them runs
    assert.deepEqual(version, devLock.get(name), `deno.lock's ${name} against ${dev.lock}'s`);
  }
});

Deno.test("the README's service quick start answers on an empty cache, fetching only the runtime's packages", async () => {
  const readme = text("README.md");
  const block = [...readme.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1])
    .find((b) => /deno task serve/.test(b));
  assert(block !== undefined, "README.md has no sh block running the service");
  assert(!/^sleep /m.test(block), "the quick start waits for readiness, not for a fixed time");
  const tmp = await Deno.makeTempDir({ prefix: "kvid-fresh-" });
  const port = String(freePort());
  // On any exit, the script stops the service it started in the background (its whole group).
  const script = `trap 'trap "" TERM; kill -TERM 0; wait' EXIT\n` +
    block.replaceAll("8000", port).replaceAll("./ids.sqlite3", `${tmp}/ids.sqlite3`);
  const denoDir = `${tmp}/deno-dir`;
  // Its own process group (setsid), so the service it leaves running is stopped with it.
  const child = new Deno.Command("setsid", {
    args: ["bash", "-euo", "pipefail", "-c", script],
    cwd: root,
    env: { DENO_DIR: denoDir, NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  try {
    const out = await child.output();
    const stdout = new TextDecoder().decode(out.stdout);
    assert(out.success, `the quick start failed:\n${new TextDecoder().decode(out.stderr)}`);
    assert.deepEqual(stdout.trim().split("\n").slice(-3), ["1", "2", "3"], stdout);
    const run = lockedPackages(JSON.parse(text("deno.lock")));
    const extra = fetched(denoDir).filter((name) => !run.has(name));
    assert.deepEqual(extra, [], "packages fetched beyond deno.lock's");
  } finally {
    try {
      Deno.kill(-child.pid, "SIGTERM");
    } catch { /* the group is gone */ }
    await Deno.remove(tmp, { recursive: true }).catch(() => {});
  }
});

Deno.test("the demo on an empty cache fetches nothing, its first row the first ID", async () => {
  const denoDir = await Deno.makeTempDir({ prefix: "kvid-fresh-demo-" });
  try {
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", "bench/demo.ts"],
      cwd: root,
      env: { DENO_DIR: denoDir, NO_COLOR: "1", KVID_DEMO_SECONDS: "1", KVID_REDIS_URL: "" },
      stdout: "piped",
      stderr: "piped",
    }).output();
    const stdout = new TextDecoder().decode(out.stdout);
    assert.ok(out.success, new TextDecoder().decode(out.stderr));
    const rows = stdout.split("\n").filter((l) => /^\s+\d+\.\ds /.test(l));
    assert.match(rows[0] ?? "", /^\s+\d+\.\ds\s+1\s+-\s+\d+\s+1\s+\d+\s+1$/, stdout);
    assert.deepEqual(fetched(denoDir), [], "packages fetched by the demo");
  } finally {
    await Deno.remove(denoDir, { recursive: true });
  }
});
