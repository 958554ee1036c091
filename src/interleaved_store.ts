/**
 * The interleaved store: N independent Redis servers, each handing out only its own blocks.
 *
 * @module
 */

import { deadlineTimer } from "./deadline_timer.ts";
import { KvIdError } from "./errors.ts";
import {
  confirmReservation,
  LUA_BELOW,
  type RedisClient,
  type RedisSource,
  resolveRedis,
} from "./redis_store.ts";
import { LuaScript } from "./lua_script.ts";
import type {
  DurabilityOptions,
  IdRange,
  Reservation,
  ReserveOptions,
  Store,
  StoreDurability,
} from "./store_contract.ts";
import { durabilityRefusal, mergeDurability, probeRedis } from "./durability.ts";
import { toKvIdError } from "./store_errors.ts";

/**
 * Options of {@linkcode InterleavedStore}.
 *
 * @example Three servers, blocks of 10,000
 * ```ts
 * import { KvId } from "@kvid/core";
 * import { InterleavedStore, type InterleavedStoreOptions } from "@kvid/core/store";
 * import assert from "node:assert/strict";
 *
 * // Factories of the servers' clients, called on the first reservation.
 * const connect = (port: number) => () =>
 *   Promise.reject(new Error(`not in this example (port ${port})`));
 * const options: InterleavedStoreOptions = { block: 10_000, timeout: 2_000 };
 * const store = new InterleavedStore([connect(6379), connect(6380), connect(6381)], options);
 * const ORDER_ID = new KvId("order", { store, timeout: 2_000 });
 * assert.ok(ORDER_ID.stats().segments === 0); // no I/O until the first ID
 * ```
 */
export interface InterleavedStoreOptions {
  /** IDs per block, >= 1. Default 1,000. */
  block?: number;
  /**
   * The longest one reservation may take in ms, over every server tried (the generator's
   * `timeout`); one server is given at most this divided by the number of servers. Default 5,000.
   */
  timeout?: number;
}

/** The default number of IDs per block. */
const DEFAULT_BLOCK = 1000;
/** The most servers an interleaved store takes. */
export const MAX_SERVERS = 1024;
// Blocks per reservation at most: a reservation is one segment object per block.
const MAX_BLOCKS = 1024;
// Per-server attempt time limit: this many smoothed round-trip times, at least MIN_ATTEMPT_MS.
const RTT_FACTOR = 8;
const MIN_ATTEMPT_MS = 200;
const SERVER_BACKOFF_BASE_MS = 100;
const SERVER_BACKOFF_MAX_MS = 2_000;
const MAX_ID = (1n << 63n) - 1n;
/** The hash field holding a counter's layout on each server: this prefix, then the name. */
export const LAYOUT_FIELD_PREFIX = "\u0000layout:";

// One round trip per reservation, every key in KEYS[1]. Decimal strings are compared exactly
// (never as Lua doubles) and the only arithmetic is HINCRBY's, which is exact 64-bit.
//   ARGV[1] counter field: the next block cycle m of this server (0 when absent)
//   ARGV[2] layout field, ARGV[3] the layout this client expects
//   ARGV[4] blocks k, ARGV[5] the least cycle above the floor, ARGV[6] the cycle to raise to,
//   ARGV[7] the highest cycle a reservation may start at (its last block stays <= 2^63-1)
// Replies {'ok', first cycle, counter found, TTL removed}, {'layout', layout found}, {'notint', value} or
// {'plain', value}: a counter without a layout is a single-server one, whose value is an ID,
// not a cycle (the layout is written with the first increment, so they never exist apart).
const SCRIPT = new LuaScript(
  LUA_BELOW + `local found = redis.call('HGET', KEYS[1], ARGV[1]) or '0'
if not string.match(found, '^%-?%d+$') then return {'notint', found} end
local layout = redis.call('HGET', KEYS[1], ARGV[2])
if layout and layout ~= ARGV[3] then return {'layout', layout} end
if not layout and found ~= '0' then return {'plain', found} end
local m = found
if below(m, ARGV[5]) then m = ARGV[6] end
if below(ARGV[7], m) then return {'overflow', m} end
if not layout then redis.call('HSET', KEYS[1], ARGV[2], ARGV[3]) end
if m ~= found then redis.call('HSET', KEYS[1], ARGV[1], m) end
redis.call('HINCRBY', KEYS[1], ARGV[1], ARGV[4])
local ttl = redis.call('PTTL', KEYS[1])
if ttl > 0 then redis.call('PERSIST', KEYS[1]) else ttl = 0 end
return {'ok', m, found, ttl}`,
);

/** What is known of one server's health, shared by every store given the same source. */
interface Health {
  failures: number;
  retryAt: number;
  /** Smoothed round-trip time of successful reservations, ms; undefined before the first. */
  srtt: number | undefined;
}
const healths = new WeakMap<object, Health>();
/** A reply in time: smooth it into the round-trip estimate. */
function learn(health: Health, rtt: number): void {
  health.srtt = health.srtt === undefined ? rtt : 0.875 * health.srtt + 0.125 * rtt;
}
/** A reply after its attempt was given up: the link is at least that slow. */
function learnLate(health: Health, rtt: number): void {
  health.srtt = Math.max(health.srtt ?? 0, rtt);
}
function healthOf(source: RedisSource): Health {
  let h = healths.get(source);
  if (h === undefined) healths.set(source, h = { failures: 0, retryAt: 0, srtt: undefined });
  return h;
}

/**
 * A {@linkcode Store} over N independent Redis servers that never share an ID, in the style of
 * Flickr's ticket servers and TinyID's delta/remainder: IDs are cut in blocks of `block`, and
 * server `i` only ever issues blocks whose index is `i` modulo N. Block `b` holds the IDs
 * `b * block + 1 .. (b + 1) * block`.
 *
 * - On each server the counter field holds `m`, the next block cycle of that server: its next
 *   block is `m * N + i`. A reservation of `count` IDs takes `ceil(count / block)` whole blocks
 *   (at most 1,024: fewer IDs than asked then) of one server, one range per block.
 * - Reservations go to the servers in turn. A server that errors or does not answer in time
 *   (a few round-trip times, at least 200 ms, at most `timeout / N`) is skipped and tried again
 *   after a backoff; IDs flow while one server answers.
 * - Every reservation sends the caller's highest ID as a floor, whatever `guard` says: a server
 *   that was down or behind jumps to its first block above the floor instead of issuing old,
 *   lower IDs. Only a counter found below what this store already got from that server (data
 *   lost) is reported as `raised`.
 * - The layout (N, block, i) is stored next to the counter, in field `"\0layout:" + name` of the
 *   same hash (so the same Redis Cluster slot), on first use. Every reservation checks it on
 *   the server it goes to: one holding another layout is refused with a `"config"`
 *   {@linkcode KvIdError}, since a changed N, block or order would break the residue rule. Every
 *   generator of a counter must list the same servers in the same order; servers left out of a
 *   list cannot check it.
 * - Needs Lua scripting (EVALSHA, EVAL on NOSCRIPT). Every value is exact up to 2^63-1.
 *
 * @example Three servers, blocks of 1,000
 * ```ts ignore
 * import { KvId } from "@kvid/core";
 *
 * // Same as: new KvId("order", { store: new InterleavedStore([a, b, c], { block: 1000 }) })
 * const ORDER_ID = new KvId("order", { redis: [a, b, c], block: 1000 });
 * ```
 */
export class InterleavedStore implements Store {
  readonly #sources: readonly RedisSource[];
  readonly #block: bigint;
  readonly #blockSize: number;
  readonly #timeout: number;
  // Next server to try first: rotated after each success.
  #next: number;
  // Per counter, the cycle each server's counter reached through this store (rollback check).
  readonly #seen = new Map<string, bigint[]>();
  // Each server's durability as last probed; undefined: not yet, or failed since.
  readonly #probed: (StoreDurability | undefined)[] = [];
  // What the generator asked durability() with: applied to a server probed later.
  #durabilityOptions: DurabilityOptions | undefined;

  /**
   * A store over `sources`; no I/O until the first reservation.
   *
   * @param sources The servers (clients or factories), at least one, each once. Their order is
   *   part of the layout: keep it.
   * @param options The block size and time budget.
   */
  constructor(sources: readonly RedisSource[], options: InterleavedStoreOptions = {}) {
    if (!Array.isArray(sources) || sources.length === 0 || sources.length > MAX_SERVERS) {
      throw new TypeError(`InterleavedStore takes 1 to ${MAX_SERVERS} servers`);
    }
    if (new Set(sources).size !== sources.length) {
      throw new TypeError("InterleavedStore: the same client is given twice");
    }
    const block = options.block ?? DEFAULT_BLOCK;
    if (!Number.isSafeInteger(block) || block < 1) {
      throw new RangeError(`InterleavedStore block must be a positive safe integer, got ${block}`);
    }
    const timeout = options.timeout ?? 5_000;
    if (!(timeout > 0)) {
      throw new RangeError(`InterleavedStore timeout must be positive, got ${timeout}`);
    }
    this.#sources = [...sources];
    this.#blockSize = block;
    this.#block = BigInt(block);
    this.#timeout = timeout;
    this.#next = Math.floor(Math.random() * sources.length);
  }

  /** The number of servers. */
  get servers(): number {
    return this.#sources.length;
  }

  /** IDs per block. */
  get block(): number {
    return this.#blockSize;
  }

  /** The layout string stored on server `index`: what must match on every later use. */
  layout(index: number): string {
    return `v1 servers=${this.#sources.length} block=${this.#blockSize} index=${index}`;
  }

  /** Reserve at least `count` IDs (whole blocks) from the next server that answers. */
  async reserve(
    key: string,
    field: string,
    count: number,
    options: ReserveOptions,
  ): Promise<Reservation> {
    const n = this.#sources.length;
    const blocks = Math.min(MAX_BLOCKS, Math.max(1, Math.ceil(count / this.#blockSize)));
    const deadline = performance.now() + this.#timeout;
    const errors: KvIdError[] = [];
    const order = this.#order();
    for (const [tried, i] of order.entries()) {
      const source = this.#sources[i];
      const health = healthOf(source);
      const left = deadline - performance.now();
      if (left <= 0) break;
      // A server whose round trip is not known yet gets a fair share of what is left, so a slow
      // link works within the caller's timeout; a known one a few round trips (a late reply
      // raises what is known, so a link that got slower is waited for next time).
      const limit = health.srtt === undefined
        ? left / (order.length - tried)
        : Math.min(left, this.#timeout / n, Math.max(MIN_ATTEMPT_MS, RTT_FACTOR * health.srtt));
      const started = performance.now();
      try {
        const reply = await this.#attempt(i, key, field, blocks, options, limit);
        learn(health, performance.now() - started);
        health.failures = 0;
        health.retryAt = 0;
        this.#next = (i + 1) % n;
        return reply;
      } catch (err) {
        const error = toKvIdError(err, key, field);
        if (isRefusal(error)) throw error;
        // It may come back restarted or replaced: probed again before its next reservation.
        this.#probed[i] = undefined;
        health.failures++;
        health.retryAt = performance.now() + serverBackoff(health.failures);
        errors.push(error);
      }
    }
    const summary = errors.map((e) => e.message).join("; ") || "no time left";
    const all = errors.length === n && errors.every((e) => e.code === "reply");
    // The same refusal from every server will not heal by retrying soon: say it as such.
    throw new KvIdError(
      all ? "reply" : "connection",
      `none of the ${n} servers could reserve: ${summary}`,
      { key, field, cause: errors.length === 1 ? errors[0] : new AggregateError(errors) },
    );
  }

  /** Server indexes to try: due ones in turn from `#next`, then those backing off, soonest first. */
  #order(): number[] {
    const n = this.#sources.length;
    const now = performance.now();
    const due: number[] = [];
    const later: number[] = [];
    for (let j = 0; j < n; j++) {
      const i = (this.#next + j) % n;
      (healthOf(this.#sources[i]).retryAt <= now ? due : later).push(i);
    }
    later.sort((a, b) => healthOf(this.#sources[a]).retryAt - healthOf(this.#sources[b]).retryAt);
    return due.concat(later);
  }

  /** One reservation on server `i`, given up after `limitMs`. */
  async #attempt(
    i: number,
    key: string,
    field: string,
    blocks: number,
    options: ReserveOptions,
    limitMs: number,
  ): Promise<Reservation> {
    let cancelTimer: (() => void) | undefined;
    let late = false;
    const started = performance.now();
    const attempt = this.#run(i, key, field, blocks, options, limitMs);
    // A late reply is dropped: its blocks are spent, never handed out. Its round trip is
    // learned, so the next attempt on a slower link than measured so far waits long enough.
    attempt.then(() => {
      if (late) learnLate(healthOf(this.#sources[i]), performance.now() - started);
    }, () => {});
    try {
      return await Promise.race([
        attempt,
        new Promise<never>((_, reject) => {
          // A timer late because the event loop was blocked gives the reply more time.
          cancelTimer = deadlineTimer(limitMs, () => {
            late = true;
            reject(
              new KvIdError(
                "timeout",
                `server ${i} did not answer within ${Math.round(limitMs)} ms`,
                { key, field },
              ),
            );
          });
        }),
      ]);
    } finally {
      cancelTimer?.();
    }
  }

  async #run(
    i: number,
    key: string,
    field: string,
    blocks: number,
    options: ReserveOptions,
    limitMs: number,
  ): Promise<Reservation> {
    const started = performance.now();
    const n = BigInt(this.#sources.length);
    const b = this.#block;
    const index = BigInt(i);
    const k = BigInt(blocks);
    // The highest cycle whose block fits under 2^63-1, minus the blocks after the first.
    const lastCycle = (MAX_ID / b - index - 1n) / n;
    const startLimit = lastCycle - k + 1n;
    if (MAX_ID / b - index - 1n < 0n || startLimit < 0n) {
      throw new KvIdError("overflow", "the counter would pass 2^63-1", { key, field });
    }
    const floorCycle = this.#cycleAbove(options.floor, index);
    let raiseCycle = this.#cycleAbove(options.raiseTo, index);
    if (raiseCycle < floorCycle) raiseCycle = floorCycle;
    const args = [
      field,
      LAYOUT_FIELD_PREFIX + field,
      this.layout(i),
      String(blocks),
      String(floorCycle),
      String(raiseCycle),
      String(startLimit),
    ];
    let client: RedisClient;
    try {
      client = await resolveRedis(this.#sources[i]);
    } catch (cause) {
      throw new KvIdError("connection", `the client factory of server ${i} failed`, {
        key,
        field,
        cause,
      });
    }
    const policy = this.#durabilityOptions;
    if (policy !== undefined && this.#probed[i] === undefined) {
      // A server first reached (or back) since the generator's probe: probed now, and refused
      // like the whole store would be. Read from the server itself: a read shared by another
      // generator may be from before this server went away.
      const d = await this.#probe(i, key, { ...policy, reuse: false }, limitMs);
      const only = this.#sources.map((_, j) => j === i ? d : undefined);
      const refusal = durabilityRefusal(mergeDurability(only), policy.mode, key, field);
      if (refusal !== undefined) throw refusal;
    }
    const reply = await SCRIPT.run(client, [key], args);
    const [status, a, c, ttl] = Array.isArray(reply) ? reply.map(text) : [];
    const where = { key, field };
    if (status === "layout") {
      throw new KvIdError(
        "config",
        `server ${i} holds the layout "${a}" for this counter, not "${
          this.layout(i)
        }": the number of servers, the block and the servers' order must not change on a live counter (use a new key or name)`,
        where,
      );
    }
    if (status === "plain") {
      throw new KvIdError(
        "config",
        `server ${i} holds this counter as a single-server one (value ${a}, no layout): its IDs were handed out by a generator with one server or the CLI, and interleaved blocks would repeat them (use a new key or name)`,
        where,
      );
    }
    if (status === "notint") {
      throw new KvIdError("reply", `the counter field on server ${i} does not hold an integer`, {
        ...where,
        cause: new Error(`found ${JSON.stringify(a)}`),
      });
    }
    if (status === "overflow") {
      throw new KvIdError("overflow", "the counter would pass 2^63-1", where);
    }
    if (status !== "ok" || !isInteger(a) || !isInteger(c)) {
      throw new KvIdError("reply", `unexpected script reply from server ${i}`, {
        ...where,
        cause: new Error(String(reply)),
      });
    }
    const replicas = options.replicas ?? 0;
    if (replicas > 0 || options.waitAof === true) {
      // Each server's blocks wait for that server's fsync and replicas; unconfirmed, they are
      // spent. The
      // round trip just measured bounds the wait too (an attempt on a server whose round trip
      // was unknown got a large share of the timeout, meant for a slow link, not for WAIT).
      const rtt = performance.now() - started;
      const budget = Math.min(
        options.waitMs ?? limitMs,
        limitMs * 0.9,
        Math.max(MIN_ATTEMPT_MS, RTT_FACTOR * rtt),
      ) - rtt;
      await confirmReservation(client, key, field, options, Math.max(1, Math.floor(budget)));
    }
    const first = BigInt(a);
    const found = BigInt(c);
    const counter = `${key}\u0000${field}`;
    let seen = this.#seen.get(counter);
    if (seen === undefined) this.#seen.set(counter, seen = new Array(Number(n)).fill(0n));
    // Being behind the floor is normal here; going back below our own last reply is data loss.
    const raised = found < seen[i];
    seen[i] = first + k;
    const ttlRemovedMs = Number(ttl ?? 0) || 0;
    return { ranges: this.#ranges(first, index, blocks), raised, ttlRemovedMs };
  }

  /**
   * What the servers can lose for hash `key`: each one probed (see {@linkcode probeRedis}),
   * merged (durable when every one is). A server that does not answer is left out and probed
   * before its next reservation, with the same `options`: one that would be refused then is
   * refused, as the whole store is.
   */
  async durability(key: string, options: DurabilityOptions): Promise<StoreDurability> {
    this.#durabilityOptions = options;
    const limit = Math.max(MIN_ATTEMPT_MS, this.#timeout / 2);
    await Promise.all(this.#sources.map(async (_, i) => {
      try {
        await this.#probe(i, key, options, limit);
      } catch {
        this.#probed[i] = undefined; // down: probed before its next use
      }
    }));
    return mergeDurability(this.#probed);
  }

  /** Probe server `i`, within `limitMs`. */
  async #probe(
    i: number,
    key: string,
    options: DurabilityOptions,
    limitMs: number,
  ): Promise<StoreDurability> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    try {
      const probe = (async () => probeRedis(await resolveRedis(this.#sources[i]), key, options))();
      probe.catch(() => {});
      const d = await Promise.race([
        probe,
        new Promise<never>((_, reject) => {
          timer = setTimeout(
            () =>
              reject(
                new KvIdError("timeout", `server ${i} did not answer the durability probe`, {
                  key,
                  field: options.field,
                }),
              ),
            limitMs,
          );
        }),
      ]);
      this.#probed[i] = d;
      return d;
    } finally {
      clearTimeout(timer);
    }
  }

  /** The least cycle m >= 0 whose block m * N + i starts above `floor`. */
  #cycleAbove(floor: bigint, index: bigint): bigint {
    if (floor <= 0n) return 0n;
    const b = this.#block;
    const n = BigInt(this.#sources.length);
    const firstBlock = (floor + b - 1n) / b; // the least block index b with b * block >= floor
    const d = firstBlock - index;
    return d <= 0n ? 0n : (d + n - 1n) / n;
  }

  /** The ranges of `blocks` consecutive cycles from `first` on server `index`, adjacent ones merged. */
  #ranges(first: bigint, index: bigint, blocks: number): IdRange[] {
    const n = BigInt(this.#sources.length);
    const b = this.#block;
    const ranges: IdRange[] = [];
    for (let j = 0n; j < BigInt(blocks); j++) {
      const start = ((first + j) * n + index) * b + 1n;
      const last = start + b - 1n;
      const prev = ranges.at(-1);
      if (prev !== undefined && prev.last + 1n === start) prev.last = last;
      else ranges.push({ first: start, last });
    }
    return ranges;
  }
}

/** Errors that are the counter's or the configuration's, the same on every server. */
function isRefusal(error: KvIdError): boolean {
  if (error.code === "config" || error.code === "overflow") return true;
  return error.code === "reply" && /not a hash|not hold an integer/.test(error.message);
}

function serverBackoff(failures: number): number {
  const ms = Math.min(
    SERVER_BACKOFF_MAX_MS,
    SERVER_BACKOFF_BASE_MS * 2 ** Math.min(failures - 1, 16),
  );
  return ms / 2 + Math.random() * ms / 2;
}

function text(value: unknown): string {
  if (value instanceof Uint8Array) return new TextDecoder().decode(value);
  return String(value);
}

function isInteger(value: string | undefined): value is string {
  return value !== undefined && /^-?\d+$/.test(value);
}
