/**
 * The Redis/Kvrocks store: reserves ranges with `HINCRBY <key> <name> <step>`.
 *
 * @module
 */

import { KvIdError, reasonOf } from "../../contract/errors.ts";
import type {
  AnyReserveOptions,
  CachedReads,
  CounterListing,
  CountersOptions,
  CounterValue,
  DayCleanup,
  DurabilityInReserve,
  DurabilityOptions,
  GiveBack,
  IdRange,
  Release,
  Reservation,
  ServerClock,
  StepMemory,
  StepReading,
  Store,
  StoreDurability,
} from "../../contract/store.ts";
import { MAX_ID, poolField, stepField } from "../../contract/store.ts";
import { isReplyError, toKvIdError } from "../../contract/store_errors.ts";
import type { RedisClient, RedisSource } from "../../contract/redis_client.ts";
import {
  LAYOUT_FIELD_PREFIX as LAYOUT_PREFIX,
  otherLayout,
  singleStoreCounter,
} from "../interleaved/layout.ts";
import { isNoScripting } from "./lua_script.ts";
import { forgetServerReads, probeRedis, sharedRead } from "./durability_probe.ts";
import { confirmedAs, firstReservation } from "./first_reservation.ts";
import {
  checkRedisStoreOptions,
  confirmationFor,
  type RedisDurabilityOptions,
  type RedisReserveOptions as ReserveOptions,
  type RedisStoreOptions,
  replicasFor,
} from "./store_options.ts";
import { deleteDaysBefore, serverNow } from "./daily_cleanup.ts";
import { resolveRedis } from "./client_source.ts";
import { confirmReservation, confirms, connectionOf } from "./confirm.ts";
import { parseInteger, range, reservationFrom, reserveArgs, text } from "./replies.ts";
import {
  GIVE_BACK_SCRIPT,
  LAYOUT_RESERVE_SCRIPT,
  RELEASE_SCRIPT,
  RESERVE_SCRIPT,
  STEP_SCRIPT,
} from "./scripts.ts";
import { readCounters } from "./counters.ts";

// What the store's module always offered, now in files of their own.
export type { RedisClient, RedisSource } from "../../contract/redis_client.ts";
export { checkRedisSource, resolveRedis } from "./client_source.ts";
export { confirmReservation, waitForAof, waitForReplicas } from "./confirm.ts";
export { LUA_BELOW } from "./scripts.ts";
export type { RedisStoreOptions } from "./store_options.ts";

// The least time a WAIT bounded by round trips (MemberReserveOptions.budgetRoundTrips) gets.
const MIN_WAIT_MS = 200;
const INTERLEAVED_COUNTER =
  "this counter belongs to interleaved servers (its layout field exists): use a generator with the same redis: [...] list, or another name";
// Counters remembered as checked, at most: a bound for processes with very many names.
const MAX_CHECKED = 10_000;

/**
 * The store on Redis or Kvrocks. With `guard` it runs one script per reservation (EVALSHA, and
 * EVAL when the server answers NOSCRIPT); without it, a plain `HINCRBY`. A server without
 * scripting makes it fall back to plain `HINCRBY` for good. As a member of an
 * {@linkcode InterleavedStore} it records and checks the set's layout in the same script (and
 * refuses to serve the set without scripting).
 *
 * @example A Redis server and a Deno KV file interleaving blocks
 * ```ts
 * import { KvId } from "@kvid/core";
 * import { DenoKvStore } from "@kvid/core/deno-kv";
 * import { InterleavedStore, RedisStore } from "@kvid/core/store";
 * import assert from "node:assert/strict";
 *
 * // `() => connect({ hostname: "127.0.0.1", port: 6379 })` with jsr:@db/redis in an app.
 * const redis = new RedisStore(() => Promise.reject(new Error("not in this example")));
 * using kv = new DenoKvStore(":memory:");
 * const store = new InterleavedStore([redis, kv], { block: 1000 });
 * await using ORDER_ID = new KvId("order", { store });
 * assert.ok(store.layout(1) === "v1 servers=2 block=1000 index=1" && ORDER_ID.name === "order");
 * ```
 */
export class RedisStore
  implements
    Store,
    Release,
    GiveBack,
    StepMemory,
    StepReading,
    DurabilityInReserve,
    CachedReads,
    DayCleanup,
    CounterListing,
    ServerClock {
  /** The reserve script reads the remembered step in the same call. */
  readonly reservesStep = true;
  /** A first reservation reads the server's durability in the same call. */
  readonly readsDurability = true;
  readonly #source: RedisSource;
  readonly #own: Required<RedisStoreOptions>;
  // The client last resolved: whose shared reads forgetReads() drops.
  #client: RedisClient | undefined;
  // Hashes whose server was last read (through this store) as keeping no AOF.
  readonly #noAof = new Set<string>();
  #scripting = true;
  // Set once the client replied with a rounded number: exact reads go through the script then.
  #rounding = false;
  // Counters (key, field) checked for an interleaved layout before their first plain HINCRBY.
  readonly #plainChecked = new Set<string>();

  /**
   * A store on one server; no I/O until the first reservation.
   *
   * @param source The client or a factory of it.
   * @param options How reservations are confirmed (`WAIT`, `WAITAOF`), at least.
   */
  constructor(source: RedisSource, options: RedisStoreOptions = {}) {
    this.#source = source;
    this.#own = checkRedisStoreOptions(options);
  }

  /** False once the server refused scripting: reservations are plain `HINCRBY` since. */
  get scripting(): boolean {
    return this.#scripting;
  }

  /** Reserve `count` IDs; see {@linkcode Store.reserve}. */
  async reserve(
    key: string,
    field: string,
    count: number,
    reserveOptions: AnyReserveOptions,
  ): Promise<Reservation> {
    const client = await this.#clientFor(key, field);
    const confirmation = confirmationFor(this.#own, reserveOptions, this.#noAof.has(key));
    const options: ReserveOptions = { ...reserveOptions, ...confirmation };
    if (options.durability !== undefined) {
      const asked = this.#asked(options.durability);
      return await this.#reserveReading(client, key, field, count, options, asked);
    }
    return await this.#reserveConfirmed(client, key, field, count, options);
  }

  /** A durability read as the probe makes it: with the replicas confirming each reservation. */
  #asked(options: DurabilityOptions): RedisDurabilityOptions {
    return { ...options, replicas: replicasFor(this.#own, options.generator) };
  }

  /** Keep what a read of hash `key` said of the AOF (see `confirmationFor`); pass it on. */
  #learned(key: string, d: StoreDurability): StoreDurability {
    if (d.settings.appendonly === "no") {
      if (this.#noAof.size >= MAX_CHECKED) this.#noAof.clear();
      this.#noAof.add(key);
    } else this.#noAof.delete(key);
    return d;
  }

  /** Stop sharing the server reads made so far; see {@linkcode CachedReads.forgetReads}. */
  forgetReads(): void {
    if (this.#client !== undefined) forgetServerReads(this.#client);
  }

  /** Reserve, then confirm (WAITAOF, WAIT) before any ID is served. */
  async #reserveConfirmed(
    client: RedisClient,
    key: string,
    field: string,
    count: number,
    options: ReserveOptions,
  ): Promise<Reservation> {
    const started = performance.now();
    // Which connection reserves, asked before the reservation (see connectionOf).
    const before = confirms(client, options) ? connectionOf(client, key) : undefined;
    before?.catch(() => {});
    const reservation = await this.#reserve(client, key, field, count, options);
    await this.#confirm(client, key, field, options, started, before);
    return reservation;
  }

  async #confirm(
    client: RedisClient,
    key: string,
    field: string,
    options: ReserveOptions,
    started: number,
    before?: Promise<string>,
  ): Promise<void> {
    // A member of an interleaved set waits a few of its own round trips at most
    // (waitRoundTrips): one whose replicas or fsync do not confirm is skipped quickly.
    const rtt = performance.now() - started;
    let budget = (options.waitMs ?? this.#own.waitMs) - rtt;
    if (options.waitRoundTrips !== undefined) {
      budget = Math.min(budget, Math.max(MIN_WAIT_MS, options.waitRoundTrips * rtt) - rtt);
    }
    await confirmReservation(
      client,
      key,
      field,
      options,
      Math.max(1, Math.floor(budget)),
      before,
    );
  }

  /**
   * A generator's first reservation with the server's durability read (see
   * `DurabilityReserveOptions.durability`). Without a read to share, the read and the guarded
   * reservation are one script call ({@linkcode firstReservation}: sent whole, it never meets
   * NOSCRIPT) with the CONFIG GETs pipelined beside it: one round trip. With one (a later
   * generator of this client), or without the guard or scripting: the read (shared, or its own),
   * then the reservation.
   */
  async #reserveReading(
    client: RedisClient,
    key: string,
    field: string,
    count: number,
    options: ReserveOptions,
    asked: RedisDurabilityOptions,
  ): Promise<Reservation> {
    // (An interleaved member's layout reservation has a script of its own: never in one call.)
    const oneCall = options.guard && options.layout === undefined && this.#scripting &&
      sharedRead(client, key, asked.reuse === true) === undefined;
    const before = oneCall && confirms(client, options) ? connectionOf(client, key) : undefined;
    before?.catch(() => {});
    const first = oneCall
      ? await firstReservation(client, key, field, count, options, asked)
      : "apart";
    if (first === "no scripting") this.#scripting = false;
    if (typeof first === "string") {
      const durability = await this.#probe(key, asked);
      return await this.#reserveJudged(client, key, field, count, options, asked, durability);
    }
    const { reservation, started } = first;
    const durability = this.#learned(key, first.durability);
    // Not reserved: refused (the usual case), or accepted by the judgement where the script's
    // own check is the stricter one: then reserved in a second call.
    if (reservation === undefined) {
      return await this.#reserveJudged(client, key, field, count, options, asked, durability);
    }
    // The script and the judgement agree by construction; should they not, the range is spent.
    if (asked.judge(durability) !== undefined) {
      return { ranges: [], raised: reservation.raised, durability };
    }
    await this.#confirm(
      client,
      key,
      field,
      confirmedAs(options, asked, durability),
      started,
      before,
    );
    return { ...reservation, durability };
  }

  /** Reserve after a read of `durability`, unless it is refused (then no range). */
  async #reserveJudged(
    client: RedisClient,
    key: string,
    field: string,
    count: number,
    options: ReserveOptions,
    asked: RedisDurabilityOptions,
    durability: StoreDurability,
  ): Promise<Reservation> {
    if (asked.judge(durability) !== undefined) {
      return { ranges: [], raised: false, durability };
    }
    const confirmed = confirmedAs(options, asked, durability);
    return { ...await this.#reserveConfirmed(client, key, field, count, confirmed), durability };
  }

  async #reserve(
    client: RedisClient,
    key: string,
    field: string,
    count: number,
    options: ReserveOptions,
  ): Promise<Reservation> {
    try {
      if (options.layout !== undefined) {
        return await this.#layoutScript(client, key, field, count, options, options.layout);
      }
      if ((options.guard || (options.exact && this.#rounding)) && this.#scripting) {
        const floor = options.guard ? options.floor : 0n;
        const pool = options.guard && options.pool === true; // the floor bounds what it takes
        const reply = await this.#script(client, key, field, count, { ...options, floor, pool });
        if (reply !== undefined) return reply;
      }
      await this.#checkPlain(client, key, field);
      // Sent together, one round trip: PERSIST right after the increment removes a TTL on the
      // hash (not atomically, as the script does; between the two only an expiry in that
      // instant can intervene).
      const [reply, persisted] = await Promise.all([
        client.hincrby(key, field, count),
        client.sendCommand?.("PERSIST", [key]).catch(() => undefined),
      ]);
      const value = parseInteger(reply);
      if (value === undefined) throw new Error("HINCRBY did not reply with an integer");
      const ttlRemovedMs = Number(String(persisted)) === 1 ? -1 : 0;
      if (value.exact) {
        return { ranges: [range(value.value, count)], raised: false, ttlRemovedMs };
      }
      // A numeric reply at or above 2^53 may be rounded: the range it stands for is unknown, so
      // it is spent and never handed out. Number mode cannot go there anyway.
      if (!options.exact) {
        throw new KvIdError(
          "unsafe",
          `the counter passed Number.MAX_SAFE_INTEGER (the client replied ${value.value}, a rounded number); use { bigint: true } with a client that reads integers exactly`,
          { key, field },
        );
      }
      // bigint mode: read the next range exactly through the script (its reply is a string).
      this.#rounding = true;
      if (this.#scripting) {
        // Only the increment's exact value is wanted here: never the pool (a pooled range may
        // lie below what the caller holds, which the floor 0 would not exclude).
        const exactOnly = { ...options, floor: 0n, pool: false, loadStep: false };
        const reply = await this.#script(client, key, field, count, exactOnly);
        if (reply !== undefined) return reply;
      }
      throw new KvIdError(
        "config",
        `the counter is above 2^53, the client replied with a rounded number (${value.value}) and the server has no scripting to read it exactly: make the client reply integers as strings (ioredis: new Redis({ stringNumbers: true }); node-redis through fromNodeRedis does) or allow EVAL/EVALSHA`,
        { key, field },
      );
    } catch (cause) {
      throw toKvIdError(cause, key, field);
    }
  }

  /**
   * Give back the unused tail of the last reservation; see {@linkcode Release.release}. False
   * without scripting (a plain read then write could lower a counter another process just
   * raised).
   */
  async release(key: string, field: string, range: IdRange): Promise<boolean> {
    if (!this.#scripting || range.first < 1n || range.last < range.first) return false;
    const client = await this.#resolve();
    const args = [field, String(range.last), String(range.first - 1n)];
    try {
      return Number(await RELEASE_SCRIPT.run(client, [key], args)) === 1;
    } catch (err) {
      if (isReplyError(err) && isNoScripting(err)) {
        this.#scripting = false;
        return false;
      }
      throw toKvIdError(err, key, field);
    }
  }

  /**
   * What the server can lose for hash `key` (`INFO`, `CONFIG GET`, `PTTL`: one round trip);
   * see {@linkcode DurabilityFacts.durability} and {@linkcode probeRedis}.
   */
  async durability(key: string, options: DurabilityOptions): Promise<StoreDurability> {
    return await this.#probe(key, this.#asked(options));
  }

  async #probe(key: string, options: RedisDurabilityOptions): Promise<StoreDurability> {
    const client = await this.#clientFor(key, options.field);
    try {
      return this.#learned(key, await probeRedis(client, key, options));
    } catch (err) {
      throw toKvIdError(err, key, options.field);
    }
  }

  /**
   * Delete the `yyyymmdd` counters of hash `key` before `before` (one script); see
   * {@linkcode DayCleanup.deleteDaysBefore}.
   */
  async deleteDaysBefore(key: string, before: string): Promise<number> {
    return deleteDaysBefore(await this.#clientFor(key, `<${before}`), key, before);
  }

  /** The counters of hash `key`, exact (one script); see {@linkcode CounterListing.counters}. */
  async counters(key: string, options?: CountersOptions): Promise<Map<string, CounterValue>> {
    return await readCounters(await this.#clientFor(key, ""), key, options);
  }

  /** The server's clock (`TIME`) in epoch ms; see {@linkcode ServerClock.now}. */
  async now(): Promise<number> {
    const client = await this.#clientFor("", "");
    try {
      return await serverNow(client);
    } catch (err) {
      throw toKvIdError(err, "", "");
    }
  }

  async #clientFor(key: string, field: string): Promise<RedisClient> {
    try {
      return await this.#resolve();
    } catch (cause) {
      throw factoryFailed(cause, key, field);
    }
  }

  async #resolve(): Promise<RedisClient> {
    return this.#client = await resolveRedis(this.#source);
  }

  /** The remembered step of a counter; see {@linkcode StepMemory.loadStep}. */
  async loadStep(key: string, field: string): Promise<number | undefined> {
    const reply = await this.#stepScript(key, field, "");
    const step = parseInteger(reply)?.value;
    return step !== undefined && step > 0n && step <= BigInt(Number.MAX_SAFE_INTEGER)
      ? Number(step)
      : undefined;
  }

  /** Remember a counter's step; see {@linkcode StepMemory.saveStep}. */
  async saveStep(key: string, field: string, step: number): Promise<void> {
    await this.#stepScript(key, field, String(step));
  }

  async #stepScript(key: string, field: string, step: string): Promise<unknown> {
    if (!this.#scripting) return undefined;
    const client = await this.#resolve();
    try {
      return await STEP_SCRIPT.run(client, [key], [stepField(field), step]);
    } catch (err) {
      if (isReplyError(err) && isNoScripting(err)) {
        this.#scripting = false;
        return undefined;
      }
      throw toKvIdError(err, key, field);
    }
  }

  /**
   * Before the first plain `HINCRBY` of a counter (no guard, or no scripting), refuse one that
   * interleaved servers own: its field is their block cycle, and incrementing it as a plain
   * counter would hand out their IDs. Read with `HEXISTS` through `sendCommand`; a client
   * without `sendCommand` cannot be checked.
   */
  async #checkPlain(client: RedisClient, key: string, field: string): Promise<void> {
    const counter = `${key}\u0000${field}`;
    if (this.#plainChecked.has(counter) || client.sendCommand === undefined) return;
    const reply = await client.sendCommand("HEXISTS", [key, LAYOUT_PREFIX + field]);
    if (Number(String(reply)) === 1) {
      throw new KvIdError("config", INTERLEAVED_COUNTER, { key, field });
    }
    if (this.#plainChecked.size >= MAX_CHECKED) this.#plainChecked.clear();
    this.#plainChecked.add(counter);
  }

  /** A member's reservation in an interleaved set; see `MemberReserveOptions.layout`. */
  async #layoutScript(
    client: RedisClient,
    key: string,
    field: string,
    count: number,
    options: ReserveOptions,
    layout: string,
  ): Promise<Reservation> {
    const where = { key, field };
    const noScripting = () =>
      new KvIdError(
        "config",
        "interleaving needs Lua scripting (EVAL/EVALSHA), which this server refuses: the layout cannot be checked with the increment",
        where,
      );
    if (!this.#scripting) throw noScripting();
    const raiseTo = options.raiseTo > MAX_ID ? MAX_ID : options.raiseTo;
    const floor = options.guard ? options.floor : 0n;
    const args = [field, String(count), String(floor), String(raiseTo), layout];
    let reply: unknown;
    try {
      reply = await LAYOUT_RESERVE_SCRIPT.run(client, [key], args);
    } catch (err) {
      if (isReplyError(err) && isNoScripting(err)) {
        this.#scripting = false;
        throw noScripting();
      }
      throw err;
    }
    const [status, a, c, ttl] = Array.isArray(reply) ? reply.map(text) : [];
    if (status === "layout") throw otherLayout(a, layout, where);
    if (status === "plain") throw singleStoreCounter(a, where);
    if (status === "notint") {
      throw new KvIdError("reply", "the counter field does not hold an integer", {
        ...where,
        reason: "not-a-counter",
        cause: new Error(`found ${JSON.stringify(a)}`),
      });
    }
    const value = parseInteger(a);
    if (status !== "ok" || value === undefined || !value.exact) {
      throw new Error(`unexpected script reply ${String(reply)}`);
    }
    const ttlRemovedMs = Number(ttl ?? 0) || 0;
    return { ranges: [range(value.value, count)], raised: c === "1", layout, ttlRemovedMs };
  }

  /** Run the reserve script; undefined when the server has no scripting. */
  async #script(
    client: RedisClient,
    key: string,
    field: string,
    count: number,
    options: ReserveOptions,
  ): Promise<Reservation | undefined> {
    const args = reserveArgs(field, count, options);
    let reply: unknown;
    try {
      reply = await RESERVE_SCRIPT.run(client, [key], args);
    } catch (err) {
      if (isReplyError(err) && isNoScripting(err)) {
        this.#scripting = false;
        return undefined;
      }
      throw err;
    }
    return reservationFrom(reply);
  }

  /**
   * Give back every unused range of the caller; see {@linkcode GiveBack.giveBack}. 0 without
   * scripting (a plain read then write could lower a counter another process just raised).
   */
  async giveBack(key: string, field: string, ranges: IdRange[]): Promise<number> {
    const valid = ranges.filter((r) => r.first >= 1n && r.last >= r.first);
    const top = valid.at(-1);
    if (!this.#scripting || top === undefined) return 0;
    const client = await this.#resolve();
    const args = [
      field,
      poolField(field),
      String(top.last),
      String(top.first - 1n),
      ...valid.map((r) => `${r.first}-${r.last}`),
    ];
    try {
      return Number(await GIVE_BACK_SCRIPT.run(client, [key], args));
    } catch (err) {
      if (isReplyError(err) && isNoScripting(err)) {
        this.#scripting = false;
        return 0;
      }
      throw toKvIdError(err, key, field);
    }
  }
}

/**
 * The Redis client factory's failure, with its reason: a permanent one (a host that does not
 * resolve, a scheme the client refuses, refused credentials) as `"config"`, said at once; any
 * other as `"connection"`, retried until the caller's deadline.
 */
function factoryFailed(cause: unknown, key: string, field: string): KvIdError {
  const mapped = toKvIdError(cause, key, field);
  const code = mapped.code === "config" ? "config" : "connection";
  return new KvIdError(code, `the Redis client factory failed: ${reasonOf(mapped)}`, {
    key,
    field,
    cause,
    reason: mapped.reason,
  });
}
