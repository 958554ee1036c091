import "../support/deadline.ts"; // a time limit on every test of this file
import assert from "node:assert/strict";
import { startProxy } from "../support/proxy.ts";
import { command, startServer } from "../support/redis_server.ts";

Deno.test("proxy: forwards with a delay, holds while paused, drops connections", async () => {
  await using server = await startServer();
  await using proxy = await startProxy(server, { delayMs: 15 });
  const t = performance.now();
  assert.equal(await command(proxy.url, "PING"), "PONG");
  // A timer may fire up to a millisecond early by performance.now().
  assert.ok(performance.now() - t >= 29, "15 ms each way");

  proxy.delayMs = 0;
  proxy.pause();
  let answered = false;
  const held = command(proxy.url, "PING").then((r) => (answered = true, r));
  await new Promise((r) => setTimeout(r, 50));
  assert.equal(answered, false, "nothing passes while paused");
  proxy.resume();
  assert.equal(await held, "PONG");

  const conn = await Deno.connect({ hostname: proxy.host, port: proxy.port });
  await conn.write(new TextEncoder().encode("*1\r\n$4\r\nPING\r\n"));
  const buf = new Uint8Array(16);
  assert.ok((await conn.read(buf))! > 0);
  proxy.dropConnections();
  assert.equal(await conn.read(buf), null, "the connection is closed");
  conn.close();
  assert.ok(proxy.accepted >= 3);
});
