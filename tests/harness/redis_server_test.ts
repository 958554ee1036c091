import "../support/deadline.ts"; // a time limit on every test of this file
import assert from "node:assert/strict";
import { command, startServer } from "../support/redis_server.ts";

const local = !Deno.env.get("KVID_TEST_URL");

Deno.test("startServer: starts, answers PING, reports a version", async () => {
  await using server = await startServer();
  assert.equal(await command(server.url, "PING"), "PONG");
  assert.ok(server.version.length > 0, "version is empty");
  assert.equal(server.host, "127.0.0.1");
  assert.ok(server.port > 0);
  assert.ok(server.url.endsWith(`:${server.port}`));
  if (local) assert.ok(["redis", "valkey", "kvrocks"].includes(server.kind), server.kind);
  // The server KVID_TEST_SERVER names is the one started (CI runs with each).
  const named = Deno.env.get("KVID_TEST_SERVER");
  if (local && named) {
    const info = String(await command(server.url, "INFO", "server"));
    assert.equal(/valkey_version:/.test(info), named === "valkey-server", info.slice(0, 200));
  }
});

Deno.test("command: parses integer, bulk, nil, array and error replies", async () => {
  await using server = await startServer();
  const key = `kvid:test:${crypto.randomUUID()}`;
  assert.equal(await command(server.url, "HINCRBY", key, "order", "10"), 10);
  assert.equal(await command(server.url, "HINCRBY", key, "order", "5"), 15);
  assert.equal(await command(server.url, "HGET", key, "order"), "15");
  assert.equal(await command(server.url, "HGET", key, "missing"), null);
  assert.deepEqual(await command(server.url, "HGETALL", key), [
    "order",
    "15",
  ]);
  // multi-byte payload larger than one read chunk
  const big = "é".repeat(40_000);
  assert.equal(await command(server.url, "SET", `${key}:big`, big), "OK");
  assert.equal(await command(server.url, "GET", `${key}:big`), big);
  await assert.rejects(
    command(server.url, "NOSUCHCOMMAND"),
    (err: Error) => /unknown command/i.test(err.message),
  );
  await command(server.url, "DEL", key, `${key}:big`);
});

Deno.test({
  name: "restart: aof persistence keeps data written before",
  ignore: !local,
  fn: async () => {
    await using server = await startServer({ persistence: "aof" });
    const port = server.port;
    assert.equal(await command(server.url, "HSET", "kvid", "order", "42"), 1);
    await server.restart();
    assert.equal(server.port, port);
    assert.equal(await command(server.url, "HGET", "kvid", "order"), "42");
    // stop() without removing data, then restart() also keeps it
    await server.stop({ keepData: true });
    await assert.rejects(command(server.url, "PING"));
    await server.restart();
    assert.equal(await command(server.url, "HGET", "kvid", "order"), "42");
  },
});

Deno.test({
  name: "kill then restart: server comes back (aof data survives a crash)",
  ignore: !local,
  fn: async () => {
    await using server = await startServer({ persistence: "aof" });
    assert.equal(await command(server.url, "HINCRBY", "kvid", "o", "7"), 7);
    await server.kill();
    await assert.rejects(command(server.url, "PING"));
    await server.restart();
    assert.equal(await command(server.url, "PING"), "PONG");
    assert.equal(await command(server.url, "HGET", "kvid", "o"), "7");
  },
});

Deno.test({
  name: "stop: removes the data dir and is idempotent",
  ignore: !local,
  fn: async () => {
    const server = await startServer();
    const dir = server.dataDir!;
    assert.ok((await Deno.stat(dir)).isDirectory);
    await server.stop();
    await assert.rejects(Deno.stat(dir), Deno.errors.NotFound);
    await server.stop();
  },
});

Deno.test({
  name: "password: NOAUTH without it, accepted with the url password",
  ignore: !local,
  fn: async () => {
    await using server = await startServer({ password: "s3cr:t/p@ss" });
    assert.match(server.url, /^redis:\/\/:[^@]+@127\.0\.0\.1:\d+$/);
    const bare = `redis://${server.host}:${server.port}`;
    await assert.rejects(
      command(bare, "PING"),
      (err: Error) => /NOAUTH|auth/i.test(err.message),
    );
    assert.equal(await command(server.url, "PING"), "PONG");
    assert.ok(server.version.length > 0);
  },
});

Deno.test({
  name: "external server via urlEnv: stop is a no-op, restart throws",
  ignore: !local,
  fn: async () => {
    await using real = await startServer();
    const envName = `KVID_TEST_URL_${crypto.randomUUID().replaceAll("-", "")}`;
    Deno.env.set(envName, real.url);
    try {
      const server = await startServer({ urlEnv: envName });
      assert.equal(server.kind, "external");
      assert.equal(server.url, real.url);
      assert.equal(server.port, real.port);
      assert.equal(server.version, real.version);
      await assert.rejects(server.restart(), /external/);
      await server.stop();
      assert.equal(await command(real.url, "PING"), "PONG");
    } finally {
      Deno.env.delete(envName);
    }
  },
});
