/**
 * The store contract: the one operation every backend implements ({@linkcode Store}: reserve a
 * range, with the floor and raise uniqueness needs), what it takes ({@linkcode ReserveOptions})
 * and returns ({@linkcode Reservation}, {@linkcode IdRange}); each optional capability as an
 * interface of its own with a guard that finds it by shape (give-back, step memory, durability
 * facts, cached reads, day cleanup, counter listing, server time); and where a counter's
 * remembered step and pool live ({@linkcode stepField}, {@linkcode poolField}). The engine
 * depends on this file alone; the Redis, interleaved, Deno KV, PostgreSQL and MySQL stores
 * implement it.
 *
 * @module
 */

/** The largest ID any store reserves: 2^63-1 (a signed 64-bit integer); past it is `overflow`. */
export const MAX_ID: bigint = (1n << 63n) - 1n;

/**
 * The name of a `DailyId` day's counter: `yyyymmdd`, eight digits (what
 * {@linkcode DayCleanup.deleteDaysBefore} deletes; every other field is left alone).
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
   * The reserved IDs as inclusive ranges in increasing order: one range `V - count + 1 .. V`
   * for a single counter, several when a store interleaves blocks.
   */
  ranges: IdRange[];
  /** True when the stored counter was below the floor and was raised first (a rollback). */
  raised: boolean;
  /**
   * The time to live, in ms, that the hash had and that this reservation removed, in the same
   * atomic step: something set a TTL on the counters; -1 when one was removed without reading
   * its length. Absent or 0 when none.
   */
  ttlRemovedMs?: number;
  /**
   * The counter's remembered step, when the reservation was asked to read it
   * ({@linkcode StepReserveOptions.loadStep}) and one was there.
   */
  step?: number;
  /**
   * The layout the store recorded and checked, echoed from
   * {@linkcode MemberReserveOptions.layout}; left out by a store that cannot record layouts,
   * which an interleaving store then refuses.
   */
  layout?: string;
  /**
   * The server's durability, read in the same call, when the reservation was asked to
   * ({@linkcode DurabilityReserveOptions.durability}). When the asker's verdict refuses it
   * ({@linkcode DurabilityOptions.judge}), `ranges` is empty: nothing is served.
   */
  durability?: StoreDurability;
}

/**
 * What every reservation carries: the floor and raise that uniqueness needs. A store with a
 * capability below may be sent that capability's options too ({@linkcode StepReserveOptions},
 * {@linkcode PoolReserveOptions}, {@linkcode DurabilityReserveOptions}; an interleaving store's
 * members {@linkcode MemberReserveOptions}); a store without it never is.
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
  /** Raise a counter found below `floor`. False: a plain increment, whatever it finds. */
  guard: boolean;
  /** The caller needs the value exactly even above 2^53 (bigint mode). */
  exact: boolean;
  /**
   * The options of the generator reserving, every one resolved (its defaults filled in), for a
   * store that reads its own from them by name (the Redis store: `replicas`, `waitAof`,
   * `timeout`, `durability`); undefined for a direct call (the service's segments, the CLI).
   *
   * @default {undefined}
   */
  generator?: GeneratorOptions;
}

/**
 * A generator's options as a store may read them ({@linkcode ReserveOptions.generator}): by
 * name, each checked and with its default filled in; a store reads those it knows.
 */
export type GeneratorOptions = Readonly<Record<string, unknown>>;

/** Sent only to a store that {@linkcode readsStepInReserve}. */
export interface StepReserveOptions {
  /**
   * Also read the counter's remembered step ({@linkcode stepField}) in the same atomic call and
   * reserve at least that many IDs (at most `maxCount`), reporting it in
   * {@linkcode Reservation.step}.
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
}

/** Sent only to a store that {@linkcode hasGiveBack}. */
export interface PoolReserveOptions {
  /**
   * Take the IDs from the counter's pool of given-back ranges ({@linkcode poolField}) first, when
   * it holds a range above `floor`: then the reservation may hold fewer IDs than `count`.
   *
   * @default {false}
   */
  pool?: boolean;
}

/** Sent only to a store that {@linkcode readsDurabilityInReserve}. */
export interface DurabilityReserveOptions {
  /**
   * Also read the server's durability, as {@linkcode DurabilityFacts.durability} would with
   * these options, in the same round trip, and reserve only if the asker's verdict
   * ({@linkcode DurabilityOptions.judge}) accepts what it read: a refused server's counter is
   * left untouched (or the range it reserved is spent) and the reply's `ranges` is empty. The
   * read is reported in {@linkcode Reservation.durability}. Asked by a generator's first
   * reservation: its first ID is then one round trip.
   *
   * @default {undefined}
   */
  durability?: DurabilityOptions;
}

/**
 * What an interleaving store ({@linkcode InterleavedStore}) sends each member besides
 * {@linkcode ReserveOptions}; a store that can be a member honours `layout`.
 */
export interface MemberReserveOptions {
  /**
   * The layout of the set for this member, e.g. `"v1 servers=3 block=1000 index=1"`; the
   * counter then counts this member's block cycles, not IDs. A store that supports it, in the
   * same atomic step as the increment: records the layout next to the counter on first use;
   * refuses with a `"config"` {@linkcode KvIdError} a counter holding another layout, or holding
   * a value and no layout (a single-store counter, whose value is an ID); and echoes it in
   * {@linkcode Reservation.layout}. Without `layout`, it refuses a counter that has one (a plain
   * increment of a block cycle would repeat the set's IDs). Undefined: a single-store counter.
   *
   * @default {undefined}
   */
  layout?: string;
  /**
   * The longest this member's reservation may take, in ms, a confirmation it waits for included
   * (the Redis store's `WAIT`/`WAITAOF`); undefined: the store's own bound.
   *
   * @default {undefined}
   */
  budgetMs?: number;
  /**
   * Bound a confirmation also to this many round trips of the reservation itself (at least
   * 200 ms in all), so a member whose replicas do not confirm is skipped quickly; undefined:
   * `budgetMs` alone.
   *
   * @default {undefined}
   */
  budgetRoundTrips?: number;
}

/** Every option a reservation may carry: the core and each capability's. */
export type AnyReserveOptions =
  & ReserveOptions
  & StepReserveOptions
  & PoolReserveOptions
  & DurabilityReserveOptions
  & MemberReserveOptions;

/**
 * What a store's server says it can lose, read from the server itself
 * ({@linkcode DurabilityFacts.durability}): facts only; the asker judges them.
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
 * What a generator tells {@linkcode DurabilityFacts.durability}.
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
 *   stated: { appendfsync: "always" },
 *   judge: (d) => d.problems.length === 0 ? undefined : new Error(d.problems.join("; ")),
 * };
 * assert.ok(options.stated.appendfsync === "always");
 * ```
 */
export interface DurabilityOptions {
  /** The counter asking (its name), for the errors. */
  field: string;
  /** The generator's `durability` option. */
  mode: "strict" | "best-effort";
  /** Settings the server will not tell, as the user states them (`serverSettings`). */
  stated: Readonly<Record<string, string>>;
  /**
   * The asker's verdict on a read: the error refusing it, or undefined when the store may serve.
   * A store that must decide within one call (a reservation that reads its durability, a
   * member of an interleaved set reached late) asks this; it never judges a read itself.
   */
  judge(d: StoreDurability): Error | undefined;
  /**
   * A generator's first read: a read of the same server and hash that no generator has had a
   * reason to doubt since ({@linkcode CachedReads.forgetReads}) may answer, so only the first
   * generator of a process waits for the server's answer. A re-read is false: the server is
   * read again.
   *
   * @default {false}
   */
  reuse?: boolean;
  /**
   * The options of the generator asking, as in {@linkcode ReserveOptions.generator}.
   *
   * @default {undefined}
   */
  generator?: GeneratorOptions;
}

/**
 * One counter as {@linkcode CounterListing.counters} reads it.
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
  /** The interleaved layout recorded next to the counter (`MemberReserveOptions.layout`). */
  layout?: string;
}

/**
 * What {@linkcode CounterListing.counters} reads.
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
 * Reserves ranges of IDs; one call is one atomic reservation. This is all a store must do;
 * each optional capability is an interface of its own, found by shape with its guard
 * ({@linkcode hasGiveBack}, {@linkcode hasDurability}, ...).
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
}

/**
 * A store that gives back the unused tail of the caller's last reservation, on close.
 * Without it (and without {@linkcode GiveBack}) the tail is a gap.
 */
export interface Release {
  /**
   * Set the counter to `range.first - 1` only if it still equals `range.last` (nobody reserved
   * since), atomically; never otherwise. Resolves to true when given back. A store that cannot
   * do it atomically leaves it out.
   */
  release(key: string, field: string, range: IdRange): Promise<boolean>;
}

/**
 * A store that gives back every unused range of the caller, on close; it then takes from that
 * pool when a reservation asks ({@linkcode PoolReserveOptions}).
 */
export interface GiveBack {
  /**
   * Give back `ranges` (increasing, from the caller's reservations) atomically: the one ending
   * at the counter's current value lowers the counter (as {@linkcode Release.release}), the
   * others go to the counter's pool ({@linkcode poolField}). Resolves to how many ranges were
   * given back (a full pool drops the rest: a gap, never a duplicate).
   */
  giveBack(key: string, field: string, ranges: IdRange[]): Promise<number>;
}

/** A store that remembers a counter's step next to it, for the next generator to start from. */
export interface StepMemory {
  /**
   * The step the counter's processes last used (see {@linkcode stepField}), or undefined. A new
   * generator starts from it instead of `minStep`.
   */
  loadStep(key: string, field: string): Promise<number | undefined>;
  /** Remember `step` next to the counter. */
  saveStep(key: string, field: string, step: number): Promise<void>;
}

/** A store whose reservation reads the remembered step itself ({@linkcode StepReserveOptions}). */
export interface StepReading {
  /** True: `reserve` honours {@linkcode StepReserveOptions.loadStep} (one round trip). */
  readonly reservesStep: true;
}

/**
 * A store that reads what its server can lose. A generator reads it before its first
 * reservation, after a reservation failed for a transient reason (a reconnect may have reached
 * a restarted or another server), after a refusal and after a rollback, and serves no ID of the
 * next reservation until it answered. A store without it is trusted.
 */
export interface DurabilityFacts {
  /** What the server behind hash `key` can lose. Rejects when the server cannot be reached. */
  durability(key: string, options: DurabilityOptions): Promise<StoreDurability>;
}

/**
 * A store whose reservation reads its durability itself ({@linkcode DurabilityReserveOptions}):
 * a generator's first ID is one round trip. A store with {@linkcode DurabilityFacts} alone is
 * read before its first reservation, one round trip more.
 */
export interface DurabilityInReserve extends DurabilityFacts {
  /** True: `reserve` honours {@linkcode DurabilityReserveOptions.durability}. */
  readonly readsDurability: true;
}

/**
 * A store that keeps reads of its server for other callers ({@linkcode DurabilityOptions.reuse}):
 * a generator that finds a reason to doubt them (a transient failure, a rollback, a refusal)
 * tells it to stop sharing them.
 */
export interface CachedReads {
  /** Stop sharing every read made so far: the next read of each hash reads the server again. */
  forgetReads(): void;
}

/** A store that deletes a `DailyId`'s old days ({@linkcode DAY_FIELD}). */
export interface DayCleanup {
  /**
   * Delete the counters of hash `key` whose field is a `yyyymmdd` day before `before` (a
   * `yyyymmdd` too), nothing else; resolves to how many. A `DailyId` on a store without it
   * refuses `keepDays`.
   */
  deleteDaysBefore(key: string, before: string): Promise<number>;
}

/** A store that lists its counters (the CLI's `get`, `list`, `daily`). */
export interface CounterListing {
  /**
   * The counters of hash `key` that exist, by name, each value exact (above 2^53 too). Never an
   * internal field (a remembered step, a layout, a pool: their names begin with NUL, or they
   * are columns), never another key's counter; a counter no reservation has set (a row a saved
   * step made, at 0) may be left out. An absent key is an empty map. A counter holding
   * something other than a non-negative integer rejects with a `"reply"` {@linkcode KvIdError}
   * (reason `"not-a-counter"`). Reads only: it never creates, raises or locks anything.
   */
  counters(key: string, options?: CountersOptions): Promise<Map<string, CounterValue>>;
}

/**
 * A store that names its counters in its own words, for messages: what a
 * {@linkcode KvIdError} names in parentheses (its `where` option). Without it, a counter is
 * named as a hash: `hash "kvid", field "order"`.
 */
export interface CounterWords {
  /**
   * Counter `field` of hash `key` in this store's words, e.g. `table kvid_counters, hash_key
   * "kvid", name "order"`; `""` names it as a hash.
   */
  describe(key: string, field: string): string;
}

/** A store that tells its server's clock. */
export interface ServerClock {
  /**
   * The server's clock, in ms since the epoch: the one clock every process sharing the store
   * sees. A {@linkcode DailyId} cleanup deletes a day only when it is old by both this clock
   * and the process's.
   */
  now(): Promise<number>;
}

/** What a capability guard is given: a store, whatever else it has (checked by shape). */
type Probed = Partial<Record<PropertyKey, unknown>> | null | undefined;
const method = (store: Store, name: string): boolean =>
  typeof (store as unknown as Probed)?.[name] === "function";

/**
 * True when `store` has {@linkcode Release}.
 *
 * @example
 * ```ts
 * import { hasRelease, type Store } from "@kvid/core/store";
 * import assert from "node:assert/strict";
 *
 * const store: Store = { reserve: () => Promise.reject(new Error("not called")) };
 * assert.ok(!hasRelease(store));
 * ```
 */
export function hasRelease<S extends Store>(store: S): store is S & Release {
  return method(store, "release");
}

/** True when `store` has {@linkcode GiveBack} (see {@linkcode hasRelease} for an example). */
export function hasGiveBack<S extends Store>(store: S): store is S & GiveBack {
  return method(store, "giveBack");
}

/** True when `store` has {@linkcode StepMemory} (both methods). */
export function hasStepMemory<S extends Store>(store: S): store is S & StepMemory {
  return method(store, "loadStep") && method(store, "saveStep");
}

/** True when `store` has {@linkcode StepReading}. */
export function readsStepInReserve<S extends Store>(store: S): store is S & StepReading {
  return (store as unknown as Probed)?.reservesStep === true;
}

/** True when `store` has {@linkcode DurabilityFacts}. */
export function hasDurability<S extends Store>(store: S): store is S & DurabilityFacts {
  return method(store, "durability");
}

/** True when `store` has {@linkcode DurabilityInReserve}. */
export function readsDurabilityInReserve<S extends Store>(
  store: S,
): store is S & DurabilityInReserve {
  return (store as unknown as Probed)?.readsDurability === true && hasDurability(store);
}

/** True when `store` has {@linkcode CachedReads}. */
export function hasCachedReads<S extends Store>(store: S): store is S & CachedReads {
  return method(store, "forgetReads");
}

/** True when `store` has {@linkcode DayCleanup}. */
export function hasDayCleanup<S extends Store>(store: S): store is S & DayCleanup {
  return method(store, "deleteDaysBefore");
}

/** True when `store` has {@linkcode CounterListing}. */
export function hasCounters<S extends Store>(store: S): store is S & CounterListing {
  return method(store, "counters");
}

/** True when `store` has {@linkcode CounterWords}. */
export function hasCounterWords<S extends Store>(store: S): store is S & CounterWords {
  return method(store, "describe");
}

/** True when `store` has {@linkcode ServerClock}. */
export function hasServerClock<S extends Store>(store: S): store is S & ServerClock {
  return method(store, "now");
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

/**
 * A store with each optional capability as an optional member: what a wrapper that forwards
 * every capability it finds holds (a lazy store, a counting one), checking each by shape.
 *
 * @example
 * ```ts
 * import type { AnyStore, Store } from "@kvid/core/store";
 * import assert from "node:assert/strict";
 *
 * const store: Store = { reserve: () => Promise.reject(new Error("not called")) };
 * const seen: AnyStore = store; // every capability optional
 * assert.ok(seen.giveBack === undefined && seen.now === undefined);
 * ```
 */
export type AnyStore =
  & Store
  & Partial<
    & Release
    & GiveBack
    & StepMemory
    & StepReading
    & DurabilityInReserve
    & CachedReads
    & DayCleanup
    & CounterListing
    & ServerClock
    & CounterWords
  >;
