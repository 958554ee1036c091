/**
 * The admin CLI, run as a subprocess against a real server.
 */

import "../support/deadline.ts"; // a time limit on every test of this file
import { pool } from "../support/pool.ts";
import assert from "node:assert/strict";
import { KvId } from "../../mod.ts";
import { addDays, ZonedDays } from "../../src/daily/calendar.ts";
import { COMMANDS, VERSION } from "../../src/cli/args.ts";
import { openClient } from "../support/redis_clients.ts";
import { command, startServer } from "../support/redis_server.ts";

const CLI = new URL("../../src/cli/mod.ts", import.meta.url).pathname;
const ROOT = new URL("../..", import.meta.url).pathname;

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** Run the CLI; `KVID_REDIS_URL` and `KVID_STORE_URL` are cleared unless given. */
async function kvid(args: string[], env: Record<string, string> = {}): Promise<Run> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--quiet", CLI, ...args],
    cwd: ROOT,
    env: { KVID_REDIS_URL: "", KVID_STORE_URL: "", ...env },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder();
  return { code: out.code, stdout: text.decode(out.stdout), stderr: text.decode(out.stderr) };
}

function expect(run: Run, code: number, stderr?: RegExp): Run {
  assert.equal(run.code, code, `exit code; stdout: ${run.stdout}\nstderr: ${run.stderr}`);
  if (stderr) assert.match(run.stderr, stderr);
  return run;
}

/** A free port with nothing listening on it. */
function closedPort(): number {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (l.addr as Deno.NetAddr).port;
  l.close();
  return port;
}

Deno.test("cli: help and bad arguments, without a server", async () => {
  const port = closedPort();
  const url = `redis://127.0.0.1:${port}`;
  const runs = await Promise.all([
    kvid(["--help"]),
    kvid(["next", "--help"]),
    kvid(["help", "floor"]),
    kvid(["cleanup", "-h"]),
    kvid([]),
    kvid(["bogus"]),
    kvid(["get"]),
    kvid(["get", "a", "b"]),
    kvid(["next", "order", "-n", "0"]),
    kvid(["next", "order", "-n", "1e3"]),
    kvid(["get", "order", "--keep-days", "3"]),
    kvid(["get", "order", "--url", "http://example.com"]),
    kvid(["floor", "order", "99999999999999999999"]),
    kvid(["floor", "order", "12abc"]),
    kvid(["cleanup", "order"]),
    kvid(["cleanup", "order", "--keep-days", "0"]),
    kvid(["cleanup", "order", "--keep-days", "3", "--time-zone", "Mars/Base", "--url", url]),
    kvid(["get", "order", "--timeout", "-1"]),
    kvid(["get", "order", "--json"], { KVID_REDIS_URL: "nonsense" }),
    kvid(["floor", "order", "-5"]),
    kvid(["next", "order", "-n", "-5"]),
    kvid(["get", "order", "--verbose"]),
    kvid(["get", "order", "--url"]),
    kvid(["daily", "order", "--time-zone", "Mars/Base"]),
    kvid(["next", "order", "-n=0"]),
    kvid(["--version"]),
  ]);
  const version = runs.pop()!;
  expect(version, 0);
  assert.equal(version.stdout, `${VERSION}\n`);
  assert.match(VERSION, /^kvid \(@kvid\/core\) \d+\.\d+\.\d+/);
  const [help, nextHelp, floorHelp, cleanupHelp] = runs;
  for (const r of [help, nextHelp, floorHelp, cleanupHelp]) expect(r, 0);
  for (
    const c of ["next", "get", "list", "floor", "cleanup", "--url", "--json", "KVID_REDIS_URL"]
  ) {
    assert.ok(help.stdout.includes(c), `--help mentions ${c}`);
  }
  assert.match(nextHelp.stdout, /Usage: kvid next <name> \[-n N\]/);
  assert.match(floorHelp.stdout, /never lowered/);
  assert.match(cleanupHelp.stdout, /--keep-days/);

  const errors = runs.slice(4);
  const messages = [
    /no command given/,
    /unknown command "bogus"/,
    /get takes 1 argument \(<name>\), got 0/,
    /got 2/,
    /-n must be an integer from 1 to 10000000, got "0"/,
    /-n must be an integer/,
    /get has no option --keep-days/,
    /--url has an unknown scheme "http:"/,
    /from 0 to 2\^63-1/,
    /from 0 to 2\^63-1/,
    /--keep-days N is required/,
    /--keep-days must be an integer from 1/,
    /unknown time zone "Mars\/Base"/,
    /--timeout/,
    /not a URL/,
    /^kvid: floor: negative numbers are not accepted, got "-5"\n/,
    /^kvid: -n: negative numbers are not accepted, got "-5"\n/,
    /^kvid: unknown option --verbose\n/,
    /^kvid: --url needs a value\n/,
    /unknown time zone "Mars\/Base"/,
    /-n must be an integer from 1 to 10000000, got "0"/, // -n=0 read as -n 0, not "=0"
  ];
  errors.forEach((r, i) => {
    expect(r, 2, messages[i]);
    assert.equal(r.stdout, "", "nothing on stdout");
  });
  for (const r of errors) {
    assert.doesNotMatch(r.stderr, /To specify a positional/, "ours, not Node's");
  }
  // The commands --help lists are the table of the CLI's module doc, usage for usage.
  const doc = await Deno.readTextFile(CLI);
  const table = [...doc.matchAll(/^ \* \| `([a-z][^`]*)` +\|/gm)].map((m) => m[1]);
  assert.deepEqual(table, COMMANDS.map(([usage]) => usage), "src/cli/mod.ts module doc table");
  for (const [usage, what] of COMMANDS) {
    assert.ok(help.stdout.includes(`  ${usage}\n      ${what}\n`), `--help lists ${usage}`);
  }
  // --json makes errors JSON too.
  const json = JSON.parse(errors[14].stderr);
  assert.equal(json.error.exit, 2);
});

Deno.test("cli: unreachable, silent and password-protected servers exit with 3", async () => {
  // A server that accepts connections and never answers.
  const silent = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const held: Deno.Conn[] = [];
  const accepting = (async () => {
    try {
      for await (const conn of silent) held.push(conn);
    } catch {
      // closed
    }
  })();
  await using locked = await startServer({ password: "s3cret" });
  try {
    const silentUrl = `redis://127.0.0.1:${(silent.addr as Deno.NetAddr).port}`;
    const noPassword = locked.url.replace(/\/\/[^@]*@/, "//");
    const [refused, timedOut, noAuth, wrongAuth] = await Promise.all([
      kvid(["get", "order", "--url", `redis://127.0.0.1:${closedPort()}`]),
      kvid(["list", "--timeout", "300"], { KVID_REDIS_URL: silentUrl }),
      kvid(["next", "order", "--url", noPassword]),
      kvid(["get", "order", "--url", locked.url.replace("s3cret", "wrong")]),
    ]);
    expect(refused, 3, /cannot use redis:\/\/127\.0\.0\.1:\d+: .*ECONNREFUSED/);
    expect(timedOut, 3, /did not answer within 300 ms/);
    expect(noAuth, 3, /NOAUTH|auth/i);
    expect(wrongAuth, 3, /WRONGPASS|invalid|auth/i);
    assert.ok(!wrongAuth.stderr.includes("wrong@"), "the password is not printed");
  } finally {
    silent.close();
    await accepting;
    for (const c of held) c.close();
  }
});

Deno.test("cli: next, get, list, floor and cleanup against a real server", async () => {
  await using server = await startServer();
  const url = server.url;
  const env = { KVID_REDIS_URL: url };
  const today = new ZonedDays("UTC").dayAt(Date.now());
  const day = (n: number) => addDays(today, -n).text;
  const seed = (...args: string[]) => command(url, ...args);
  await seed("HSET", "kvid", "order", "4", "m2", "120000", "m3", "120000", "m4", "130000");
  await seed("HSET", "kvid", "huge1", "9223372036854775806", "huge2", "9223372036854775806");
  await seed("HSET", "kvid", "text", "abc");
  await seed("HSET", "big", "x", "9007199254740993", "y", "9007199254740993");
  await seed("HSET", "listed", "b", "2", "a", "10", "with space", "3");
  await seed("SET", "str", "x");
  await seed("HSET", "kvid:daily:view", day(0), "42", day(40), "1", day(10), "7", "x", "1");
  await seed("HSET", "kvid:daily:one", day(40), "1", day(0), "5");
  for (const k of ["kvid:daily:dry", "kvid:daily:inv", "kvid:daily:txt"]) {
    await seed("HSET", k, day(40), "1", day(10), "1", day(3), "1", day(0), "1", "x", "1");
  }

  // Independent commands, run a few at a time: [args, exit code, stdout or stderr pattern].
  const cases: [string[], number, string | RegExp][] = [
    // next: one HINCRBY, IDs one per line; exact past 2^53.
    [["next", "a", "-n", "3", "--create"], 0, "1\n2\n3\n"],
    [["next", "a2", "-n=3", "--create"], 0, "1\n2\n3\n"],
    [["next", "a3", "-n3", "--create"], 0, "1\n2\n3\n"],
    [
      ["next", "b", "--json", "--create"],
      0,
      '{"key":"kvid","name":"b","first":"1","last":"1","count":1}\n',
    ],
    // A name that does not exist (a typo) is refused without --create, and not created.
    [["next", "ordr"], 1, /no counter "ordr" in hash "kvid".*--create/],
    [["floor", "ordr", "5"], 1, /no counter "ordr" in hash "kvid".*--create/],
    [["next", "y", "--key", "big", "-n", "2"], 0, "9007199254740994\n9007199254740995\n"],
    // get: exact, text or JSON; --url beats the environment.
    [["get", "order"], 0, "4\n"],
    [["get", "order", "--json", "--url", url], 0, '{"key":"kvid","name":"order","value":"4"}\n'],
    [["get", "x", "--key", "big"], 0, "9007199254740993\n"],
    [["get", "missing"], 1, /no counter "missing" in hash "kvid"/],
    // list: sorted; names with spaces quoted.
    [["list", "--key", "listed"], 0, 'a\t10\nb\t2\n"with space"\t3\n'],
    [
      ["list", "--key", "listed", "--json"],
      0,
      '{"key":"listed","counters":{"a":"10","b":"2","with space":"3"}}\n',
    ],
    [["list", "--key", "nothing-here"], 0, ""],
    // floor: raises, leaves equal, refuses to lower; 19-digit values compared exactly.
    [
      ["floor", "m1", "120000", "--json", "--create"],
      0,
      '{"key":"kvid","name":"m1","old":null,"new":"120000","raised":true}\n',
    ],
    [["floor", "m2", "120000"], 0, "m2: already 120000\n"],
    [["floor", "m3", "0130000"], 0, "m3: 120000 -> 130000\n"],
    [
      ["floor", "m4", "99999"],
      1,
      /refusing to lower counter "m4" of hash "kvid" from 130000 to 99999/,
    ],
    [
      ["floor", "huge1", "9223372036854775807"],
      0,
      "huge1: 9223372036854775806 -> 9223372036854775807\n",
    ],
    [["floor", "huge2", "9223372036854775805"], 1, /refusing/],
    // Wrong types and non-integers.
    [["get", "a", "--key", "str"], 1, /not a hash/],
    [["list", "--key", "str"], 1, /not a hash/],
    [["next", "a", "--key", "str"], 1, /not a hash/],
    [["floor", "a", "5", "--key", "str"], 1, /not a hash/],
    [["cleanup", "a", "--key", "str", "--keep-days", "3"], 1, /not a hash/],
    [["get", "text"], 1, /"abc", not an integer/],
    [["floor", "text", "5"], 1, /"abc", not an integer/],
    [["next", "text"], 1, /not hold an integer/],
    // daily: the day counters, oldest first, today marked.
    [
      ["daily", "view"],
      0,
      `${day(40)}\t1\n${day(10)}\t7\n${day(0)}\t42\t(today)\n`,
    ],
    [
      ["daily", "view", "--json"],
      0,
      JSON.stringify({
        key: "kvid:daily:view",
        today: day(0),
        days: { [day(40)]: "1", [day(10)]: "7", [day(0)]: "42" },
      }) + "\n",
    ],
    // A daily serial that does not exist is an error, like a counter that does not.
    [["daily", "nope"], 1, /no daily serial "nope": hash "kvid:daily:nope" does not exist/],
    [["cleanup", "nope", "--keep-days", "3"], 1, /no daily serial "nope"/],
    // list: the counters of the hash, then the daily serials.
    [["list"], 0, new RegExp(`^order\t4$[^]*^view\t\\(daily, 3 days, last ${day(0)} 42\\)$`, "m")],
    [
      ["list", "--json"],
      0,
      new RegExp(
        `"daily":\\{.*"view":\\{"key":"kvid:daily:view","days":3,"last":\\{"day":"${
          day(0)
        }","value":"42"\\}\\}`,
      ),
    ],
    [
      ["cleanup", "one", "--keep-days", "5"],
      0,
      /^deleted 1 day field before \d{8} of kvid:daily:one\n$/,
    ],
    // cleanup: today is 0 days old; other fields are left alone.
    [["cleanup", "dry", "--keep-days", "5", "--dry-run"], 0, `${day(40)}\n${day(10)}\n`],
    [
      ["cleanup", "inv", "--keep-days", "5", "--json", "--time-zone", "Asia/Tokyo"],
      0,
      /"deleted":2/,
    ],
    [
      ["cleanup", "txt", "--keep-days", "1"],
      0,
      /deleted 3 day fields before \d{8} of kvid:daily:txt/,
    ],
  ];
  const results = await pool(cases.map(([args]) => () => kvid(args, env)), 4);
  cases.forEach(([args, code, want], i) => {
    const r = results[i];
    assert.equal(r.code, code, `kvid ${args.join(" ")}: ${r.stderr}`);
    if (typeof want === "string") assert.equal(r.stdout, want, `kvid ${args.join(" ")}`);
    else assert.match(code === 0 ? r.stdout : r.stderr, want, `kvid ${args.join(" ")}`);
    if (code !== 0) assert.equal(r.stdout, "", `kvid ${args.join(" ")} prints no result`);
  });

  const hget = (key: string, field: string) => command(url, "HGET", key, field);
  assert.equal(await hget("kvid", "m4"), "130000", "not lowered");
  assert.equal(await hget("kvid", "huge2"), "9223372036854775806", "not lowered");
  assert.equal(await hget("kvid", "text"), "abc", "left untouched");
  assert.equal(await hget("kvid", "ordr"), null, "a typo created nothing");
  const keys = async (k: string) => (await command(url, "HKEYS", k) as string[]).sort();
  assert.deepEqual(await keys("kvid:daily:dry"), [day(40), day(10), day(3), day(0), "x"].sort());
  assert.deepEqual(await keys("kvid:daily:inv"), [day(3), day(0), "x"].sort());
  assert.deepEqual(await keys("kvid:daily:txt"), [day(0), "x"].sort());

  // A generator started after a floor continues above it.
  await using client = await openClient("node-redis", url);
  await using id = new KvId("m1", { redis: client.redis });
  assert.equal(await id.next(), 120001);
});

Deno.test("cli: installs as a kvid command from a checkout, as its module doc says", async () => {
  const root = await Deno.makeTempDir({ prefix: "kvid-install-" });
  try {
    const deno = Deno.execPath();
    const install = await new Deno.Command(deno, {
      // The recipe of src/cli/mod.ts: deno install -g -A -n kvid --config deno.json src/cli/mod.ts
      args: ["install", "-g", "-A", "-n", "kvid", "--root", root, "--config", "deno.json", CLI],
      cwd: ROOT,
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.equal(install.code, 0, new TextDecoder().decode(install.stderr));
    const bin = `${root}/bin`;
    const path = [bin, deno.slice(0, deno.lastIndexOf("/")), "/usr/bin", "/bin"].join(":");
    const run = await new Deno.Command(`${bin}/kvid`, {
      args: ["--version"],
      cwd: root,
      env: { PATH: path },
      stdout: "piped",
      stderr: "piped",
    }).output();
    const text = new TextDecoder();
    assert.equal(run.code, 0, text.decode(run.stderr));
    assert.equal(text.decode(run.stdout), `${VERSION}\n`);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("cli on an interleaved counter: refuses what would break it, lists counters only", async () => {
  await using a = await startServer();
  await using b = await startServer();
  await using ca = await openClient("node-redis", a.url);
  await using cb = await openClient("node-redis", b.url);
  const today = new ZonedDays("UTC").dayAt(Date.now());
  const old = addDays(today, -9).text; // an interleaved counter with a date for a name
  for (const name of ["inter", old]) {
    await using id = new KvId(name, { redis: [ca.redis, cb.redis], block: 100, prefetchAt: 0 });
    for (let i = 0; i < 250; i++) await id.next();
  }
  await command(a.url, "HSET", "kvid", "plain", "42");
  const fields = async () => await command(a.url, "HGETALL", "kvid") as string[];
  const before = await fields();
  const env = { KVID_REDIS_URL: a.url };
  const [next, get, floor, list, json, dry, clean] = await pool(
    [
      ["next", "inter", "-n", "2"],
      ["get", "inter"],
      ["floor", "inter", "5000"],
      ["list"],
      ["list", "--json"],
      ["cleanup", "x", "--key", "kvid", "--keep-days", "1", "--dry-run"],
      ["cleanup", "x", "--key", "kvid", "--keep-days", "1"],
    ].map((args) => () => kvid(args, env)),
    4,
  );
  expect(next, 1, /interleaved servers/);
  expect(get, 1, /interleaved servers .*block cycle/);
  expect(floor, 1, /interleaved servers/);
  for (const r of [next, get, floor]) assert.equal(r.stdout, "");
  expect(list, 0);
  const layout = await command(a.url, "HGET", "kvid", "\u0000layout:inter") as string;
  const cycle = await command(a.url, "HGET", "kvid", "inter") as string;
  assert.ok(!list.stdout.includes("\u0000") && !list.stdout.includes("layout:"), list.stdout);
  assert.match(
    list.stdout,
    new RegExp(`^inter\\t\\(interleaved, ${layout}, next cycle ${cycle}\\)$`, "m"),
  );
  assert.match(list.stdout, /^plain\t42$/m);
  const listed = JSON.parse(json.stdout);
  assert.deepEqual(listed.counters, { plain: "42" });
  assert.deepEqual(Object.keys(listed.interleaved).sort(), [old, "inter"].sort());
  assert.deepEqual(listed.interleaved.inter, { layout, cycle });
  // Cleanup never takes an interleaved counter for a day.
  expect(dry, 0);
  assert.equal(dry.stdout, "");
  expect(clean, 0);
  assert.match(clean.stdout, /deleted 0 day fields/);
  assert.deepEqual(await fields(), before, "nothing written");
});
