/**
 * What a Redis, Valkey or Kvrocks server can lose, read from the server itself
 * ({@linkcode probeRedis}); the verdict on it is the contract's (`../../contract/durability.ts`).
 *
 * @module
 */

import { serverReadsEpoch } from "../../contract/durability.ts";
import type { DurabilityOptions, StoreDurability } from "../../contract/store.ts";
import { isNoScripting, LuaScript } from "./lua_script.ts";
import type { RedisClient } from "../../contract/redis_client.ts";
import { errorMessage, isReplyError, toKvIdError } from "../../contract/store_errors.ts";

// One round trip (with the CONFIG GETs sent at the same time), routed by the counter's key on
// a cluster: the server's identity, its persistence and memory settings, and the hash's TTL.
const PROBE_SCRIPT = new LuaScript(`return {redis.call('INFO', 'server'),
  redis.call('INFO', 'persistence'), redis.call('INFO', 'memory'), redis.call('PTTL', KEYS[1])}`);

/** `key:value` lines of an `INFO` reply. */
function parseInfo(text: string): Map<string, string> {
  const map = new Map<string, string>();
  for (const line of text.split(/\r?\n/)) {
    const at = line.indexOf(":");
    if (at > 0 && !line.startsWith("#")) map.set(line.slice(0, at), line.slice(at + 1).trim());
  }
  return map;
}

function asText(value: unknown): string {
  return value instanceof Uint8Array ? new TextDecoder().decode(value) : String(value);
}

/** The value of `name` in a `CONFIG GET name` reply (array or map), or undefined. */
function configValue(reply: unknown, name: string): string | undefined {
  if (Array.isArray(reply)) {
    for (let i = 0; i + 1 < reply.length; i += 2) {
      if (asText(reply[i]).toLowerCase() === name) return asText(reply[i + 1]);
    }
    return undefined;
  }
  if (reply instanceof Map) {
    const v = reply.get(name);
    return v === undefined ? undefined : asText(v);
  }
  if (reply !== null && typeof reply === "object") {
    const v = (reply as Record<string, unknown>)[name];
    return v === undefined ? undefined : asText(v);
  }
  return undefined;
}

/** `CONFIG GET name`, or "unknown" when the server (or the client) will not tell. */
async function config(client: RedisClient, name: string): Promise<string> {
  if (client.sendCommand === undefined) return "unknown";
  try {
    return configValue(await client.sendCommand("CONFIG", ["GET", name]), name) ?? "unknown";
  } catch (err) {
    // A managed server refusing CONFIG (renamed away, NOPERM) says nothing; a lost connection
    // or a transient state fails the probe.
    unknownOrThrow(err, "");
    return "unknown";
  }
}

/**
 * A reply error of the probe: a transient server state (`LOADING`, `BUSY`, `MASTERDOWN`,
 * `CLUSTERDOWN`, ...) is thrown (the reservation is retried); any other leaves the settings it
 * stood for unknown.
 */
function unknownOrThrow(err: unknown, key: string): string {
  if (!isReplyError(err)) throw err; // a lost connection: the probe fails, transient
  const error = toKvIdError(err, key, "");
  if (error.code === "unavailable") throw err;
  return error.message;
}

/** Scripts refused: by the server (no scripting) or by the user's ACL (`NOPERM` for EVAL). */
function scriptsRefused(err: unknown): boolean {
  return isNoScripting(err) || /NOPERM.*'(eval|evalsha)'/i.test(errorMessage(err));
}

/** The `INFO` sections and the hash's TTL, by script or, without scripting, by plain commands. */
async function info(
  client: RedisClient,
  key: string,
): Promise<{ info: Map<string, string>; ttl: number | undefined; error?: string }> {
  const unknown = (error: string) => ({ info: new Map<string, string>(), ttl: undefined, error });
  try {
    const reply = await PROBE_SCRIPT.run(client, [key], []);
    if (!Array.isArray(reply) || reply.length !== 4) return unknown("unexpected probe reply");
    const text = reply.slice(0, 3).map(asText).join("\n");
    return { info: parseInfo(text), ttl: Number(asText(reply[3])) };
  } catch (err) {
    const why = unknownOrThrow(err, key);
    if (!scriptsRefused(err) || client.sendCommand === undefined) return unknown(why);
  }
  const send = client.sendCommand;
  try {
    const [text, ttl] = await Promise.all([send("INFO", []), send("PTTL", [key])]);
    return { info: parseInfo(asText(text)), ttl: Number(asText(ttl)) };
  } catch (err) {
    return unknown(unknownOrThrow(err, key));
  }
}

const DEFAULT_APPENDFSYNC = "everysec";

// The last read per client and hash, shared by every generator on that client: 10,000 new
// names at once send one INFO script and three CONFIG GET, not 10,000 of each, and a generator
// made after an accepted read reserves at once (its first ID one round trip, not two: the read
// costs about a reservation's round trip, three to four times one raw HINCRBY on node-redis,
// bench/deploy_bench.ts). A read is shared only while no generator has found a reason to
// doubt it ({@linkcode markServerReadsStale}: a transient failure, a rollback, a refusal):
// after one, the next read of every client reads the server again.
type ServerRead = ReturnType<typeof readServer>;
type SharedRead = { read: ServerRead; epoch: number; done: boolean };
const reads = new WeakMap<RedisClient, Map<string, SharedRead>>();
function serverReads(client: RedisClient, key: string, reuse: boolean): ServerRead {
  let byKey = reads.get(client);
  if (byKey === undefined) reads.set(client, byKey = new Map());
  const shared = byKey.get(key);
  // A re-read (reuse false) joins only a read still in flight and sent since the last doubt
  // (10,000 names re-reading after one failure: one read); a finished one it reads again.
  if (shared !== undefined && shared.epoch === serverReadsEpoch() && (reuse || !shared.done)) {
    return shared.read;
  }
  const read = readServer(client, key);
  const entry: SharedRead = { read, epoch: serverReadsEpoch(), done: false };
  byKey.set(key, entry);
  read.then(() => entry.done = true, () => {
    // A failed read is never shared: the next one reads the server again.
    if (byKey.get(key) === entry) byKey.delete(key);
  });
  return read;
}

function readServer(client: RedisClient, key: string) {
  return Promise.all([
    info(client, key),
    config(client, "appendfsync"),
    config(client, "save"),
    config(client, "rocksdb.write_options.sync"),
  ]);
}

/**
 * Read the durability of the Redis, Valkey or Kvrocks server behind `client` for hash `key`:
 * `INFO server`, `persistence` and `memory` and the hash's `PTTL` (one script), with
 * `CONFIG GET appendfsync`, `save` and `rocksdb.write_options.sync` sent at the same time
 * (one round trip in all). A setting the server will not tell is `"unknown"` unless
 * `options.stated` states it. A lost connection rejects. With `options.reuse`, the last read
 * of this client and hash answers while no generator has doubted it since
 * ({@linkcode markServerReadsStale}).
 */
export async function probeRedis(
  client: RedisClient,
  key: string,
  options: DurabilityOptions,
): Promise<StoreDurability> {
  const [read, appendfsync, save, sync] = await serverReads(client, key, options.reuse === true);
  const i = read.info;
  const stated = options.stated ?? {};
  const settings: Record<string, string> = {};
  const statedNames: string[] = [];
  const setting = (name: string, value: string | undefined): string => {
    let v = value ?? "unknown";
    if (v === "unknown" && stated[name] !== undefined) {
      v = stated[name];
      statedNames.push(name);
    }
    settings[name] = v;
    return v;
  };
  const problems: string[] = [];
  let lossWithoutCrash = false;
  const kvrocks = i.get("kvrocks_version");
  const valkey = i.get("valkey_version");
  settings.server = kvrocks !== undefined
    ? `kvrocks ${kvrocks}`
    : valkey !== undefined
    ? `valkey ${valkey}`
    : i.get("redis_version") !== undefined
    ? `redis ${i.get("redis_version")}`
    : "unknown";
  if (kvrocks !== undefined) {
    // Kvrocks writes each command to RocksDB's WAL before it replies: a crash of the process
    // loses nothing; `sync yes` also fsyncs it (a machine crash or power cut loses nothing).
    setting("rocksdb.write_options.sync", sync);
  } else {
    const aof = i.get("aof_enabled");
    const appendonly = setting("appendonly", aof === "1" ? "yes" : aof === "0" ? "no" : undefined);
    setting("appendfsync", appendfsync);
    setting("save", save === "" ? "off" : save);
    const policy = setting("maxmemory_policy", i.get("maxmemory_policy"));
    setting("maxmemory", i.get("maxmemory"));
    if (policy.startsWith("allkeys-")) {
      lossWithoutCrash = true;
      problems.push(
        `maxmemory-policy is ${policy}: under memory pressure the server evicts the hash "${key}" (written once per segment, so the coldest key) and every counter in it restarts at 1; set maxmemory-policy noeviction, or give the IDs a server that is not a cache`,
      );
    }
    if (appendonly === "no" && (options.replicas ?? 0) === 0) {
      const snapshots = settings.save === "off" || settings.save === "unknown"
        ? settings.save === "off" ? "no snapshots either" : "snapshots unknown"
        : `snapshots only, save "${settings.save}"`;
      problems.push(
        `AOF is off (appendonly no, ${snapshots}): a crash or restart of the server takes the counters back to the last snapshot (or to nothing) and fresh generators re-issue the IDs handed out since; set appendonly yes (appendfsync always, or everysec), or confirm each reservation on replicas (replicas: N)`,
      );
    } else if (appendonly === "unknown" && (options.replicas ?? 0) === 0) {
      problems.push(
        `the server will not say whether it keeps an AOF (${
          read.error ?? "INFO persistence has no aof_enabled"
        }); if it does, state it: serverSettings: { appendonly: "yes" }`,
      );
    }
    if (appendonly === "yes" && settings.appendfsync === "unknown") {
      // CONFIG is often forbidden on managed servers: Redis' default is assumed, and said.
      settings.appendfsync = `${DEFAULT_APPENDFSYNC} (assumed: CONFIG GET refused)`;
    }
  }
  const ttl = read.ttl;
  settings.ttl_ms = ttl === undefined || Number.isNaN(ttl)
    ? "unknown"
    : ttl > 0
    ? String(ttl)
    : "none";
  if (statedNames.length > 0) settings.stated = statedNames.join(",");
  return { durable: problems.length === 0, settings, problems, lossWithoutCrash };
}
