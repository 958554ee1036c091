/**
 * Eight processes on one counter with small steps, on a real PostgreSQL 15 and a real MariaDB
 * 10.11: no duplicate IDs, and none after a `kill -9` of the database mid-run and its restart,
 * after which every process serves again. PostgreSQL's processes mix `pg` and postgres.js.
 */

import "../../support/deadline.ts"; // a time limit on every test of this file
import assert from "node:assert/strict";
import { type SqlServer, startMariaDb, startPostgres } from "../../support/sql_servers.ts";

const WORKER = new URL("../../support/sql_worker.ts", import.meta.url).pathname;
const CONFIG = new URL("../../../deno.json", import.meta.url).pathname;
const PROCESSES = 8;
const COUNT = 400;

interface Worker {
  progress(n: number): Promise<void>;
  done: Promise<{ status: Deno.CommandStatus; stderr: string; last: string }>;
  kill(): void;
}

function spawnWorker(driver: string, url: string, out: string): Worker {
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      "--config",
      CONFIG,
      WORKER,
      `--driver=${driver}`,
      `--url=${url}`,
      "--name=order",
      `--count=${COUNT}`,
      `--out=${out}`,
    ],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let written = 0;
  let last = "";
  const waiting: { n: number; resolve: () => void; reject: (e: Error) => void }[] = [];
  const stdout = (async () => {
    let rest = "";
    for await (const text of child.stdout.pipeThrough(new TextDecoderStream())) {
      const lines = (rest + text).split("\n");
      rest = lines.pop()!;
      for (const line of lines) {
        last = line;
        const m = /^written (\d+)/.exec(line);
        if (m) written = Number(m[1]);
      }
      for (let i = waiting.length - 1; i >= 0; i--) {
        if (written >= waiting[i].n) waiting.splice(i, 1)[0].resolve();
      }
    }
  })();
  const stderr = new Response(child.stderr).text();
  const done = (async () => {
    const [status, , err] = await Promise.all([child.status, stdout, stderr]);
    for (const w of waiting.splice(0)) {
      w.reject(new Error(`worker exited (${status.code}) before ${w.n} IDs: ${err}`));
    }
    return { status, stderr: err, last };
  })();
  return {
    progress: (n) =>
      written >= n ? Promise.resolve() : new Promise((resolve, reject) => {
        waiting.push({ n, resolve, reject });
      }),
    done,
    kill() {
      try {
        child.kill("SIGKILL");
      } catch { /* gone */ }
    },
  };
}

async function run(server: SqlServer, drivers: string[], url: string) {
  const dir = await Deno.makeTempDir({ prefix: "kvid-sql-procs-" });
  const workers: Worker[] = [];
  try {
    for (let i = 0; i < PROCESSES; i++) {
      workers.push(spawnWorker(drivers[i % drivers.length], url, `${dir}/ids-${i}`));
    }
    // Mid-run: every process has served a quarter; the database dies and comes back.
    await Promise.all(workers.map((w) => w.progress(COUNT / 4)));
    await server.kill();
    await server.start();
    const results = await Promise.all(workers.map((w) => w.done));
    let failures = 0;
    for (const [i, r] of results.entries()) {
      assert.equal(r.status.code, 0, `worker ${i}: ${r.stderr}`);
      const done = /^done (\d+) failures=(\d+)$/.exec(r.last);
      assert.ok(done, `worker ${i} ended with ${r.last}`);
      assert.equal(Number(done[1]), COUNT, `worker ${i} served again to the end`);
      failures += Number(done[2]);
    }
    assert.ok(failures > 0, "the processes saw the database go down");
    const seen = new Set<number>();
    let duplicates = 0;
    for (let i = 0; i < PROCESSES; i++) {
      const ids = (await Deno.readTextFile(`${dir}/ids-${i}`)).trim().split("\n").map(Number);
      assert.equal(ids.length, COUNT);
      for (let j = 0; j < ids.length; j++) {
        if (j > 0) assert.ok(ids[j] > ids[j - 1], `worker ${i}: not increasing at ${j}`);
        if (seen.has(ids[j])) duplicates++;
        seen.add(ids[j]);
      }
    }
    assert.equal(duplicates, 0, "duplicate IDs across the processes");
  } finally {
    for (const w of workers) w.kill();
    await Promise.allSettled(workers.map((w) => w.done));
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("8 processes on PostgreSQL, kill -9 of the database mid-run: 0 duplicates, all serve again", async () => {
  await using server = await startPostgres();
  await run(server, ["pg", "postgres.js"], server.url);
});

Deno.test("8 processes on MariaDB, kill -9 of the database mid-run: 0 duplicates, all serve again", async () => {
  await using server = await startMariaDb();
  await run(server, ["mysql2"], server.url);
});
