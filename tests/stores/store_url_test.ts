/**
 * One store URL for the service (`KVID_STORE_URL`) and the CLI (`--url`): the scheme picks the
 * store, an unknown one is refused at startup, and Redis, PostgreSQL and MariaDB URLs serve IDs
 * from real servers (the service as `deno serve`, the CLI as a process).
 */

import "../support/deadline.ts"; // a time limit on every test of this file
import assert from "node:assert/strict";
import { KvIdError } from "../../mod.ts";
import { optionsFromEnv } from "../../src/service/mod.ts";
import { STORE_URLS, storeFromUrl, storeKind } from "../../src/stores/store_url.ts";
import { startServeProcess } from "../support/service.ts";
import { command, startServer } from "../support/redis_server.ts";
import { startMariaDb, startPostgres } from "../support/sql_servers.ts";

const CLI = new URL("../../src/cli/mod.ts", import.meta.url).pathname;
const ROOT = new URL("../..", import.meta.url).pathname;

function isConfig(message: RegExp) {
  return (err: unknown) => {
    assert.ok(err instanceof KvIdError, `a KvIdError, got ${err}`);
    assert.equal(err.code, "config");
    assert.match(err.message, message);
    return true;
  };
}

Deno.test("storeKind: the scheme picks the store; anything else is a config error", async () => {
  for (
    const [url, kind] of [
      ["redis://127.0.0.1:6379", "redis"],
      ["rediss://user:secret@cache.internal:6380/2", "redis"],
      ["postgres://kvid@127.0.0.1:5432/ids", "postgres"],
      ["postgresql://kvid@127.0.0.1/ids", "postgres"],
      ["mysql://kvid:secret@127.0.0.1:3306/ids", "mysql"],
    ]
  ) {
    assert.equal(storeKind(url), kind, url);
  }
  assert.throws(
    () => storeKind("http://db:80", "--url"),
    isConfig(/^--url has an unknown scheme "http:"/),
  );
  assert.throws(
    () => storeKind("nonsense", "KVID_STORE_URL"),
    isConfig(/KVID_STORE_URL is not a URL/),
  );
  // A password is never repeated in a message.
  assert.throws(() => storeKind("ftp://me:hunter2@db", "X"), (err: Error) => {
    assert.ok(!err.message.includes("hunter2") && err.message.includes("me:***@"), err.message);
    return true;
  });
  // A Redis URL too (openStore): lazy, nothing connected until its first use.
  const redis = storeFromUrl("redis://:secret@127.0.0.1:1");
  assert.equal(redis.label, "redis://:***@127.0.0.1:1");
  await redis.close();
});

Deno.test("the registry: each scheme is one store's, named in the module doc and the refusal", async () => {
  const doc = await Deno.readTextFile(new URL("../../src/stores/store_url.ts", import.meta.url));
  const table = doc.slice(0, doc.indexOf("@module"));
  const refusal = (() => {
    try {
      storeKind("ftp://db");
    } catch (err) {
      return (err as Error).message;
    }
  })() ?? "";
  const seen = new Set<string>();
  for (const opener of STORE_URLS) {
    for (const scheme of opener.schemes) {
      assert.ok(!seen.has(scheme), `${scheme} is claimed twice`);
      seen.add(scheme);
      assert.equal(storeKind(`${scheme}//127.0.0.1/x`), opener.kind, scheme);
      assert.ok(table.includes(`\`${scheme}//\``), `the module doc's table names ${scheme}//`);
      assert.ok(refusal.includes(`${scheme}//`), `the refusal names ${scheme}//: ${refusal}`);
    }
  }
});

Deno.test("the registry: an opener says which optional methods its store has beyond the common ones", async () => {
  await using postgres = await startPostgres();
  await using mariadb = await startMariaDb();
  await using redis = await startServer();
  const urls: Record<string, string> = {
    redis: redis.url,
    postgres: postgres.url,
    mysql: mariadb.url,
  };
  for (const opener of STORE_URLS) {
    assert.ok(opener.open !== undefined, `${opener.kind} has no opener`);
    const url = urls[opener.kind];
    assert.ok(url !== undefined, `no server in this test for ${opener.kind}`);
    const opened = await opener.open!(url, { timeout: 5_000 });
    try {
      await opened.ping();
      const also = "also" in opener ? opener.also : undefined;
      assert.equal(typeof opened.store.giveBack === "function", also?.giveBack === true);
      assert.equal(opened.store.reservesStep === true, also?.reservesStep === true);
      assert.equal(typeof opened.store.counters === "function", also?.counters === true);
      const lazy = storeFromUrl(url);
      assert.equal(typeof lazy.store.giveBack === "function", also?.giveBack === true);
      assert.equal(typeof lazy.store.counters === "function", also?.counters === true);
      if (lazy.store.counters !== undefined) {
        // Forwarded: what the lazy store reads is the opened store's.
        const key = `url-counters-${crypto.randomUUID()}`;
        const exact = { floor: 0n, raiseTo: 0n, guard: true, exact: true };
        await lazy.store.reserve(key, "order", 7, exact);
        const read = await lazy.store.counters(key);
        assert.deepEqual(read, new Map([["order", { value: 7n }]]));
        assert.deepEqual(await opened.store.counters!(key), read);
      }
      await lazy.close();
    } finally {
      await opened.close();
    }
  }
});

Deno.test("optionsFromEnv: KVID_STORE_URL beside KVID_REDIS_URL", async () => {
  const env = (vars: Record<string, string>) => (name: string) => vars[name];
  const redis = optionsFromEnv(env({ KVID_STORE_URL: "redis://127.0.0.1:1", KVID_AUTH: "none" }));
  assert.ok(redis.options.redis !== undefined && redis.options.store === undefined);
  assert.match(redis.options.storeLabel ?? "", /^redis:\/\/127\.0\.0\.1:1/);
  await redis.close();
  const legacy = optionsFromEnv(env({ KVID_REDIS_URL: "rediss://:pw@127.0.0.1:1" }));
  assert.ok(legacy.options.redis !== undefined && !legacy.options.storeLabel?.includes("pw"));
  await legacy.close();
  // A SQL URL: the store, lazy (nothing loaded or connected here).
  const sql = optionsFromEnv(env({ KVID_STORE_URL: "postgresql://kvid:pw@127.0.0.1:1/ids" }));
  assert.ok(sql.options.store !== undefined && sql.options.redis === undefined);
  assert.equal(sql.options.storeLabel, "postgresql://kvid:***@127.0.0.1:1/ids");
  await sql.close();
  const same = "redis://127.0.0.1:2";
  await optionsFromEnv(env({ KVID_STORE_URL: same, KVID_REDIS_URL: same })).close();
  for (
    const [vars, message] of [
      [{ KVID_STORE_URL: "memcached://127.0.0.1" }, /KVID_STORE_URL has an unknown scheme/],
      [{ KVID_STORE_URL: same, KVID_REDIS_URL: "redis://127.0.0.1:3" }, /both set/],
      [{ KVID_REDIS_URL: "postgres://kvid@127.0.0.1/ids" }, /KVID_REDIS_URL takes a redis/],
    ] as const
  ) {
    assert.throws(() => optionsFromEnv(env(vars)), isConfig(message));
  }
});

Deno.test("deno serve with KVID_STORE_URL: Redis, PostgreSQL, MariaDB; an unknown scheme refuses to start", async () => {
  await using redis = await startServer();
  await using postgres = await startPostgres();
  await using mariadb = await startMariaDb();
  for (const url of [redis.url, postgres.url, mariadb.url]) {
    await using p = await startServeProcess({
      KVID_AUTH: "none",
      KVID_TOKENS: "",
      KVID_REDIS_URL: "",
      KVID_STORE_URL: url,
    });
    const res = await fetch(`${p.url}/v1/ids/by-url?count=3`, { method: "POST" });
    assert.equal(await res.text(), "1\n2\n3\n", url);
    const ready = await fetch(`${p.url}/readyz`);
    assert.equal(ready.status, 200, `${url}: ${await ready.text()}`);
    p.child.kill("SIGTERM");
    assert.equal((await p.status).code, 0, p.stderr.join("\n"));
    assert.ok(!p.stderr.join("\n").includes(postgres.password || "\0"), "no password logged");
  }
  // From those servers: the Redis counter holds them (and whatever the service reserved ahead).
  assert.ok(Number(await command(redis.url, "HGET", "kvid", "by-url")) >= 3);
  await assert.rejects(
    startServeProcess({ KVID_AUTH: "none", KVID_TOKENS: "", KVID_STORE_URL: "ftp://127.0.0.1/" }),
    /unknown scheme "ftp:"/,
  );
});

Deno.test("CLI: KVID_STORE_URL and --url pick the store", async () => {
  await using server = await startServer();
  await using postgres = await startPostgres();
  await using mariadb = await startMariaDb();
  const kvid = async (args: string[], env: Record<string, string>) => {
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
  };
  const next = await kvid(["next", "cli-url", "-n", "2", "--create"], {
    KVID_STORE_URL: server.url,
  });
  assert.equal(next.code, 0, next.stderr);
  assert.equal(next.stdout, "1\n2\n");
  // --url wins over the environment.
  const got = await kvid(["get", "cli-url", "--url", server.url], {
    KVID_STORE_URL: "redis://127.0.0.1:1",
  });
  assert.equal(got.stdout, "2\n", got.stderr);
  for (const url of [postgres.url, mariadb.url]) {
    for (const expected of ["1\n2\n3\n", "4\n5\n6\n"]) {
      const sql = await kvid(["next", "cli-url", "-n", "3", "--create"], { KVID_STORE_URL: url });
      assert.equal(sql.code, 0, sql.stderr);
      assert.equal(sql.stdout, expected, url);
    }
    // Without --create the counter must exist: read through the store's counters().
    const typo = await kvid(["next", "cli-urll", "--url", url], {});
    assert.equal(typo.code, 1, typo.stderr);
    assert.match(typo.stderr, /no counter "cli-urll" in hash "kvid".*--create/);
    const again = await kvid(["next", "cli-url", "--url", url], {});
    assert.equal(again.stdout, "7\n", again.stderr);
    const list = await kvid(["list", "--url", url], {});
    assert.equal(list.code, 0, list.stderr);
    assert.match(list.stdout, /^cli-url\t7$/m);
  }
  const bad = await kvid(["get", "x", "--url", "ftp://127.0.0.1/"], {});
  assert.equal(bad.code, 2, bad.stderr);
  assert.match(bad.stderr, /--url has an unknown scheme "ftp:"/);
});
