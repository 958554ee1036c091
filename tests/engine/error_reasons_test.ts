/**
 * Errors say what happened and why on their first line, and a permanent cause fails at once as
 * `"config"` rather than at the deadline: a host that does not resolve, a URL of a scheme the
 * client refuses, refused credentials (a Redis with a password this test starts). A server that
 * is down is retried until the deadline, whose error carries the reason (`ECONNREFUSED`).
 */

import "../support/deadline.ts"; // a time limit on every test of this file
import assert from "node:assert/strict";
import { createClient } from "redis";
import { fromNodeRedis, KvId, KvIdError } from "../../mod.ts";
import { startServer } from "../support/redis_server.ts";

/** The first ID of a generator on node-redis at `url`, rejected: its error. */
async function failure(url: string, timeout: number): Promise<KvIdError> {
  const clients: { destroy(): void }[] = [];
  const ids = new KvId("order", {
    redis: async () => {
      const c = createClient({ url, socket: { reconnectStrategy: false, connectTimeout: 1_000 } });
      c.on("error", () => {});
      clients.push(c);
      return fromNodeRedis(await c.connect());
    },
    timeout,
  });
  try {
    await ids.next();
  } catch (err) {
    assert.ok(err instanceof KvIdError, String(err));
    return err;
  } finally {
    await ids.close();
    for (const c of clients) {
      try {
        c.destroy();
      } catch { /* never connected */ }
    }
  }
  assert.fail(`${url}: an ID was served`);
}

function closedPort(): number {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (l.addr as Deno.NetAddr).port;
  l.close();
  return port;
}

Deno.test("errors: permanent causes fail at once as config, with their reason", async () => {
  // A deadline well within the test's time limit: a permanent cause retried as if transient
  // ends as code "timeout" and fails the assertion on its code, not the file's time limit.
  const timeout = 10_000;
  const host = await failure("redis://no-such-host.invalid:6379", timeout);
  assert.equal(host.code, "config");
  assert.match(host.message.split("\n")[0], /ENOTFOUND|not known|No address/);
  const scheme = await failure("http://127.0.0.1:6379", timeout);
  assert.equal(scheme.code, "config");
  assert.match(scheme.message.split("\n")[0], /Invalid protocol/);
  await using server = await startServer({ password: "right-password-0123" });
  const url = new URL(server.url);
  url.password = "wrong-password-0123";
  const auth = await failure(url.toString(), timeout);
  assert.equal(auth.code, "config");
  assert.equal(auth.reason, "auth");
  assert.match(auth.message.split("\n")[0], /WRONGPASS|invalid|auth/i);
  assert.doesNotMatch(auth.message, /wrong-password/);
});

Deno.test("errors: a server that is down is retried until the deadline, which says why", async () => {
  const down = await failure(`redis://127.0.0.1:${closedPort()}`, 1_500);
  assert.equal(down.code, "timeout");
  assert.match(down.message.split("\n")[0], /^no ID could be reserved in 1500 ms: .*ECONNREFUSED/);
});

Deno.test("errors: an error about a hash, not a counter, names no empty field", () => {
  const err = new KvIdError("connection", "the store could not be reached", { key: "kvid" });
  assert.equal(err.message, 'the store could not be reached (hash "kvid")');
});
