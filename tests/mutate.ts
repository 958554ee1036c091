/**
 * The mutation run: put one deliberate bug at a time into a copy of the repository and run the
 * test files that should catch it. A mutation the tests still pass is a behaviour with no
 * evidence. Not part of `deno task test` (it takes long): `deno task mutate [filter...]`, where a
 * filter keeps the mutations whose id contains it.
 *
 * Each mutation is an exact text replacement in one file ({@linkcode MUTATIONS} in
 * `tests/mutations.ts`): text that no longer occurs exactly once is reported `stale` (its target
 * moved: update the mutation) and counted as survived, never as caught. The working tree is never
 * touched: the repository's files are copied to a temp dir once, and each mutated file is put
 * back there after its run. Test files run one at a time, in the order listed, until one fails;
 * each run gets `KVID_TEST_LIMIT_MS` (see `tests/support/deadline.ts`) and is killed, with its process
 * group, after {@linkcode RUN_LIMIT_MS} (reported as `caught (killed: hang)`). Before the
 * mutations, the listed files run once unmutated (skip with `--no-baseline`): a file failing
 * there would make every mutation look caught.
 *
 * Ends with the plain line `N mutations, N caught, N survived`.
 *
 * @module
 */

import { type Mutation, MUTATIONS } from "./mutations.ts";

/** A test file run is killed after this long. */
export const RUN_LIMIT_MS = 400_000;
/** Each test within it fails after this long (tests/support/deadline.ts). */
const TEST_LIMIT_MS = 180_000;

const root = new URL("..", import.meta.url).pathname;

async function run(cmd: string, args: string[], cwd: string, env: Record<string, string> = {}) {
  const out = await new Deno.Command(cmd, { args, cwd, env, stdout: "piped", stderr: "piped" })
    .output();
  return { code: out.code, stdout: new TextDecoder().decode(out.stdout) };
}

/** Copy the repository's tracked and untracked (not ignored) files to a fresh temp dir. */
async function copyRepo(): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: "kvid-mutate-" });
  const list = await run("git", ["ls-files", "-z", "-co", "--exclude-standard"], root);
  for (const file of list.stdout.split("\0").filter((f) => f !== "")) {
    const from = `${root}${file}`;
    const to = `${dir}/${file}`;
    try {
      await Deno.mkdir(to.slice(0, to.lastIndexOf("/")), { recursive: true });
      await Deno.copyFile(from, to);
    } catch (err) {
      if (!(err instanceof Deno.errors.NotFound)) throw err; // deleted but not yet committed
    }
  }
  return dir;
}

type Outcome = { failed: false } | { failed: true; file: string; how: string };

/** Run `files` one at a time in `dir` until one fails. */
async function runTests(dir: string, files: readonly string[]): Promise<Outcome> {
  for (const file of files) {
    // setsid: the run and the servers its tests start form one process group, killed together.
    const child = new Deno.Command("setsid", {
      args: [
        "deno",
        "test",
        "--config=deno.dev.json",
        "-A",
        "--sanitize-ops",
        "--sanitize-resources",
        file,
      ],
      cwd: dir,
      env: { KVID_TEST_LIMIT_MS: String(TEST_LIMIT_MS), NO_COLOR: "1" },
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    let killed = false;
    const timer = setTimeout(() => {
      killed = true;
      try {
        Deno.kill(-child.pid, "SIGKILL");
      } catch {
        child.kill("SIGKILL");
      }
    }, RUN_LIMIT_MS);
    const out = await child.output();
    clearTimeout(timer);
    if (killed) return { failed: true, file, how: `killed after ${RUN_LIMIT_MS} ms: hang` };
    if (out.code !== 0) {
      const text = new TextDecoder().decode(out.stdout);
      const limit = /did not finish within/.test(text) ? " (test time limit)" : "";
      const first = /^(.*) \.\.\. FAILED/m.exec(text)?.[1]?.trim();
      return { failed: true, file, how: `failed${limit}${first ? `: ${first}` : ""}` };
    }
  }
  return { failed: false };
}

function apply(text: string, m: Mutation): string | undefined {
  const at = text.indexOf(m.from);
  if (at < 0 || text.indexOf(m.from, at + 1) >= 0) return undefined;
  return text.slice(0, at) + m.to + text.slice(at + m.from.length);
}

if (import.meta.main) {
  const args = Deno.args.filter((a) => !a.startsWith("--"));
  const baseline = !Deno.args.includes("--no-baseline");
  const chosen = MUTATIONS.filter((m) => args.length === 0 || args.some((a) => m.id.includes(a)));
  const ids = new Set<string>();
  for (const m of MUTATIONS) {
    if (ids.has(m.id)) throw new Error(`mutation id ${m.id} twice`);
    ids.add(m.id);
  }
  const dir = await copyRepo();
  console.log(`copy: ${dir}; ${chosen.length} mutations`);
  try {
    if (baseline) {
      const files = [...new Set(chosen.flatMap((m) => m.tests))];
      for (const file of files) {
        const r = await runTests(dir, [file]);
        if (r.failed) {
          console.log(`baseline: ${file} ${r.how} without any mutation: fix it first`);
          Deno.exit(2);
        }
        console.log(`baseline: ${file} passes`);
      }
    }
    let caught = 0;
    let survived = 0;
    for (const m of chosen) {
      const path = `${dir}/${m.file}`;
      const original = await Deno.readTextFile(path);
      const mutated = apply(original, m);
      if (mutated === undefined) {
        survived++;
        console.log(`stale     ${m.id}: the text to replace is not in ${m.file} exactly once`);
        continue;
      }
      await Deno.writeTextFile(path, mutated);
      const started = performance.now();
      let r: Outcome;
      try {
        r = await runTests(dir, m.tests);
      } finally {
        await Deno.writeTextFile(path, original);
      }
      const s = ((performance.now() - started) / 1000).toFixed(0);
      if (r.failed) {
        caught++;
        console.log(`caught    ${m.id} (${s} s): ${r.file} ${r.how}`);
      } else {
        survived++;
        console.log(`SURVIVED  ${m.id} (${s} s): ${m.what}; passed ${m.tests.join(", ")}`);
      }
    }
    console.log(`${chosen.length} mutations, ${caught} caught, ${survived} survived`);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}
