/**
 * The interleaved store: N independent stores (Redis servers, Deno KV databases, SQL databases,
 * or a mix), each handing out only its own blocks of IDs, as seed 003's outer and inner steps
 * do on several database instances.
 *
 * @module
 */

import { withDeadline } from "../../runtime/deadline_timer.ts";
import { KvIdError, type KvIdErrorReason, reasonOf } from "../../contract/errors.ts";
import {
  type AnyReserveOptions,
  type CachedReads,
  type DurabilityFacts,
  type DurabilityOptions,
  hasCachedReads,
  hasDurability,
  type IdRange,
  MAX_ID,
  type Reservation,
  type Store,
  type StoreDurability,
} from "../../contract/store.ts";
import { mergeDurability } from "../../contract/durability.ts";
import { toKvIdError } from "../../contract/store_errors.ts";
import { layoutOf } from "./layout.ts";

/**
 * Options of {@linkcode InterleavedStore}.
 *
 * @example Three stores, blocks of 10,000
 * ```ts
 * import { KvId } from "@kvid/core";
 * import { InterleavedStore, type InterleavedStoreOptions, type Store } from "@kvid/core/store";
 * import assert from "node:assert/strict";
 *
 * // Stores that fail, for the example: RedisStore, DenoKvStore, PostgresStore in an app.
 * const down = (name: string): Store => ({
 *   reserve: () => Promise.reject(new Error(`${name}: not in this example`)),
 * });
 * const options: InterleavedStoreOptions = { block: 10_000, timeout: 2_000 };
 * const store = new InterleavedStore([down("a"), down("b"), down("c")], options);
 * const ORDER_ID = new KvId("order", { store, timeout: 2_000 });
 * assert.ok(ORDER_ID.stats().segments === 0); // no I/O until the first ID
 * ```
 */
export interface InterleavedStoreOptions {
  /** IDs per block, >= 1. @default {1_000} */
  block?: number;
  /**
   * The longest one reservation may take in ms, over every member tried (the generator's
   * `timeout`); one member is given at most this divided by the number of members.
   * @default {5_000}
   */
  timeout?: number;
}

/** The default number of IDs per block. */
const DEFAULT_BLOCK = 1000;
/**
 * The most members an interleaved store takes.
 *
 * @example
 * ```ts
 * import { MAX_MEMBERS } from "@kvid/core/store";
 * import assert from "node:assert/strict";
 *
 * assert.ok(MAX_MEMBERS === 1024);
 * ```
 */
export const MAX_MEMBERS = 1024;
// Blocks per reservation at most: a reservation is one segment object per block.
const MAX_BLOCKS = 1024;
// Per-member attempt time limit: this many smoothed round-trip times, at least MIN_ATTEMPT_MS.
const RTT_FACTOR = 8;
const MIN_ATTEMPT_MS = 200;
const MEMBER_BACKOFF_BASE_MS = 100;
const MEMBER_BACKOFF_MAX_MS = 2_000;

/** What is known of one member's health, shared by every interleaved store over it. */
interface Health {
  failures: number;
  retryAt: number;
  /** Smoothed round-trip time of successful reservations, ms; undefined before the first. */
  srtt: number | undefined;
}
const healths = new WeakMap<Store, Health>();
/** A reply in time: smooth it into the round-trip estimate. */
function learn(health: Health, rtt: number): void {
  health.srtt = health.srtt === undefined ? rtt : 0.875 * health.srtt + 0.125 * rtt;
}
/** A reply after its attempt was given up: the link is at least that slow. */
function learnLate(health: Health, rtt: number): void {
  health.srtt = Math.max(health.srtt ?? 0, rtt);
}
function healthOf(member: Store): Health {
  let h = healths.get(member);
  if (h === undefined) healths.set(member, h = { failures: 0, retryAt: 0, srtt: undefined });
  return h;
}

/**
 * A {@linkcode Store} over N independent stores that never share an ID, in the style of Flickr's
 * ticket servers, TinyID's delta/remainder and seed 003's outer and inner steps: IDs are cut in
 * blocks of `block`, and member `i` only ever issues blocks whose index is `i` modulo N. Block
 * `b` holds the IDs `b * block + 1 .. (b + 1) * block`. The members are any stores that record
 * a layout (`MemberReserveOptions.layout`): `RedisStore`, `DenoKvStore`, the SQL stores, or a
 * mix of them.
 *
 * - Each member's own counter counts that member's block cycles `m`: its next block is
 *   `m * N + i`. A reservation of `count` IDs takes `ceil(count / block)` whole blocks (at most
 *   1,024: fewer IDs than asked then) of one member, one atomic reservation on it, one range per
 *   block.
 * - Reservations go to the members in turn. A member that errors or does not answer in time (a
 *   few round-trip times, at least 200 ms, at most `timeout / N`) is skipped and tried again
 *   after a backoff (up to 2 s); IDs flow while one member answers. A late reply is dropped:
 *   its blocks are spent, never handed out.
 * - Every reservation sends the caller's highest ID as a floor (in cycles), whatever `guard`
 *   says: a member that was down or behind jumps to its first block above the floor instead of
 *   issuing old, lower IDs. A member found below what this store already got from it (data
 *   lost) is reported as `raised`, when the floor was this store's own mark.
 * - The layout (N, block, i) is recorded next to the counter on each member with its first
 *   increment and checked by every reservation on the member it goes to, atomically with the
 *   increment: a member holding another layout, or a single-store counter (a value and no
 *   layout), is refused with a `"config"` {@linkcode KvIdError}, since either would break the
 *   residue rule; so is a member store that does not record layouts. Every generator of a
 *   counter must list the same stores in the same order; members left out of a list cannot
 *   check it.
 * - Every value is exact up to 2^63-1; past it, `"overflow"`.
 * - It has no `counters` (`CounterListing`): an interleaved counter is no one value
 *   (each member holds its own block cycle, and the highest ID handed out is not the next one's
 *   floor, since members run apart). Read the members' own: each lists the cycle with its
 *   layout (`kvid list` on a member's URL).
 *
 * @example A Redis server and a Deno KV file, blocks of 1,000
 * ```ts ignore
 * import { KvId, RedisStore } from "@kvid/core";
 * import { DenoKvStore } from "@kvid/core/deno-kv";
 * import { InterleavedStore } from "@kvid/core/store";
 *
 * const members = [new RedisStore(redis), new DenoKvStore("./ids.sqlite3")];
 * const ORDER_ID = new KvId("order", { store: new InterleavedStore(members, { block: 1000 }) });
 * // Redis servers alone: the same as new KvId("order", { redis: [a, b, c], block: 1000 })
 * ```
 */
export class InterleavedStore implements Store, DurabilityFacts, CachedReads {
  readonly #members: readonly Store[];
  readonly #block: bigint;
  readonly #blockSize: number;
  readonly #timeout: number;
  // Next member to try first: rotated after each success.
  #next: number;
  // Per counter, the cycle each member's counter reached through this store (rollback check).
  readonly #seen = new Map<string, bigint[]>();
  // Each member's durability as last probed; undefined: not yet, or failed since.
  readonly #probed: (StoreDurability | undefined)[] = [];
  // What the generator asked durability() with: applied to a member probed later.
  #durabilityOptions: DurabilityOptions | undefined;

  /**
   * A store over `members`; no I/O until the first reservation.
   *
   * @param members The stores, at least one, each once. Their order is part of the layout: keep
   *   it.
   * @param options The block size and time budget.
   */
  constructor(members: readonly Store[], options: InterleavedStoreOptions = {}) {
    if (!Array.isArray(members) || members.length === 0 || members.length > MAX_MEMBERS) {
      throw new RangeError(`InterleavedStore takes 1 to ${MAX_MEMBERS} stores`);
    }
    members.forEach((m, i) => {
      if (typeof (m as Partial<Store> | null)?.reserve !== "function") {
        throw new TypeError(`InterleavedStore: member ${i} is not a store (no reserve method)`);
      }
    });
    if (new Set(members).size !== members.length) {
      throw new TypeError("InterleavedStore: the same store is given twice");
    }
    const block = options.block ?? DEFAULT_BLOCK;
    if (!Number.isSafeInteger(block) || block < 1) {
      throw new RangeError(`InterleavedStore block must be a positive safe integer, got ${block}`);
    }
    const timeout = options.timeout ?? 5_000;
    if (!(timeout > 0)) {
      throw new RangeError(`InterleavedStore timeout must be positive, got ${timeout}`);
    }
    this.#members = [...members];
    this.#blockSize = block;
    this.#block = BigInt(block);
    this.#timeout = timeout;
    this.#next = Math.floor(Math.random() * members.length);
  }

  /** The number of members. */
  get members(): number {
    return this.#members.length;
  }

  /** IDs per block. */
  get block(): number {
    return this.#blockSize;
  }

  /** The layout recorded on member `index`: what must match on every later use. */
  layout(index: number): string {
    return layoutOf(this.#members.length, this.#blockSize, index);
  }

  /** Reserve at least `count` IDs (whole blocks) from the next member that answers. */
  async reserve(
    key: string,
    field: string,
    count: number,
    options: AnyReserveOptions,
  ): Promise<Reservation> {
    const n = this.#members.length;
    const blocks = Math.min(MAX_BLOCKS, Math.max(1, Math.ceil(count / this.#blockSize)));
    const deadline = performance.now() + this.#timeout;
    const errors: KvIdError[] = [];
    const order = this.#order();
    for (const [tried, i] of order.entries()) {
      const health = healthOf(this.#members[i]);
      const left = deadline - performance.now();
      if (left <= 0) break;
      // A member whose round trip is not known yet gets a fair share of what is left, so a slow
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
        if (isRefusal(error)) {
          throw new KvIdError(error.code, `member ${i}: ${reasonOf(error)}`, {
            key,
            field,
            reason: error.reason,
            cause: error,
          });
        }
        // It may come back restarted or replaced: probed again before its next reservation.
        this.#probed[i] = undefined;
        health.failures++;
        health.retryAt = performance.now() + memberBackoff(health.failures);
        errors.push(error);
      }
    }
    // Each member's reason without the counter's label, which the whole message ends with.
    const summary = errors.map((e) => reasonOf(e)).join("; ") || "no time left";
    const all = errors.length === n && errors.every((e) => e.code === "reply");
    // The same refusal from every member will not heal by retrying soon: say it as such.
    throw new KvIdError(
      all ? "reply" : "connection",
      `none of the ${n} members could reserve: ${summary}`,
      { key, field, cause: errors.length === 1 ? errors[0] : new AggregateError(errors) },
    );
  }

  /** Member indexes to try: due ones in turn from `#next`, then those backing off, soonest first. */
  #order(): number[] {
    const n = this.#members.length;
    const now = performance.now();
    const due: number[] = [];
    const later: number[] = [];
    for (let j = 0; j < n; j++) {
      const i = (this.#next + j) % n;
      (healthOf(this.#members[i]).retryAt <= now ? due : later).push(i);
    }
    later.sort((a, b) => healthOf(this.#members[a]).retryAt - healthOf(this.#members[b]).retryAt);
    return due.concat(later);
  }

  /** One reservation on member `i`, given up after `limitMs`. */
  async #attempt(
    i: number,
    key: string,
    field: string,
    blocks: number,
    options: AnyReserveOptions,
    limitMs: number,
  ): Promise<Reservation> {
    const started = performance.now();
    // A late reply is dropped: its blocks are spent, never handed out. Its round trip is
    // learned, so the next attempt on a slower link than measured so far waits long enough.
    // (A timer late because the event loop was blocked gives the reply more time.)
    return await withDeadline(
      this.#run(i, key, field, blocks, options, limitMs),
      limitMs,
      () =>
        new KvIdError("timeout", `member ${i} did not answer within ${Math.round(limitMs)} ms`, {
          key,
          field,
        }),
      (late) => {
        if (late.status === "fulfilled") {
          learnLate(healthOf(this.#members[i]), performance.now() - started);
        }
      },
    );
  }

  async #run(
    i: number,
    key: string,
    field: string,
    blocks: number,
    options: AnyReserveOptions,
    limitMs: number,
  ): Promise<Reservation> {
    const where = { key, field };
    const n = BigInt(this.#members.length);
    const b = this.#block;
    const index = BigInt(i);
    const k = BigInt(blocks);
    // The highest cycle whose block fits under 2^63-1 (>= 0: a block is at most 2^53-1 IDs and
    // there are at most 1,024 members, so at least one cycle fits).
    const lastCycle = (MAX_ID / b - index - 1n) / n;
    const counter = `${key}\u0000${field}`;
    let seen = this.#seen.get(counter);
    if (seen === undefined) this.#seen.set(counter, seen = new Array(Number(n)).fill(0n));
    // Being behind the caller's floor is normal here (the other members moved on): the member
    // jumps to its first cycle above it. Below this store's own last reply is data loss.
    const mark = seen[i];
    const floorCycle = max(this.#cycleAbove(options.floor, index), mark);
    const raiseCycle = max(this.#cycleAbove(options.raiseTo, index), floorCycle);
    if (floorCycle + k - 1n > lastCycle) {
      throw new KvIdError("overflow", "the counter would pass 2^63-1", where);
    }
    const policy = this.#durabilityOptions;
    if (policy !== undefined && this.#probed[i] === undefined) {
      // A member first reached (or back) since the generator's probe: probed now, and refused
      // like the whole store would be.
      // Read from the server itself: a read shared by another generator may be from before
      // this member went away.
      const d = await this.#probe(i, key, { ...policy, reuse: false }, limitMs);
      const only = this.#members.map((_, j) => j === i ? d : undefined);
      const refusal = policy.judge(mergeDurability(only));
      if (refusal !== undefined) {
        this.#probed[i] = undefined; // read again at its next use: refused until it is durable
        throw refusal;
      }
    }
    const layout = this.layout(i);
    // The member's own confirmation (the Redis store's WAITAOF, WAIT) fits in this attempt, in
    // 90% of the generator's timeout, and in a few round trips of its reservation: a member
    // that does not confirm is skipped quickly, its blocks spent.
    const timeout = options.generator?.timeout;
    const asked = typeof timeout === "number" ? timeout * 0.9 : limitMs;
    const budgetMs = Math.max(1, Math.floor(Math.min(asked, limitMs * 0.9)));
    const memberOptions: AnyReserveOptions = {
      ...options,
      floor: floorCycle,
      raiseTo: raiseCycle,
      guard: true,
      exact: true,
      // Cycles, not IDs: a member is asked for exactly `blocks` of them, never a remembered
      // step's worth or a given-back range.
      loadStep: false,
      maxCount: undefined,
      pool: false,
      budgetMs,
      budgetRoundTrips: RTT_FACTOR,
      layout,
    };
    const reply = await this.#members[i].reserve(key, field, blocks, memberOptions);
    if (reply.layout !== layout) {
      throw new KvIdError(
        "config",
        `this store does not record interleaved layouts (its reservation did not echo MemberReserveOptions.layout): its blocks could not be checked; use stores that do (RedisStore, DenoKvStore, the SQL stores)`,
        where,
      );
    }
    const got = reply.ranges;
    if (got.length !== 1 || got[0].last - got[0].first + 1n !== k || got[0].first < 1n) {
      throw new KvIdError("reply", "the store replied an unexpected range of cycles", {
        ...where,
        reason: "unexpected-range",
        cause: new Error(JSON.stringify(got, (_, v) => typeof v === "bigint" ? String(v) : v)),
      });
    }
    // The counter counts cycles: it held m and now m + k, so this reservation has m .. m+k-1.
    const first = got[0].first - 1n;
    if (first + k - 1n > lastCycle) {
      throw new KvIdError("overflow", "the counter would pass 2^63-1", where);
    }
    seen[i] = first + k;
    // The member raised its counter: found below our own mark only when the floor was the mark.
    const raised = reply.raised && floorCycle === mark && mark > 0n;
    const ranges = this.#ranges(first, index, blocks);
    return { ranges, raised, ttlRemovedMs: reply.ttlRemovedMs };
  }

  /**
   * What the members can lose for hash `key`: each one's own `durability()` (a
   * member without it is trusted, as a store alone is), merged: durable when every one is. A
   * member that does not answer is left out and probed before its next reservation, with the
   * same `options`: one that would be refused then is refused, as the whole store is.
   */
  async durability(key: string, options: DurabilityOptions): Promise<StoreDurability> {
    this.#durabilityOptions = options;
    const limit = Math.max(MIN_ATTEMPT_MS, this.#timeout / 2);
    await Promise.all(this.#members.map(async (_, i) => {
      try {
        await this.#probe(i, key, options, limit);
      } catch {
        this.#probed[i] = undefined; // down: probed before its next use
      }
    }));
    return mergeDurability(this.#members.map((_, i) => this.#probed[i]));
  }

  /** Probe member `i`, within `limitMs`. */
  async #probe(
    i: number,
    key: string,
    options: DurabilityOptions,
    limitMs: number,
  ): Promise<StoreDurability> {
    const member = this.#members[i];
    if (!hasDurability(member)) {
      return this.#probed[i] = {
        durable: true,
        settings: { probe: "none (trusted)" },
        problems: [],
      };
    }
    const d = await withDeadline(
      member.durability(key, options),
      limitMs,
      () =>
        new KvIdError("timeout", `member ${i} did not answer the durability probe`, {
          key,
          field: options.field,
        }),
    );
    this.#probed[i] = d;
    return d;
  }

  /** Have every member that shares its server's reads stop sharing them. */
  forgetReads(): void {
    for (const member of this.#members) if (hasCachedReads(member)) member.forgetReads();
  }

  /** The least cycle m >= 0 whose block m * N + i starts above `floor`. */
  #cycleAbove(floor: bigint, index: bigint): bigint {
    if (floor <= 0n) return 0n;
    const b = this.#block;
    const n = BigInt(this.#members.length);
    const firstBlock = (floor + b - 1n) / b; // the least block index b with b * block >= floor
    // d >= 1 - index > -n, so this is 0 when the member's first block is already above.
    const d = firstBlock - index;
    return (d + n - 1n) / n;
  }

  /** The ranges of `blocks` consecutive cycles from `first` on member `index`, adjacent ones merged. */
  #ranges(first: bigint, index: bigint, blocks: number): IdRange[] {
    const n = BigInt(this.#members.length);
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

function max(a: bigint, b: bigint): bigint {
  return a > b ? a : b;
}

/** Errors that are the counter's or the configuration's, the same on every member. */
function isRefusal(error: KvIdError): boolean {
  if (error.code === "config" || error.code === "overflow") return true;
  return error.code === "reply" && REFUSED_REPLIES.has(error.reason);
}

// A counter's own state, the same on every member that holds it: retrying another member
// cannot heal it. Other "reply" errors (a member refusing a statement) may be that member's.
const REFUSED_REPLIES = new Set<KvIdErrorReason>([
  "not-a-hash",
  "not-a-counter",
  "unexpected-range",
]);

function memberBackoff(failures: number): number {
  const ms = Math.min(
    MEMBER_BACKOFF_MAX_MS,
    MEMBER_BACKOFF_BASE_MS * 2 ** Math.min(failures - 1, 16),
  );
  return ms / 2 + Math.random() * ms / 2;
}
