/**
 * Fault suite: setup mistakes on Redis (a renamed or disabled HINCRBY, an ACL user without the
 * commands kvid needs) are not outages: they fail at once as `"config"`, the server's words in
 * the message, however long the caller's timeout.
 */

import "../support/deadline.ts"; // a time limit on every test of this file
import assert from "node:assert/strict";
import { KvId } from "../../mod.ts";
import { openClient } from "../support/redis_clients.ts";
import { command } from "../support/redis_server.ts";
import { rejectsWith, spawnRedis, waitUntil } from "../support/faults.ts";

/** Ask for an ID with a long timeout; it must fail as config well before it. */
async function failsAtOnce(id: KvId<number>, message: RegExp): Promise<void> {
  const started = performance.now();
  await rejectsWith(id.next(), "config", message);
  assert.ok(performance.now() - started < 30_000, "waited for the timeout");
  await rejectsWith(id.next(), "config", message); // and again to the next caller
}

Deno.test({
  name: "setup: a disabled HINCRBY fails at once as config, with and without guard",
  timeout: 60_000,
  fn: async () => {
    await using server = await spawnRedis(["--rename-command", "HINCRBY", ""]);
    await waitUntil(() => command(server.url, "PING").catch(() => false), "PING");
    await using open = await openClient("node-redis", server.url);
    for (const guard of [true, false]) {
      await using id = new KvId(`renamed-${guard}`, {
        redis: open.redis,
        guard,
        timeout: 60_000,
      });
      await failsAtOnce(id, /does not know a command .*HINCRBY/i);
    }
  },
});

Deno.test({
  name: "setup: an ACL user without the commands kvid needs fails at once as config (NOPERM)",
  timeout: 60_000,
  fn: async () => {
    await using server = await spawnRedis();
    await waitUntil(() => command(server.url, "PING").catch(() => false), "PING");
    await command(server.url, "ACL", "SETUSER", "ids", "on", ">pw", "~*", "+@all", "-hincrby");
    // A client's first reservation is an EVAL (EVALSHA after): without both, none can be made.
    await command(
      server.url,
      "ACL",
      "SETUSER",
      "noscript",
      "on",
      ">pw",
      "~*",
      "+@all",
      "-eval",
      "-evalsha",
    );
    const url = (user: string) => server.url.replace("//", `//${user}:pw@`);
    for (
      const [user, guard] of [["ids", false], ["ids", true], ["noscript", true]] as const
    ) {
      await using open = await openClient("ioredis", url(user));
      await using id = new KvId(`acl-${user}-${guard}`, {
        redis: open.redis,
        guard,
        timeout: 60_000,
      });
      await failsAtOnce(id, /may not run/);
    }
  },
});
