/**
 * The admin CLI on the SQL stores, run as a subprocess against real PostgreSQL and MariaDB
 * servers the test starts: every command runs there through the Store contract (`next`, `get`,
 * `list`, `floor`, `daily`, `cleanup`, `durability`: `reserve`, `counters`, `deleteDaysBefore`,
 * `now`), and a server that is down or silent exits 3. (Deno KV has no URL scheme: nothing of
 * the CLI reaches it.)
 */

import "../support/deadline.ts"; // a time limit on every test of this file
import { pool } from "../support/pool.ts";
import assert from "node:assert/strict";
import pg from "pg";
import mysql from "mysql2/promise";
import { addDays, ZonedDays } from "../../src/daily/calendar.ts";
import { type SqlServer, startMariaDb, startPostgres } from "../support/sql_servers.ts";

const CLI = new URL("../../src/cli/mod.ts", import.meta.url).pathname;
const ROOT = new URL("../..", import.meta.url).pathname;

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** Run the CLI on `url` (as `--url`); `KVID_REDIS_URL` and `KVID_STORE_URL` are cleared. */
async function kvid(url: string, ...args: string[]): Promise<Run> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--quiet", CLI, ...args, "--url", url],
    cwd: ROOT,
    env: { KVID_REDIS_URL: "", KVID_STORE_URL: "" },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder();
  return { code: out.code, stdout: text.decode(out.stdout), stderr: text.decode(out.stderr) };
}

function expect(run: Run, code: number, output?: string | RegExp): Run {
  assert.equal(run.code, code, `exit code; stdout: ${run.stdout}\nstderr: ${run.stderr}`);
  if (typeof output === "string") assert.equal(run.stdout, output);
  else if (output) assert.match(code === 0 ? run.stdout : run.stderr, output);
  if (code !== 0) assert.equal(run.stdout, "", "a failed command prints no result");
  return run;
}

/** One SQL statement on the server, as its superuser. */
async function sql(server: SqlServer, statement: string): Promise<void> {
  if (server.kind === "postgres") {
    const client = new pg.Client({ connectionString: server.url });
    await client.connect();
    try {
      await client.query(statement);
    } finally {
      await client.end();
    }
  } else {
    const conn = await mysql.createConnection({ uri: server.url });
    try {
      await conn.query(statement);
    } finally {
      await conn.end();
    }
  }
}

/** The commands on one SQL server, every one through the Store contract. */
async function onServer(server: SqlServer): Promise<void> {
  const url = server.url;
  const today = new ZonedDays("UTC").dayAt(Date.now());
  const day = (n: number) => addDays(today, -n).text;
  const daily = ["--key", "kvid:daily:view"];

  // next --create: one reservation, exact, one ID a line; JSON too.
  expect(await kvid(url, "next", "order", "-n", "3", "--create"), 0, "1\n2\n3\n");
  expect(
    await kvid(url, "next", "order", "--create", "--json"),
    0,
    '{"key":"kvid","name":"order","first":"4","last":"4","count":1}\n',
  );
  // A daily serial's days, made the way a DailyId makes them (one counter a day), and a
  // field that is not a day.
  for (const field of [day(40), day(10), day(3), day(0), "x"]) {
    expect(await kvid(url, "next", field, "--create", ...daily), 0, "1\n");
  }

  // The commands that read counters, through the store's counters(): in order, each on what
  // the ones before left. [args, exit code, stdout or stderr pattern].
  const huge = "9223372036854775806"; // 2^63-2: exact, never through a double
  const steps: [string[], number, string | RegExp][] = [
    [["get", "order"], 0, "4\n"],
    [["get", "order", "--json"], 0, '{"key":"kvid","name":"order","value":"4"}\n'],
    [["get", "missing"], 1, /no counter "missing" in hash "kvid"/],
    // next without --create: the counter must exist (a typo is refused, and creates nothing).
    [["next", "ordr"], 1, /no counter "ordr" in hash "kvid".*--create/],
    [["next", "order"], 0, "5\n"],
    // floor: raises to exactly the value, leaves an equal one, never lowers.
    [["floor", "order", "100"], 0, "order: 5 -> 100\n"],
    [["get", "order"], 0, "100\n"],
    [["floor", "order", "100"], 0, "order: already 100\n"],
    [
      ["floor", "order", "99"],
      1,
      /refusing to lower counter "order" of hash "kvid" from 100 to 99/,
    ],
    [["floor", "ordr", "5"], 1, /no counter "ordr" in hash "kvid".*--create/],
    [
      ["floor", "big", huge, "--create", "--json"],
      0,
      `{"key":"kvid","name":"big","old":null,"new":"${huge}","raised":true}\n`,
    ],
    [["get", "big"], 0, `${huge}\n`],
    [["next", "order"], 0, "101\n"],
    // list: the counters of the hash, sorted, exact; nothing of another key.
    [["list"], 0, `big\t${huge}\norder\t101\n`],
    [["list", "--json"], 0, `{"key":"kvid","counters":{"big":"${huge}","order":"101"}}\n`],
    [["list", "--key", "nothing-here"], 0, ""],
    // daily: the day counters, oldest first, today marked; the other field is no day.
    [["daily", "view"], 0, `${day(40)}\t1\n${day(10)}\t1\n${day(3)}\t1\n${day(0)}\t1\t(today)\n`],
    [
      ["daily", "view", "--json"],
      0,
      JSON.stringify({
        key: "kvid:daily:view",
        today: day(0),
        days: { [day(40)]: "1", [day(10)]: "1", [day(3)]: "1", [day(0)]: "1" },
      }) + "\n",
    ],
    [["daily", "nope"], 1, /no daily serial "nope": hash "kvid:daily:nope" does not exist/],
    [["cleanup", "nope", "--keep-days", "3"], 1, /no daily serial "nope"/],
    // cleanup --dry-run: what would go, deleting nothing (the cleanup below deletes them).
    [["cleanup", "view", "--keep-days", "5", "--dry-run"], 0, `${day(40)}\n${day(10)}\n`],
  ];
  for (const [args, code, want] of steps) expect(await kvid(url, ...args), code, want);

  // cleanup: deletes the days more than 5 days old, leaves the rest and the other field.
  const cleaned = expect(await kvid(url, "cleanup", "view", "--keep-days", "5"), 0);
  assert.match(cleaned.stdout, /^deleted 2 day fields before \d{8} of kvid:daily:view\n$/);
  const again = expect(await kvid(url, "cleanup", "view", "--keep-days", "5", "--json"), 0);
  const json = JSON.parse(again.stdout);
  assert.equal(json.key, "kvid:daily:view");
  assert.equal(json.deleted, 0);
  assert.ok(json.before > day(10) && json.before <= day(3), json.before);
  // A deleted day starts again at 1; a kept one and the other field go on.
  const after = await pool(
    [day(40), day(10), day(3), day(0), "x"].map((field) => () =>
      kvid(url, "next", field, "--create", ...daily)
    ),
    3,
  );
  assert.deepEqual(after.map((r) => r.stdout), ["1\n", "1\n", "2\n", "2\n", "2\n"]);

  // durability: the server's settings, durable by default.
  const durable = expect(await kvid(url, "durability"), 0);
  assert.match(durable.stdout, /^durable: yes$/m);
  assert.match(
    durable.stdout,
    server.kind === "postgres" ? /^fsync\ton$/m : /^innodb_flush_log_at_trx_commit\t1$/m,
  );
  assert.equal(JSON.parse(expect(await kvid(url, "durability", "--json"), 0).stdout).durable, true);
  // ... and exit 1 naming the fix once a crash would lose reservations.
  if (server.kind === "postgres") {
    await sql(server, "ALTER SYSTEM SET synchronous_commit = off");
    await sql(server, "SELECT pg_reload_conf()");
  } else {
    await sql(server, "SET GLOBAL innodb_flush_log_at_trx_commit = 2");
  }
  const lossy = await kvid(url, "durability");
  assert.equal(lossy.code, 1, lossy.stderr);
  assert.match(lossy.stdout, /^durable: NO$/m);
  assert.match(
    lossy.stdout,
    server.kind === "postgres"
      ? /^problem: synchronous_commit is off: .*set synchronous_commit = on/m
      : /^problem: innodb_flush_log_at_trx_commit is 2: .*set innodb_flush_log_at_trx_commit = 1/m,
  );
  assert.match(lossy.stderr, /the server can lose reservations/);

  // A refused login is exit 3 (the server could not be used), without the password.
  const login = new URL(url);
  login.password = "not-the-password";
  const refusedLogin = expect(await kvid(login.href, "next", "order", "--create"), 3);
  assert.match(refusedLogin.stderr, /refused the login/);
  assert.ok(!refusedLogin.stderr.includes("not-the-password"), refusedLogin.stderr);
}

Deno.test("cli on PostgreSQL and MariaDB: every command, through the Store contract", async () => {
  await using postgres = await startPostgres();
  await using mariadb = await startMariaDb();
  await Promise.all([onServer(postgres), onServer(mariadb)]);
});

Deno.test("cli on a SQL URL: a server that is down or silent exits 3, without the password", async () => {
  const silent = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const held: Deno.Conn[] = [];
  const accepting = (async () => {
    try {
      for await (const conn of silent) held.push(conn);
    } catch {
      // closed
    }
  })();
  const closed = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const closedPort = (closed.addr as Deno.NetAddr).port;
  closed.close();
  try {
    const silentPort = (silent.addr as Deno.NetAddr).port;
    const runs = await Promise.all([
      kvid(`postgres://kvid:hunter2@127.0.0.1:${closedPort}/ids`, "next", "a", "--create"),
      kvid(`mysql://root:hunter2@127.0.0.1:${closedPort}/ids`, "durability"),
      kvid(
        `postgres://kvid:hunter2@127.0.0.1:${silentPort}/ids`,
        "cleanup",
        "a",
        "--keep-days",
        "3",
        "--timeout",
        "300",
      ),
    ]);
    for (const r of runs) {
      expect(r, 3);
      assert.ok(!r.stderr.includes("hunter2"), r.stderr);
    }
    // The driver's connect timeout is the CLI's --timeout too: whichever fires first names it.
    assert.match(runs[2].stderr, /did not answer within 300 ms|due to connection timeout/);
  } finally {
    silent.close();
    await accepting;
    for (const c of held) c.close();
  }
});
