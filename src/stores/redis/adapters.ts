/**
 * Adapters that make the npm Redis clients fit {@linkcode RedisClient}.
 *
 * @module
 */

import type { RedisClient } from "../../contract/redis_client.ts";

/**
 * The part of a node-redis 5 client (`createClient()` or `createCluster()`) the adapter uses.
 *
 * @example A stand-in for a node-redis client
 * ```ts
 * import { fromNodeRedis, type NodeRedisLike } from "@kvid/core";
 * import assert from "node:assert/strict";
 *
 * let counter = 0; // `await createClient().connect()` from npm:redis in an app
 * const client: NodeRedisLike = {
 *   hIncrBy: (_key, _field, n) => Promise.resolve(counter += n),
 *   eval: () => Promise.reject(new Error("no scripting")),
 *   evalSha: () => Promise.reject(new Error("no scripting")),
 * };
 * const redis = fromNodeRedis(client);
 * assert.ok(await redis.hincrby("kvid", "order", 10) === 10);
 * ```
 */
export interface NodeRedisLike {
  /** `HINCRBY`. */
  hIncrBy(key: string, field: string, increment: number): Promise<unknown>;
  /** `EVAL` with `{ keys, arguments }`. */
  eval(script: string, options: { keys: string[]; arguments: string[] }): Promise<unknown>;
  /** `EVALSHA` with `{ keys, arguments }`. */
  evalSha(sha1: string, options: { keys: string[]; arguments: string[] }): Promise<unknown>;
  /**
   * Any command: `sendCommand(args)` on a client, `sendCommand(firstKey, isReadonly, args)` on a
   * cluster (which routes by `firstKey`).
   */
  sendCommand?: unknown;
  /** node-redis' reply type mapping, used to read integers as exact strings. */
  withTypeMapping?: unknown;
  /** Close gracefully (node-redis 5); used by the adapter's `close()`. */
  close?(): unknown;
}

/**
 * The part of an ioredis client (`new Redis()` or `new Cluster()`) the adapter uses.
 *
 * @example A stand-in for an ioredis client
 * ```ts
 * import { fromIoredis, type IoredisLike } from "@kvid/core";
 * import assert from "node:assert/strict";
 *
 * const sent: string[] = []; // `new Redis()` from npm:ioredis in an app
 * const record = (...argv: unknown[]) => Promise.resolve(sent.push(argv.join(" ")));
 * const client: IoredisLike = { hincrby: record, eval: record, evalsha: record, call: record };
 * await fromIoredis(client).evalsha("f00d", ["kvid"], ["order", "10"]);
 * assert.ok(sent[0] === "f00d 1 kvid order 10"); // sha1, numkeys, keys, then args
 * ```
 */
export interface IoredisLike {
  /** `HINCRBY`. */
  hincrby(key: string, field: string, increment: number): Promise<unknown>;
  /** `EVAL script numkeys ...keys ...args`. */
  eval(script: string, numKeys: number, ...keysAndArgs: string[]): Promise<unknown>;
  /** `EVALSHA sha1 numkeys ...keys ...args`. */
  evalsha(sha1: string, numKeys: number, ...keysAndArgs: string[]): Promise<unknown>;
  /** Any command. */
  call(command: string, ...args: string[]): Promise<unknown>;
  /** `QUIT`: close gracefully; used by the adapter's `close()`. */
  quit?(): Promise<unknown>;
  /** A `Cluster`'s marker: `WAIT` then goes in a pipeline routed by the counter's key. */
  isCluster?: boolean;
  /** Commands sent together (on a `Cluster`, to the node owning their keys). */
  pipeline?(commands: string[][]): { exec(): Promise<unknown> };
}

/**
 * Make a node-redis 5 client (`npm:redis`) fit {@linkcode RedisClient}. The client stays
 * yours: connect it before use (or in a factory) and close it after. The adapter's `close()`
 * closes it gracefully; {@linkcode shutdown} calls it when a factory made the client.
 *
 * @example
 * ```ts ignore
 * import { createClient } from "npm:redis@5";
 * import { fromNodeRedis, KvId } from "@kvid/core";
 *
 * const client = await createClient({ url: "redis://127.0.0.1:6379" }).connect();
 * const ids = new KvId("order", { redis: fromNodeRedis(client) });
 * console.log(await ids.next());
 * await ids.close();
 * await client.close(); // yours: passed as a value
 * ```
 *
 * @param client A connected (or connecting) node-redis client.
 * @returns The client seen through the structural interface.
 */
export function fromNodeRedis(client: NodeRedisLike): RedisClient {
  checkMethods(client, "fromNodeRedis", ["hIncrBy", "eval", "evalSha"]);
  const reported = listenForErrors(client);
  const original = client;
  // node-redis parses integer replies near 2^53 inexactly (it replied 2^53-4 for 2^53-3):
  // read integers as strings instead. 58 is RESP_TYPES.NUMBER (":").
  if (typeof client.withTypeMapping === "function") {
    client = (client.withTypeMapping as (m: Record<number, unknown>) => NodeRedisLike)({
      58: String,
    });
  }
  // Three shapes of sendCommand: a client's (args), a sentinel client's (isReadonly, args), a
  // cluster's (firstKey, isReadonly, args), which routes by firstKey.
  const sentinel = typeof (client as { getSentinelNode?: unknown }).getSentinelNode === "function";
  const send = (routeBy: string | undefined, argv: string[]): Promise<unknown> => {
    const send = client.sendCommand;
    if (typeof send !== "function") {
      return Promise.reject(new TypeError("this node-redis client has no sendCommand"));
    }
    if (sentinel) return send.call(client, false, argv);
    return send.length >= 3 ? send.call(client, routeBy, false, argv) : send.call(client, argv);
  };
  return {
    hincrby: (key, field, increment) => reported(client.hIncrBy(key, field, increment)),
    eval: (script, keys, args) =>
      reported(client.eval(script, { keys, arguments: args.map(String) })),
    evalsha: (sha1, keys, args) =>
      reported(client.evalSha(sha1, { keys, arguments: args.map(String) })),
    // A cluster routes by the first argument.
    sendCommand: (command, args = []) => send(args[0], [command, ...args.map(String)]),
    // On a cluster, to the node owning `key`: the connection that just served it.
    waitReplicas: (key, replicas, timeoutMs) =>
      send(key, ["WAIT", String(replicas), String(timeoutMs)]),
    waitAof: (key, numlocal, numreplicas, timeoutMs) =>
      send(key, ["WAITAOF", String(numlocal), String(numreplicas), String(timeoutMs)]),
    clientInfo: (key) => send(key, ["CLIENT", "INFO"]),
    close: async () => void await original.close?.(),
  };
}

/**
 * Make an ioredis client (`npm:ioredis`) fit {@linkcode RedisClient}. The client stays yours:
 * `quit()` it when done, or create it in a factory (`redis: () => fromIoredis(new Redis())`) and
 * let {@linkcode shutdown} close it (the adapter's `close()` sends `QUIT`).
 *
 * @example
 * ```ts ignore
 * import { Redis } from "npm:ioredis@5";
 * import { fromIoredis, KvId } from "@kvid/core";
 *
 * const client = new Redis("redis://127.0.0.1:6379");
 * const ids = new KvId("order", { redis: fromIoredis(client) });
 * console.log(await ids.next());
 * await ids.close();
 * await client.quit(); // yours: passed as a value
 * ```
 *
 * @param client An ioredis `Redis` or `Cluster` client.
 * @returns The client seen through the structural interface.
 */
export function fromIoredis(client: IoredisLike): RedisClient {
  checkMethods(client, "fromIoredis", ["hincrby", "eval", "evalsha", "call"]);
  const reported = listenForErrors(client);
  return {
    hincrby: (key, field, increment) => reported(client.hincrby(key, field, increment)),
    eval: (script, keys, args) =>
      reported(client.eval(script, keys.length, ...keys, ...args.map(String))),
    evalsha: (sha1, keys, args) =>
      reported(client.evalsha(sha1, keys.length, ...keys, ...args.map(String))),
    sendCommand: (command, args = []) => client.call(command, ...args.map(String)),
    close: async () => void await client.quit?.(),
    waitReplicas: (key, replicas, timeoutMs) =>
      onNodeOf(client, key, ["wait", String(replicas), String(timeoutMs)]),
    waitAof: (key, numlocal, numreplicas, timeoutMs) =>
      onNodeOf(client, key, [
        "waitaof",
        String(numlocal),
        String(numreplicas),
        String(timeoutMs),
      ]),
    clientInfo: (key) => onNodeOf(client, key, ["client", "info"]),
  };
}

/** A keyless command (`WAIT`, `WAITAOF`) on the ioredis connection that serves `key`. */
async function onNodeOf(client: IoredisLike, key: string, command: string[]): Promise<unknown> {
  if (client.isCluster !== true) return await client.call(...command as [string, ...string[]]);
  // A keyless command goes to a random node of a cluster; a pipeline goes to the node of its
  // keys, over the connection that served the reservation.
  if (typeof client.pipeline !== "function") {
    throw new TypeError("fromIoredis(client): this Cluster has no pipeline() method");
  }
  // Through `call`: ioredis 5 has no method for commands newer than its list (`waitaof`).
  const replies = await client.pipeline([["exists", key], ["call", ...command]]).exec() as
    | [Error | null, unknown][]
    | null;
  const [err, reply] = replies?.[1] ?? [new Error(`${command[0]} got no reply`), undefined];
  if (err) throw err;
  return reply;
}

/**
 * The part of Bun's built-in Redis client (`RedisClient` from `"bun"`) the adapter uses.
 *
 * @example A stand-in for Bun's client
 * ```ts
 * import { type BunRedisLike, fromBunRedis } from "@kvid/core";
 * import assert from "node:assert/strict";
 *
 * const sent: string[] = []; // `new RedisClient()` from "bun" in an app
 * const client: BunRedisLike = {
 *   send: (command, args) => Promise.resolve(sent.push([command, ...args].join(" "))),
 * };
 * await fromBunRedis(client).hincrby("kvid", "order", 10);
 * assert.ok(sent[0] === "HINCRBY kvid order 10");
 * ```
 */
export interface BunRedisLike {
  /** Any command as a name and string arguments. */
  send(command: string, args: string[]): Promise<unknown>;
  /** Connect (again): Bun's client stays failed after its own reconnect attempts ran out. */
  connect?(): Promise<unknown>;
  /** Close the connection; used by the adapter's `close()`. */
  close?(): unknown;
}

// Bun's server errors are plain `Error`s (name "RedisError", code "ERR_REDIS_SERVER_ERROR");
// rethrown under a name with "Reply" in it so the store tells a refusal from a lost connection.
class BunRedisReplyError extends Error {
  constructor(err: Error) {
    super(err.message, { cause: err });
    this.name = "BunRedisReplyError";
  }
}

/**
 * Make Bun's built-in Redis client (`RedisClient` from `"bun"`, Bun 1.2.9 or later) fit
 * {@linkcode RedisClient}. The client stays yours: `close()` it when done.
 *
 * @example
 * ```ts ignore
 * import { RedisClient } from "bun";
 * import { fromBunRedis, KvId } from "@kvid/core";
 *
 * const client = new RedisClient("redis://127.0.0.1:6379");
 * const ids = new KvId("order", { redis: fromBunRedis(client) });
 * console.log(await ids.next());
 * ```
 *
 * @param client A Bun `RedisClient`.
 * @returns The client seen through the structural interface.
 */
export function fromBunRedis(client: BunRedisLike): RedisClient {
  checkMethods(client, "fromBunRedis", ["send"]);
  let reconnecting: Promise<unknown> | undefined;
  let closed = false;
  const send = async (command: string, args: string[]): Promise<unknown> => {
    try {
      return await client.send(command, args);
    } catch (err) {
      const code = (err as { code?: unknown } | null)?.code;
      if (err instanceof Error && code === "ERR_REDIS_SERVER_ERROR") {
        throw new BunRedisReplyError(err);
      }
      // Once its reconnect attempts ran out, Bun's client fails every command ("Connection has
      // failed") until connect() is called: call it, one at a time, so a later try can succeed.
      // (Only in that state: a client closed on purpose is left closed.)
      if (
        code === "ERR_REDIS_CONNECTION_CLOSED" && typeof client.connect === "function" &&
        reconnecting === undefined && !closed &&
        /Connection has failed|Max reconnection attempts/.test((err as Error).message)
      ) {
        reconnecting = Promise.resolve().then(() => client.connect!()).catch(() => {}).finally(
          () => reconnecting = undefined,
        );
      }
      throw err;
    }
  };
  return {
    hincrby: (key, field, increment) => send("HINCRBY", [key, field, String(increment)]),
    eval: (script, keys, args) =>
      send("EVAL", [script, String(keys.length), ...keys, ...args.map(String)]),
    evalsha: (sha1, keys, args) =>
      send("EVALSHA", [sha1, String(keys.length), ...keys, ...args.map(String)]),
    sendCommand: (command, args = []) => send(command, args.map(String)),
    clientInfo: () => send("CLIENT", ["INFO"]),
    close: () => {
      closed = true;
      return client.close?.();
    },
  };
}

/**
 * node-redis (and ioredis) emit `"error"` on a lost connection. node-redis with no listener
 * throws from its reconnect path: the client never reconnects (or the process dies), so a
 * service built without `client.on("error", ...)` stays down after the server returns. When the
 * client has no listener yet, the adapter listens, and a command that fails without a server
 * reply carries the client's latest error in its message (seen in `stats().lastError`).
 * Returns a wrapper for the client's command promises.
 */
function listenForErrors(client: unknown): <T>(reply: Promise<T>) => Promise<T> {
  const emitter = client as {
    on?: (event: string, listener: (err: unknown) => void) => unknown;
    listenerCount?: (event: string) => number;
  };
  if (typeof emitter.on !== "function" || typeof emitter.listenerCount !== "function") {
    return (reply) => reply;
  }
  if (emitter.listenerCount("error") > 0) return (reply) => reply;
  let latest: unknown;
  emitter.on("error", (err) => latest = err);
  return (reply) =>
    reply.then((value) => {
      latest = undefined;
      return value;
    }, (err) => {
      const seen = latest;
      if (seen === undefined || seen === err || isServerReply(err)) throw err;
      const text = (e: unknown) => e instanceof Error ? e.message : String(e);
      throw new Error(`${text(err)} (the client reported: ${text(seen)})`, { cause: err });
    });
}

/** A server's error reply (kept as it is: its class tells a refusal from a lost connection). */
function isServerReply(err: unknown): boolean {
  for (let p = err; p && typeof p === "object"; p = Object.getPrototypeOf(p)) {
    const name = (p as { constructor?: { name?: string } }).constructor?.name ?? "";
    if (/Reply|SimpleError|BlobError/.test(name)) return true;
  }
  return false;
}

function checkMethods(client: unknown, fn: string, methods: string[]): void {
  for (const m of methods) {
    if (typeof (client as Record<string, unknown> | null)?.[m] !== "function") {
      throw new TypeError(`${fn}(client): the client has no ${m}() method`);
    }
  }
}
