/**
 * The store contract: what a backend implements ({@linkcode Store}), what one reservation takes
 * ({@linkcode ReserveOptions}) and returns ({@linkcode Reservation}, {@linkcode IdRange}), what
 * reading counters returns ({@linkcode CounterValue}), and where a counter's remembered step
 * lives ({@linkcode stepField}). The engine depends on this
 * file alone; the Redis, interleaved, Deno KV, PostgreSQL and MySQL stores implement it.
 *
 * @module
 */

/** The largest ID any store reserves: 2^63-1 (a signed 64-bit integer); past it is `overflow`. */
export const MAX_ID: bigint = (1n << 63n) - 1n;

/**
 * The name of a `DailyId` day's counter: `yyyymmdd`, eight digits (what
 * {@linkcode Store.deleteDaysBefore} deletes; every other field is left alone).
 */
export const DAY_FIELD: RegExp = /^\d{8}$/;

/**
 * An inclusive range of reserved IDs.
 *
 * @example The range of one `HINCRBY`
 * ```ts
 * import type { IdRange } from "@kvid/core/store";
 * import assert from "node:assert/strict";
 *
 * // `HINCRBY kvid order 100` replied 300: this reservation holds IDs 201..300.
 * const range: IdRange = { first: 300n - 100n + 1n, last: 300n };
 * assert.ok(range.first === 201n && range.last - range.first + 1n === 100n);
 * ```
 */
export interface IdRange {
  /** The first ID. */
  first: bigint;
  /** The last ID, >= first. */
  last: bigint;
}

/**
 * What one reservation returned.
 *
 * @example One counter, and interleaved servers
 * ```ts
 * import type { Reservation } from "@kvid/core/store";
 * import assert from "node:assert/strict";
 *
 * // `HINCRBY kvid order 100` replied 300: one range.
 * const plain: Reservation = { ranges: [{ first: 201n, last: 300n }], raised: false };
 * // Server 1 of 2 with blocks of 10 owns blocks 1, 3, 5, ...: 20 IDs are two ranges.
 * const interleaved: Reservation = {
 *   ranges: [{ first: 11n, last: 20n }, { first: 31n, last: 40n }],
 *   raised: false,
 * };
 * assert.ok(plain.ranges.length === 1 && interleaved.ranges.length === 2);
 * ```
 */
export interface Reservation {
  /**
   * The counter's remembered step, when the reservation was asked to read it
   * ({@linkcode ReserveOptions.loadStep}) and one was there.
   */
  step?: number;
  /**
   * The reserved IDs as inclusive ranges in increasing order: one range `V - count + 1 .. V`
   * for a single counter, several when a store interleaves blocks.
   */
  ranges: IdRange[];
  /** True when the stored counter was below the floor and was raised first (a rollback). */
  raised: boolean;
  /**
   * The layout the store recorded and checked, echoed from {@linkcode ReserveOptions.layout};
   * left out by a store that cannot record layouts, which an interleaving store then refuses.
   */
  layout?: string;
  /**
   * The time to live, in ms, that the hash had and that this reservation removed (`PERSIST`, in
   * the same atomic step): something set a TTL on the counters; -1 when one was removed without
   * reading its length (a server without scripting). Absent or 0 when none.
   */
  ttlRemovedMs?: number;
  /**
   * The server's durability, read in the same call, when the reservation was asked to
   * ({@linkcode ReserveOptions.durability}). When the read is refused (`durabilityRefusal` of
   * `contract/durability.ts`, in the asked mode), `ranges` is empty: nothing is served.
   */
  durability?: StoreDurability;
}

/**
 * How a reservation is made.
 *
 * @example What a guarded generator sends
 * ```ts
 * import type { ReserveOptions } from "@kvid/core/store";
 * import assert from "node:assert/strict";
 *
 * // A `KvId` with `rollbackMargin: 1000` that reserved IDs up to 300: a counter found below
 * // 300 (a server that lost data) is set to 1,300 before the increment.
 * const options: ReserveOptions = { floor: 300n, raiseTo: 1_300n, guard: true, exact: false };
 * assert.ok(options.raiseTo - options.floor === 1_000n);
 * ```
 */
export interface ReserveOptions {
  /** The highest ID the caller already holds; the counter is raised to `raiseTo` if below it. */
  floor: bigint;
  /** The value to raise a counter found below `floor` to (floor plus a safety margin). */
  raiseTo: bigint;
  /** Use the floor script. False: plain `HINCRBY`, no scripting. */
  guard: boolean;
  /** The caller needs the value exactly even above 2^53 (bigint mode). */
  exact: boolean;
  /**
   * Hand the range out only once this many replicas acknowledged the increment (`WAIT`);
   * 0: no wait.
   *
   * @default {0}
   */
  replicas?: number;
  /**
   * Hand the range out only once the server confirms the increment is fsynced to its AOF:
   * `WAITAOF 1 0 waitMs` (Redis and Valkey >= 7.2), then `WAIT` for `replicas`. Skipped on a server without `WAITAOF`. `KvId` passes its
   * `waitAof` option, on by default.
   *
   * @default {false}
   */
  waitAof?: boolean;
  /**
   * How long `WAIT` or `WAITAOF` may block, in ms (the reservation's time budget).
   *
   * @default {5_000}
   */
  waitMs?: number;
  /**
   * With `replicas`: bound `WAIT` also to this many round trips of the reservation itself (at
   * least 200 ms in all), so a member of an interleaved set whose replicas do not confirm is
   * skipped quickly instead of holding the whole budget; undefined: `waitMs` alone.
   *
   * @default {undefined}
   */
  waitRoundTrips?: number;
  /**
   * Set by an interleaving store ({@linkcode InterleavedStore}) on each member: the layout of the
   * set for this member, e.g. `"v1 servers=3 block=1000 index=1"`; the counter then counts this
   * member's block cycles, not IDs. A store that supports it, in the same atomic step as the
   * increment: records the layout next to the counter on first use; refuses with a `"config"`
   * {@linkcode KvIdError} a counter holding another layout, or holding a value and no layout (a
   * single-store counter, whose value is an ID); and echoes it in {@linkcode Reservation.layout}.
   * Without `layout`, it refuses a counter that has one (a plain increment of a block cycle
   * would repeat the set's IDs). Undefined: a single-store counter.
   *
   * @default {undefined}
   */
  layout?: string;
  /**
   * Also read the counter's remembered step ({@linkcode stepField}) in the same atomic call and
   * reserve at least that many IDs (at most `maxCount`), reporting it in
   * {@linkcode Reservation.step}. Asked only of a store whose `reservesStep` is true.
   *
   * @default {false}
   */
  loadStep?: boolean;
  /**
   * The most IDs `loadStep` may raise the count to (the generator's `maxStep`); undefined: the
   * count asked.
   *
   * @default {undefined}
   */
  maxCount?: number;
  /**
   * Take the IDs from the counter's pool of given-back ranges ({@linkcode poolField}) first, when
   * it holds a range above `floor`: then the reservation may hold fewer IDs than `count`.
   * Asked only of a store with `giveBack`.
   *
   * @default {false}
   */
  pool?: boolean;
  /**
   * Also read the server's durability, as {@linkcode Store.durability} would with these
   * options, in the same round trip, and reserve only if what it read is accepted (`durabilityRefusal`
   * of `contract/durability.ts`, in `mode`): a refused server's counter is left untouched (or the range it reserved is
   * spent) and the reply's `ranges` is empty. The read is reported in
   * {@linkcode Reservation.durability}. Asked only of a store whose `readsDurability` is true,
   * by a generator's first reservation: its first ID is then one round trip.
   *
   * @default {undefined}
   */
  durability?: DurabilityOptions;
}

/**
 * What a store's server says it can lose, read from the server itself
 * ({@linkcode Store.durability}).
 *
 * @example A Redis without AOF
 * ```ts
 * import type { StoreDurability } from "@kvid/core/store";
 * import assert from "node:assert/strict";
 *
 * const d: StoreDurability = {
 *   durable: false,
 *   settings: { appendonly: "no", save: "3600 1 300 100 60 10000", maxmemory_policy: "noeviction" },
 *   problems: ["AOF is off (appendonly no, snapshots only): ...; turn AOF on (CONFIG SET appendonly yes, ...)"],
 *   lossWithoutCrash: false,
 * };
 * assert.ok(!d.durable && d.problems.length === 1);
 * ```
 */
export interface StoreDurability {
  /**
   * True when a reservation the store confirmed survives a crash of the server and cannot be
   * evicted or expired (Redis: AOF on, no `allkeys-*` eviction; Deno KV).
   */
  durable: boolean;
  /**
   * The settings read, as the server names them, e.g. `{ appendonly: "no", appendfsync:
   * "everysec", maxmemory_policy: "noeviction" }`; a setting the server would not tell is
   * `"unknown"`.
   */
  settings: Record<string, string>;
  /**
   * Each way the store can lose a reservation, in words an operator acts on, naming the fix.
   * Empty when durable. Refused under `durability: "strict"`.
   */
  problems: string[];
  /**
   * True when a problem loses reservations in ordinary operation, with no crash (an eviction
   * policy that can evict the counter): refused under `"best-effort"` too.
   */
  lossWithoutCrash?: boolean;
}

/**
 * What a generator tells {@linkcode Store.durability}.
 *
 * @example
 * ```ts
 * import type { DurabilityOptions } from "@kvid/core/store";
 * import assert from "node:assert/strict";
 *
 * // A managed Redis that forbids CONFIG, whose operator knows it fsyncs every write.
 * const options: DurabilityOptions = {
 *   field: "order",
 *   mode: "strict",
 *   replicas: 0,
 *   stated: { appendfsync: "always" },
 * };
 * assert.ok(options.stated.appendfsync === "always");
 * ```
 */
export interface DurabilityOptions {
  /** The counter asking (its name), for the errors. */
  field: string;
  /** The generator's `durability` option. */
  mode: "strict" | "best-effort";
  /**
   * Replicas confirming each reservation (`WAIT`): with one or more, a server without AOF is
   * durable against the crash of one node.
   */
  replicas: number;
  /** Settings the server will not tell, as the user states them (`serverSettings`). */
  stated: Readonly<Record<string, string>>;
  /**
   * A generator's first read: a read of the same client and hash that no generator has had a
   * reason to doubt since (a transient failure, a rollback, a refusal) may answer, so only
   * the first generator of a process waits for the server's answer. A re-read (after one of
   * those) is false: the server is read again.
   *
   * @default {false}
   */
  reuse?: boolean;
}

/**
 * One counter as {@linkcode Store.counters} reads it.
 *
 * @example A plain counter and a member's
 * ```ts
 * import type { CounterValue } from "@kvid/core/store";
 * import assert from "node:assert/strict";
 *
 * const order: CounterValue = { value: 9_007_199_254_740_993n }; // exact above 2^53
 * const member: CounterValue = { value: 3n, layout: "v1 servers=2 block=1000 index=0" };
 * assert.ok(order.layout === undefined && member.value === 3n);
 * ```
 */
export interface CounterValue {
  /**
   * The stored value, exactly: the last ID reserved (the next is above it); for a counter
   * with a {@linkcode CounterValue.layout}, the member's next block cycle, not an ID.
   */
  value: bigint;
  /** The interleaved layout recorded next to the counter ({@linkcode ReserveOptions.layout}). */
  layout?: string;
}

/**
 * What {@linkcode Store.counters} reads.
 *
 * @example
 * ```ts
 * import type { CountersOptions } from "@kvid/core/store";
 * import assert from "node:assert/strict";
 *
 * const one: CountersOptions = { names: ["order"] }; // `kvid get order`
 * assert.ok(one.names?.length === 1);
 * ```
 */
export interface CountersOptions {
  /**
   * Read only these counters (those that exist are in the map); undefined: every counter of
   * the hash.
   *
   * @default {undefined}
   */
  names?: readonly string[];
}

/**
 * Reserves ranges of IDs; one call is one atomic reservation.
 *
 * @example An in-memory store for tests
 * ```ts
 * import { KvId } from "@kvid/core";
 * import type { Store } from "@kvid/core/store";
 * import assert from "node:assert/strict";
 *
 * const counters = new Map<string, bigint>(); // HINCRBY semantics, with the floor guard
 * const memory: Store = {
 *   reserve(key, field, count, { floor, raiseTo, guard }) {
 *     const found = counters.get(`${key}/${field}`) ?? 0n;
 *     const raised = guard && found < floor;
 *     const last = (raised ? raiseTo : found) + BigInt(count);
 *     counters.set(`${key}/${field}`, last);
 *     return Promise.resolve({ ranges: [{ first: last - BigInt(count) + 1n, last }], raised });
 *   },
 * };
 * await using ORDER_ID = new KvId("order", { store: memory });
 * assert.ok(await ORDER_ID.next() === 1 && await ORDER_ID.next() === 2);
 * ```
 */
export interface Store {
  /** Reserve `count` IDs of counter `field` in hash `key`. */
  reserve(key: string, field: string, count: number, options: ReserveOptions): Promise<Reservation>;
  /**
   * Optional, for {@linkcode DailyId} cleanup: delete the counters of hash `key` whose field is
   * a `yyyymmdd` day before `before` (a `yyyymmdd` too), nothing else; resolves to how many.
   * A `DailyId` on a store without it (and without `redis`) refuses `keepDays`.
   */
  deleteDaysBefore?(key: string, before: string): Promise<number>;
  /**
   * Optional: give back the unused tail `range` of the caller's last reservation, on close. Sets
   * the counter to `range.first - 1` only if it still equals `range.last` (nobody reserved
   * since), atomically; never otherwise. Resolves to true when given back. A store that cannot
   * do it atomically leaves it out.
   */
  release?(key: string, field: string, range: IdRange): Promise<boolean>;
  /**
   * Optional: give back every unused range of the caller (increasing, from its reservations), on
   * close, atomically: the one ending at the counter's current value lowers the counter (as
   * `release`), the others go to the counter's pool ({@linkcode poolField}), which the next
   * reservation with `pool` takes from first. Resolves to how many ranges were given back (a
   * full pool drops the rest: a gap, never a duplicate).
   */
  giveBack?(key: string, field: string, ranges: IdRange[]): Promise<number>;
  /**
   * Optional, for reading (the CLI's `get`, `list`, `daily`): the counters of hash `key` that
   * exist, by name, each value exact (above 2^53 too). Never an internal field (a remembered
   * step, a layout, a pool: their names begin with NUL, or they are columns), never another
   * key's counter; a counter no reservation has set (a row a saved step made, at 0) may be
   * left out. An absent key is an empty map. A counter holding something other than a
   * non-negative integer rejects with a `"reply"` {@linkcode KvIdError} (reason
   * `"not-a-counter"`). Reads only: it never creates, raises or locks anything.
   */
  counters?(key: string, options?: CountersOptions): Promise<Map<string, CounterValue>>;
  /** True when `reserve` honours {@linkcode ReserveOptions.loadStep} (one round trip). */
  readonly reservesStep?: boolean;
  /**
   * True when `reserve` honours {@linkcode ReserveOptions.durability} (the durability read and
   * the first reservation in one round trip). A store with `durability` but without this flag
   * is read before its first reservation, one round trip more.
   */
  readonly readsDurability?: boolean;
  /**
   * Optional: the step the counter's processes last used, remembered next to it (see
   * {@linkcode stepField}), or undefined. A new generator starts from it instead of `minStep`.
   */
  loadStep?(key: string, field: string): Promise<number | undefined>;
  /** Optional: remember `step` next to the counter for the next generator to start from. */
  saveStep?(key: string, field: string, step: number): Promise<void>;
  /**
   * Optional: read what the server behind hash `key` can lose. A generator calls it before its
   * first reservation, after a reservation failed for a transient reason (a reconnect may have
   * reached a restarted or another server), after a refusal and after a rollback, and serves no
   * ID of the next reservation until it answered. Rejects when the server cannot be reached.
   * A store without it is trusted.
   */
  durability?(key: string, options: DurabilityOptions): Promise<StoreDurability>;
  /**
   * Optional: the server's clock, in ms since the epoch: the one clock every process sharing
   * the store sees. A {@linkcode DailyId} cleanup deletes a day only when it is old by both
   * this clock and the process's (as it does with Redis' `TIME`).
   */
  now?(): Promise<number>;
  /**
   * Optional: counter `field` of hash `key` in this store's own words, for messages: what a
   * {@linkcode KvIdError} names in parentheses (its `where` option), e.g. `table
   * "kvid_counters", hash_key "kvid", name "order"`. A store without it, or answering `""`, is
   * named as a hash: `hash "kvid", field "order"`.
   */
  describe?(key: string, field: string): string;
}

/**
 * The hash field holding the step the processes of counter `field` last used: `"\0step:"`
 * then the name. The NUL byte keeps it apart from counter names a user would choose, and the
 * Rust crate, which only increments its own field, never reads it.
 *
 * @example
 * ```ts
 * import { stepField } from "@kvid/core/store";
 * import assert from "node:assert/strict";
 *
 * assert.ok(stepField("order") === "\0step:order"); // HGET kvid "\0step:order" -> "65536"
 * ```
 *
 * @param field The counter's name.
 * @returns The field next to it, in the same hash.
 */
export function stepField(field: string): string {
  return `\0step:${field}`;
}

/**
 * The hash field holding a counter's pool of given-back ranges: `"\0pool:"` then the name. Its
 * value is up to 64 ranges `first-last` in increasing order, separated by spaces; the Rust crate
 * never reads it (it increments its own field, above every pooled range).
 *
 * @example
 * ```ts
 * import { poolField } from "@kvid/core/store";
 * import assert from "node:assert/strict";
 *
 * assert.ok(poolField("order") === "\0pool:order"); // HGET kvid "\0pool:order" -> "901-1000"
 * ```
 *
 * @param field The counter's name.
 * @returns The field next to it, in the same hash.
 */
export function poolField(field: string): string {
  return `\0pool:${field}`;
}
