/**
 * What a Redis, Valkey or Kvrocks server can lose, read from the server itself
 * ({@linkcode probeRedis}); the verdict on it is the contract's (`../../contract/durability.ts`).
 *
 * @module
 */

import type { StoreDurability } from "../../contract/store.ts";
import type { RedisDurabilityOptions as DurabilityOptions } from "./store_options.ts";
import { isNoScripting, LuaScript } from "./lua_script.ts";
import { KVROCKS_DISABLE_WAL } from "./scripts.ts";
import { knownWithoutWaitAof } from "./confirm.ts";
import type { RedisClient } from "../../contract/redis_client.ts";
import { errorMessage, isReplyError, toKvIdError } from "../../contract/store_errors.ts";

// One round trip (with the CONFIG GETs sent at the same time), routed by the counter's key on
// a cluster: the server's identity, its persistence, memory and replication settings, and the
// hash's TTL; on Kvrocks (which runs CONFIG in scripts, as Redis does not) also whether its
// write-ahead log is off, as a `name:value` line: a client without sendCommand cannot ask it
// otherwise.
const PROBE_SCRIPT = new LuaScript(`local server = redis.call('INFO', 'server')
local wal = ''
if string.find(server, '\\nkvrocks_version:', 1, true) then
  local r = redis.pcall('CONFIG', 'GET', '${KVROCKS_DISABLE_WAL}')
  if type(r) == 'table' and r[2] then wal = '${KVROCKS_DISABLE_WAL}:' .. r[2] end
end
return {server, redis.call('INFO', 'persistence'), redis.call('INFO', 'memory'),
  redis.call('PTTL', KEYS[1]), redis.call('INFO', 'replication'), wal}`);

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
  // Refused credentials refuse every command, the reservation too: a configuration error, not
  // a server that keeps its settings to itself.
  if (/(^|: )(NOAUTH|WRONGPASS)/.test(errorMessage(err))) throw error;
  return error.message;
}

/** Scripts refused: by the server (no scripting) or by the user's ACL (`NOPERM` for EVAL). */
function scriptsRefused(err: unknown): boolean {
  return isNoScripting(err) || /NOPERM.*'(eval|evalsha)'/i.test(errorMessage(err));
}

/** What `INFO` and `PTTL` said: the `key:value` fields, the hash's TTL, or why not read. */
export type InfoRead = { info: Map<string, string>; ttl: number | undefined; error?: string };

/**
 * The `INFO` facts and PTTL a reservation script read (`FIRST_RESERVE_SCRIPT`'s
 * `name:value` lines), as the probe's own read.
 */
export function infoFromFacts(facts: unknown, ttl: unknown): InfoRead {
  return { info: parseInfo(asText(facts)), ttl: Number(asText(ttl)) };
}

/** The `INFO` sections and the hash's TTL, by script or, without scripting, by plain commands. */
export async function info(client: RedisClient, key: string): Promise<InfoRead> {
  const unknown = (error: string) => ({ info: new Map<string, string>(), ttl: undefined, error });
  try {
    const reply = await PROBE_SCRIPT.run(client, [key], []);
    if (!Array.isArray(reply) || reply.length !== 6) return unknown("unexpected probe reply");
    const text = [...reply.slice(0, 3), reply[4], reply[5]].map(asText).join("\n");
    return { info: parseInfo(text), ttl: Number(asText(reply[3])) };
  } catch (err) {
    const why = unknownOrThrow(err, key);
    if (!scriptsRefused(err) || client.sendCommand === undefined) return unknown(why);
  }
  const send = client.sendCommand;
  try {
    const [text, ttl] = await Promise.all([send("INFO", []), send("PTTL", [key])]);
    const facts = parseInfo(asText(text));
    if (facts.has("kvrocks_version")) {
      // Without scripting the write-ahead log is asked apart (Redis has no such setting).
      const wal = await config(client, KVROCKS_DISABLE_WAL);
      if (wal !== "unknown") facts.set(KVROCKS_DISABLE_WAL, wal);
    }
    return { info: facts, ttl: Number(asText(ttl)) };
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
// doubt it (a transient failure, a rollback, a refusal: {@linkcode forgetServerReads}, which
// the store's forgetReads() calls): after one, the next read of that client reads the server.
/** A read of the server: `INFO` and `PTTL`, then `CONFIG GET` appendfsync, save, rocksdb sync. */
export type ServerRead = Promise<[InfoRead, string, string, string]>;
type SharedRead = { read: ServerRead; done: boolean };
const reads = new WeakMap<RedisClient, Map<string, SharedRead>>();

/**
 * The read of `client` and hash `key` a generator may use instead of its own, or undefined: the
 * last one while no generator has doubted it ({@linkcode forgetServerReads}); with `reuse`
 * false (a re-read), only one still in flight and sent since the last doubt (10,000 names
 * re-reading after one failure: one read).
 */
export function sharedRead(
  client: RedisClient,
  key: string,
  reuse: boolean,
): ServerRead | undefined {
  const shared = reads.get(client)?.get(key);
  if (shared !== undefined && (reuse || !shared.done)) {
    return shared.read;
  }
  return undefined;
}

/**
 * Make `read` the shared read of `client` and hash `key` (see {@linkcode sharedRead}); a failed
 * read is never shared. What it says of the server's version tells whether it has `WAITAOF`.
 */
export function shareRead(client: RedisClient, key: string, read: ServerRead): void {
  let byKey = reads.get(client);
  if (byKey === undefined) reads.set(client, byKey = new Map());
  const entry: SharedRead = { read, done: false };
  byKey.set(key, entry);
  read.then(([i]) => {
    entry.done = true;
    if (lacksWaitAof(i.info)) knownWithoutWaitAof(client);
  }, () => {
    // A failed read is never shared: the next one reads the server again.
    if (byKey.get(key) === entry) byKey.delete(key);
  });
}

/**
 * Stop sharing every read of `client` made so far (one still in flight included): the next read
 * of each hash reads the server again.
 */
export function forgetServerReads(client: RedisClient): void {
  reads.delete(client);
}

function serverReads(client: RedisClient, key: string, reuse: boolean): ServerRead {
  const shared = sharedRead(client, key, reuse);
  if (shared !== undefined) return shared;
  const read = Promise.all([info(client, key), ...readConfigs(client)] as const);
  shareRead(client, key, read);
  return read;
}

/**
 * The three `CONFIG GET`s of a read (appendfsync, save, rocksdb.write_options.sync), each
 * `"unknown"` when refused. None changes whether a server is refused (only `INFO`'s facts and,
 * on Kvrocks, the scripts' own read of `rocksdb.write_options.disable_wal` do): they name
 * settings in the report and its messages.
 */
export function readConfigs(
  client: RedisClient,
): [Promise<string>, Promise<string>, Promise<string>] {
  return [
    config(client, "appendfsync"),
    config(client, "save"),
    config(client, "rocksdb.write_options.sync"),
  ];
}

/** A server that says it has no `WAITAOF`: Redis before 7.2 (Valkey has it), Kvrocks. */
function lacksWaitAof(info: Map<string, string>): boolean {
  if (info.has("kvrocks_version")) return true;
  if (info.has("valkey_version")) return false;
  const m = /^(\d+)\.(\d+)/.exec(info.get("redis_version") ?? "");
  return m !== null && (Number(m[1]) < 7 || (Number(m[1]) === 7 && Number(m[2]) < 2));
}

/**
 * Read the durability of the Redis, Valkey or Kvrocks server behind `client` for hash `key`:
 * `INFO server`, `persistence` and `memory` and the hash's `PTTL` (one script), with
 * `CONFIG GET appendfsync`, `save` and `rocksdb.write_options.sync` sent at the same time
 * (one round trip in all). A setting the server will not tell is `"unknown"` unless
 * `options.stated` states it. A lost connection rejects. With `options.reuse`, the last read
 * of this client and hash answers while no generator has doubted it since
 * ({@linkcode forgetServerReads}).
 */
export async function probeRedis(
  client: RedisClient,
  key: string,
  options: DurabilityOptions,
): Promise<StoreDurability> {
  return durabilityOf(await serverReads(client, key, options.reuse === true), key, options);
}

/** What a {@linkcode ServerRead} says the server can lose for hash `key`. */
export function durabilityOf(
  [read, appendfsync, save, sync]: Awaited<ServerRead>,
  key: string,
  options: DurabilityOptions,
): StoreDurability {
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
    // With the WAL off, a write lives in RocksDB's memtable until a flush (64 MB of writes by
    // default: a counters hash may never fill it), so a crash loses every reservation since.
    const wal = setting(KVROCKS_DISABLE_WAL, read.info.get(KVROCKS_DISABLE_WAL));
    setting("rocksdb.write_options.sync", sync);
    // Replicas cannot cover it: Kvrocks replicates from the WAL, so they never see those writes.
    if (wal === "yes") {
      problems.push(
        `the write-ahead log is off (${KVROCKS_DISABLE_WAL} yes): a crash of the server (kill -9, OOM, power cut) loses every reservation since RocksDB last flushed its memtable, which a counters hash may never fill, and fresh generators re-issue those IDs; set ${KVROCKS_DISABLE_WAL} no in kvrocks.conf and restart it (it cannot be set at run time)`,
      );
    } else if (wal !== "no") {
      problems.push(
        `the server will not say whether its write-ahead log is on (CONFIG GET ${KVROCKS_DISABLE_WAL} refused: Kvrocks lets only its admin run CONFIG, not a namespace token); if it is (${KVROCKS_DISABLE_WAL} no, the default), state it: serverSettings: { "${KVROCKS_DISABLE_WAL}": "no" }`,
      );
    }
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
        `AOF is off (appendonly no, ${snapshots}): a crash or restart of the server takes the counters back to the last snapshot (or to nothing) and fresh generators re-issue the IDs handed out since; turn AOF on (CONFIG SET appendonly yes, and appendonly yes in the config file; appendfsync always, or everysec), or confirm each reservation on replicas (replicas: N)`,
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
  const listed = Number(i.get("connected_slaves"));
  const replicas = options.replicas ?? 0;
  if (i.get("role") === "master" && Number.isInteger(listed)) {
    settings.connected_replicas = String(listed);
    if (listed > replicas) {
      // WAIT N counts any N replicas; Sentinel or Cluster may promote another one (a partition
      // leaves the acknowledging ones on the primary's side): the IDs served since are then
      // missing on the new primary, and a fresh generator re-issues them.
      problems.push(
        `the primary has ${listed} replica${
          listed === 1 ? "" : "s"
        } and replicas: ${replicas} confirms each reservation on ${
          replicas === 0 ? "none" : `${replicas} of them`
        }: a failover to a replica that did not acknowledge (after a crash, or a partition that leaves the acknowledging ones with the old primary) re-issues the IDs handed out since; set replicas: ${listed} (then a reservation needs every replica: while one is down or cut off, none succeeds), or durability: "best-effort" to accept that`,
      );
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
