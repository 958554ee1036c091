/**
 * The shape of a Redis client as a generator's `redis` option takes it: structural, so
 * `jsr:@db/redis`'s client is passed as is and the engine names no Redis module. The Redis
 * store (`src/stores/redis/`) is what turns it into a `Store`.
 *
 * @module
 */

/**
 * The structural Redis client @kvid/core needs. Method shapes are those of `jsr:@db/redis`, so
 * its client is passed as is; {@linkcode fromNodeRedis} and {@linkcode fromIoredis} make the npm
 * clients fit. Replies may be numbers, strings or bigints; errors are thrown.
 *
 * @example A hand-written client for tests or another driver
 * ```ts
 * import type { RedisClient } from "@kvid/core";
 * import assert from "node:assert/strict";
 *
 * let counter = 0;
 * const client: RedisClient = {
 *   hincrby: (_key, _field, n) => Promise.resolve(counter += n),
 *   eval: () => Promise.reject(new Error("no scripting")),
 *   evalsha: () => Promise.reject(new Error("no scripting")),
 * };
 * assert.ok(await client.hincrby("kvid", "x", 5) === 5);
 * ```
 */
export interface RedisClient {
  /** `HINCRBY key field increment`: resolves to the new value. */
  hincrby(key: string, field: string, increment: number): Promise<unknown>;
  /** `EVAL script numkeys ...keys ...args`. */
  eval(script: string, keys: string[], args: string[]): Promise<unknown>;
  /** `EVALSHA sha1 numkeys ...keys ...args`; rejects with a `NOSCRIPT` error if not loaded. */
  evalsha(sha1: string, keys: string[], args: string[]): Promise<unknown>;
  /**
   * Any command; optional. Used by tools, and by the generator for `WAIT` when `replicas` is
   * set and the client has no {@linkcode RedisClient.waitReplicas}.
   */
  sendCommand?(command: string, args?: string[]): Promise<unknown>;
  /**
   * Close the connection; optional. {@linkcode shutdown} calls it on clients a factory made.
   * `jsr:@db/redis` clients and the adapters' clients have it.
   */
  close?(): unknown;
  /**
   * `WAIT replicas timeoutMs` on the connection that just served a command on `key`, resolving
   * to the number of replicas that acknowledged it; optional. The adapters define it so a
   * cluster client routes it to the node owning `key`. Without it `sendCommand("WAIT", ...)`
   * is used, which is right for a client with one connection.
   */
  waitReplicas?(key: string, replicas: number, timeoutMs: number): Promise<unknown>;
  /**
   * `CLIENT INFO` on the connection that serves a command on `key`; optional. Asked before a
   * reservation that is confirmed (`replicas`, `waitAof`) and again right behind its `WAIT`: a
   * confirmation answered on another connection (a client that reconnected and re-sent it)
   * confirmed nothing. The adapters define it so a cluster client routes it to the node owning
   * `key`. Without it `sendCommand("CLIENT", ["INFO"])` is used.
   */
  clientInfo?(key: string): Promise<unknown>;
  /**
   * `WAITAOF numlocal numreplicas timeoutMs` on the connection that just served a command on
   * `key`, resolving to the server's reply (`[fsynced locally, replicas that fsynced]`);
   * optional. The adapters define it so a cluster client routes it to the node owning `key`.
   * Without it `sendCommand("WAITAOF", ...)` is used; a client with neither sends none (the
   * `waitAof` option is then skipped).
   */
  waitAof?(
    key: string,
    numlocal: number,
    numreplicas: number,
    timeoutMs: number,
  ): Promise<unknown>;
}

/**
 * A Redis client, or a function making one (sync or async). A function is called on first use,
 * so a generator declared at module scope connects only when the first ID is asked for; a given
 * function is called once and its client shared by every generator it was passed to.
 *
 * @example One factory, shared
 * ```ts
 * import { KvId, type RedisClient, type RedisSource } from "@kvid/core";
 * import assert from "node:assert/strict";
 *
 * // `() => connect({ hostname: "127.0.0.1", port: 6379 })` with jsr:@db/redis in an app.
 * const redis: RedisSource = (): Promise<RedisClient> =>
 *   Promise.reject(new Error("not in this example"));
 * const ORDER_ID = new KvId("order", { redis }); // no I/O yet
 * const USER_ID = new KvId("user", { redis }); // will share the client of ORDER_ID
 * assert.ok(ORDER_ID.stats().segments === 0 && USER_ID.stats().segments === 0);
 * ```
 */
export type RedisSource = RedisClient | (() => RedisClient | Promise<RedisClient>);
