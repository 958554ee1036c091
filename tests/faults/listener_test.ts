/**
 * Fault suite: a node-redis or ioredis client used exactly as the README shows (no `error`
 * listener of the user's) recovers by itself after the server restarts; the client's error is
 * surfaced in `stats().lastError`.
 */

import "../support/deadline.ts"; // a time limit on every test of this file
import assert from "node:assert/strict";
import { createClient } from "redis";
import { Redis } from "ioredis";
import { fromIoredis, fromNodeRedis, KvId, KvIdError } from "../../mod.ts";
import { startServer } from "../support/redis_server.ts";
import { waitUntil } from "../support/faults.ts";

for (const kind of ["node-redis", "ioredis"] as const) {
  Deno.test({
    name: `${kind} without an error listener of the user's: recovers after a restart`,
    timeout: 60_000,
    fn: async () => {
      await using server = await startServer({ persistence: "aof" });
      const node = kind === "node-redis"
        ? await createClient({ url: server.url }).connect()
        : undefined;
      const io = kind === "ioredis" ? new Redis(server.url) : undefined;
      try {
        const redis = node ? fromNodeRedis(node) : fromIoredis(io!);
        await using id = new KvId("listener", { redis, minStep: 1, maxStep: 1, timeout: 1_000 });
        assert.equal(await id.next(), 1);
        await server.kill();
        const err = await id.next().catch((e) => e);
        assert.ok(err instanceof KvIdError, String(err));
        await server.restart();
        const back = await waitUntil(
          () => id.next().catch((e) => (e instanceof KvIdError ? 0 : Promise.reject(e))),
          "the client to reconnect",
          30_000,
        );
        assert.ok(back > 1);
      } finally {
        node?.destroy();
        io?.disconnect(false);
      }
    },
  });
}
