/**
 * The store of `--url`, opened for one command: on `redis://` and `rediss://` a node-redis
 * client the CLI owns (the {@linkcode RedisStore} on it, and the hash commands the CLI reads
 * and raises counters with there); on every other scheme `storeFromUrl`'s store (PostgreSQL, MySQL, MariaDB, ...).
 *
 * @module
 */

import type { AnyStore } from "../contract/store.ts";
import { toKvIdError } from "../contract/store_errors.ts";
import { fromNodeRedis } from "../stores/redis/adapters.ts";
import { RedisStore } from "../stores/redis/redis_store.ts";
import { redactStoreUrl, storeFromUrl, storeKind } from "../stores/store_url.ts";
import { CliError, EXIT } from "./exit.ts";
import type { Target } from "./command.ts";
import { redisOps } from "./redis_ops.ts";
import { importDriver } from "../stores/drivers.ts";

/** A store opened from a URL: connect, then close. */
export interface OpenedTarget {
  /** Connect (Redis) and hand out the target; rejects with a {@linkcode CliError} (exit 3). */
  connect(): Promise<Target>;
  /** Close what was opened, connected or not. */
  close(): Promise<void>;
}

/**
 * Open the store `url` names: its driver is loaded here, nothing is connected until
 * {@linkcode OpenedTarget.connect}.
 *
 * @example A PostgreSQL URL: the store, connecting on its first use
 * ```ts
 * import { openTarget } from "./target.ts";
 * import assert from "node:assert/strict";
 *
 * const opened = await openTarget("postgres://kvid:secret@127.0.0.1:5432/ids", 5_000);
 * const target = await opened.connect(); // lazy: nothing sent yet
 * assert.ok(target.scheme === "postgres:" && target.redis === undefined);
 * await opened.close();
 * ```
 *
 * @param url `--url`, already checked ({@linkcode storeKind}).
 * @param timeout Connecting, in ms.
 * @returns The store, to connect.
 * @throws {KvIdError} `"config"` for a URL of an unknown scheme.
 */
export async function openTarget(url: string, timeout: number): Promise<OpenedTarget> {
  const scheme = new URL(url).protocol;
  if (storeKind(url, "--url") !== "redis") {
    const opened = storeFromUrl(url, { timeout, what: "--url" });
    const target: Target = { store: opened.store, redis: undefined, scheme };
    return { connect: () => Promise.resolve(target), close: () => opened.close() };
  }
  // Loaded here so that help and argument errors do not wait for it.
  const { createClient } = await importDriver<typeof import("redis")>("redis", "--url redis://");
  const client = createClient({
    url,
    socket: { connectTimeout: timeout, reconnectStrategy: false },
  });
  client.on("error", () => {}); // connection errors are reported through connect() and commands
  return {
    connect: async () => {
      try {
        await client.connect();
      } catch (err) {
        throw new CliError(
          EXIT.unreachable,
          `cannot use ${redactStoreUrl(url)}: ${errorText(err)}`,
        );
      }
      const adapted = fromNodeRedis(client);
      return {
        store: classified(new RedisStore(adapted)),
        redis: redisOps(client, adapted),
        scheme,
      };
    },
    close: () => {
      try {
        client.destroy();
      } catch {
        // never connected
      }
      return Promise.resolve();
    },
  };
}

/**
 * `store` with every failure a `KvIdError` (the Redis store's clock, `TIME`, rejects with the
 * client's own error): the CLI branches on codes.
 */
function classified(store: RedisStore): AnyStore {
  const mapped = <T>(work: Promise<T>, key: string, field: string) =>
    work.catch((err) => {
      throw toKvIdError(err, key, field);
    });
  return {
    reserve: (key, field, count, options) =>
      mapped(store.reserve(key, field, count, options), key, field),
    durability: (key, options) => mapped(store.durability(key, options), key, options.field),
    deleteDaysBefore: (key, before) =>
      mapped(store.deleteDaysBefore(key, before), key, `<${before}`),
    counters: (key, options) => mapped(store.counters(key, options), key, ""),
    now: () => mapped(store.now(), "", ""),
  };
}

/** An error's message, the first of an `AggregateError` (node-redis' refused connections). */
export function errorText(err: unknown): string {
  if (err instanceof AggregateError && err.errors.length > 0) return errorText(err.errors[0]);
  return err instanceof Error ? err.message || err.name : String(err);
}
