/**
 * The live generators of the ID service: one {@linkcode KvId} or {@linkcode DailyId} per name,
 * created on first use, capped in number, measured through a timing wrapper of the store.
 *
 * @module
 */

import { DailyId } from "../daily/daily.ts";
import { KvId, NUMBERS_WHILE_SAFE, TAKE_RUN } from "../engine/kvid.ts";
import type { DurabilityReport, KvIdErrorSummary, KvIdOptions } from "../engine/kvid_options.ts";
import type { DailyIdOptions } from "../daily/daily_options.ts";
import type { AnyStore, Store } from "../contract/store.ts";
import type { DurabilityMode } from "../contract/durability.ts";
import { deadlineTimer } from "../runtime/deadline_timer.ts";
import { inScope, type Scope } from "./auth.ts";
import { Histogram } from "./histogram.ts";
import { RateRing } from "./rates.ts";

/** The two kinds of endpoint. */
export type Kind = "ids" | "daily";

/** What the service knows of one generator, JSON-safe (no bigint, no Error). */
export interface GeneratorSnapshot {
  kind: Kind;
  name: string;
  /** IDs handed out by this service. */
  issued: number;
  reservations: number;
  /** Reservations that failed, or had not answered within the timeout. */
  failures: number;
  /** Requests answered 5xx because no ID could be had from the store. */
  failedRequests: number;
  stalls: number;
  rollbacks: number;
  step: number;
  remaining: number;
  /** Mean IDs/s over the last 10 s. */
  rate: number;
  /** Epoch ms of the last successful reservation, or null. */
  lastReservationAt: number | null;
  lastReservationMs: number | null;
  /** `code: message` of the last failed reservation (cleared by a success), or null. */
  lastError: string | null;
  /** DailyId only: the day being issued (`yyyymmdd`), or null. */
  day: string | null;
  /** What the store said when last asked: durable or not; null before, or a store that does not say. */
  durable: boolean | null;
  /** What the store can lose, each naming the fix (empty when durable or not known). */
  durabilityProblems: string[];
  /** Times a reservation found a TTL on the hash and removed it. */
  ttlRemovals: number;
}

/** Options of {@linkcode Generators}. */
export interface GeneratorsOptions {
  store: Store;
  /** At most this many live generators; a new name past it is refused (HTTP 429). */
  max: number;
  /** A generator unused this long (ms) may be closed to make room for a new name. */
  idleMs: number;
  /** The generators' `timeout` option (ms). */
  timeout: number;
  /** The DailyId time zone. */
  timeZone: string;
  /** The generators' `durability` option. */
  durability: DurabilityMode;
  /**
   * Options per name (`"*"`: every name not listed).
   *
   * @default {undefined}
   */
  names?: Readonly<Record<string, NameOptions>>;
}

/**
 * A generator's options that the service's configuration may set per name: the step options of
 * both kinds (`initialStep`: `/v1/ids` only), and the sequence digits and time zone of
 * `/v1/daily`. They are `KvId`'s and `DailyId`'s own options, with their meaning and bounds; one
 * left out is that generator's default (`maxStep`: each kind's own).
 */
export interface NameOptions
  extends
    Pick<KvIdOptions, "minStep" | "maxStep" | "initialStep" | "segmentDuration">,
    Pick<DailyIdOptions, "digits"> {
  /**
   * `/v1/daily` only: the time zone of the name's days.
   * @default {the service's timeZone}
   */
  timeZone?: string;
}

// Every option of NameOptions and the kinds of generator it applies to (the compiler holds the
// keys to the interface's).
const NAME_OPTION_KINDS: { readonly [K in keyof NameOptions]-?: readonly Kind[] } = {
  minStep: ["ids", "daily"],
  maxStep: ["ids", "daily"],
  initialStep: ["ids"],
  segmentDuration: ["ids", "daily"],
  digits: ["daily"],
  timeZone: ["daily"],
};

/** The keys {@linkcode NameOptions} has. */
export const NAME_OPTION_KEYS: readonly (keyof NameOptions)[] = Object.keys(
  NAME_OPTION_KINDS,
) as (keyof NameOptions)[];

/** The options of `own` that apply to a generator of `kind`, those given. */
export function nameOptionsFor(kind: Kind, own: NameOptions): NameOptions {
  const out: Record<string, unknown> = {};
  for (const k of NAME_OPTION_KEYS) {
    if (own[k] !== undefined && NAME_OPTION_KINDS[k].includes(kind)) out[k] = own[k];
  }
  return out;
}

type Generator = {
  next(): Promise<number | bigint | string>;
  nextBatch(count: number): Promise<(number | bigint | string)[]>;
  close(): Promise<void>;
  addEventListener(type: string, listener: () => void): void;
};

/** One live generator and its counters. */
export class Entry {
  readonly kind: Kind;
  readonly name: string;
  readonly gen: Generator;
  /**
   * `/v1/ids` only: take `count` buffered IDs now and return the first of the run, or -1 (then
   * `gen.nextBatch()`); see TAKE_RUN. Undefined for `/v1/daily`.
   */
  readonly takeRun: ((count: number) => number) | undefined;
  readonly histogram: Histogram = new Histogram();
  /** IDs per second of this generator over the last 5 minutes (the chart of a scoped token). */
  readonly rates: RateRing = new RateRing(301);
  issued = 0;
  reservations = 0;
  /** Reservations that failed, or had not answered within the timeout. */
  failures = 0;
  /** Requests answered 5xx because no ID could be had from the store. */
  failedRequests = 0;
  rollbacks = 0;
  ttlRemovals = 0;
  pending = 0;
  lastUsed = 0;
  lastReservationAt: number | null = null;
  lastReservationMs: number | null = null;
  // DailyId starts a new engine every day: stalls of past days are carried here.
  #stallsBefore = 0;
  #stallsSeen = 0;
  #day: string | undefined;

  constructor(kind: Kind, name: string, options: GeneratorsOptions) {
    this.kind = kind;
    this.name = name;
    const store = timedStore(options.store, this, options.timeout);
    // Throws a TypeError/RangeError on a bad name: the caller answers 400.
    const own = options.names?.[name] ?? options.names?.["*"] ?? {};
    this.gen = kind === "ids"
      ? new KvId(name, {
        store,
        bigint: true,
        timeout: options.timeout,
        durability: options.durability,
        ...nameOptionsFor("ids", own),
      })
      : new DailyId(name, {
        store,
        format: "string",
        timeout: options.timeout,
        durability: options.durability,
        ...nameOptionsFor("daily", own),
        timeZone: own.timeZone ?? options.timeZone,
      });
    // Exact to 2^63-1, and numbers below 2^53: half the cost of a batch of bigints as text.
    if (this.gen instanceof KvId) {
      const gen = this.gen as unknown as {
        [NUMBERS_WHILE_SAFE](): void;
        [TAKE_RUN](count: number): number;
      };
      gen[NUMBERS_WHILE_SAFE]();
      this.takeRun = (count) => gen[TAKE_RUN](count);
    } else {
      this.takeRun = undefined;
    }
    this.gen.addEventListener("rollback", () => this.rollbacks++);
    this.gen.addEventListener("expiry", () => this.ttlRemovals++);
  }

  /** The engine's own state, mapped to JSON-safe values. */
  snapshot(nowMs: number): GeneratorSnapshot {
    let step = 0, remaining = 0, stalls = 0, lastError: KvIdErrorSummary | undefined, day = null;
    let durability: DurabilityReport | undefined;
    if (this.gen instanceof KvId) {
      const s = (this.gen as KvId<bigint>).stats();
      ({ step, remaining, stalls, lastError, durability } = s);
    } else {
      const d = (this.gen as DailyId<string>).stats();
      day = d.day ?? null;
      if (d.day !== this.#day) {
        this.#stallsBefore += this.#stallsSeen;
        this.#stallsSeen = 0;
        this.#day = d.day;
      }
      if (d.counter !== undefined) {
        ({ step, remaining, lastError, durability } = d.counter);
        this.#stallsSeen = d.counter.stalls;
      }
      stalls = this.#stallsBefore + this.#stallsSeen;
    }
    return {
      kind: this.kind,
      name: this.name,
      issued: this.issued,
      reservations: this.reservations,
      failures: this.failures,
      failedRequests: this.failedRequests,
      stalls,
      rollbacks: this.rollbacks,
      step,
      remaining,
      rate: this.rates.rate(nowMs, 10),
      lastReservationAt: this.lastReservationAt,
      lastReservationMs: this.lastReservationMs,
      lastError: lastError === undefined ? null : `${lastError.code}: ${lastError.message}`,
      day,
      durable: durability?.durable ?? null,
      durabilityProblems: durability?.problems ?? [],
      ttlRemovals: this.ttlRemovals,
    };
  }
}

/** What {@linkcode timedStore} counts: an {@linkcode Entry}'s reservation counters. */
export type ReservationCounters = Pick<
  Entry,
  "failures" | "reservations" | "lastReservationAt" | "lastReservationMs" | "histogram"
>;

/**
 * The store as a generator of the service sees it: `reserve` (and the `durability` read before
 * it) timed and counted into `counters`, and every other member of the wrapped store forwarded
 * as it is, whatever the store offers (give-back on close, the remembered step read in the
 * reservation, day cleanup, the server's clock, and any method the contract gains later), and
 * only those: the engine decides what to do by which methods a store has. A method is called
 * on the wrapped store itself, so a class with private fields works through it.
 */
export function timedStore(
  inner: AnyStore,
  counters: ReservationCounters,
  timeoutMs: number,
): AnyStore {
  // A call still unanswered when the requests waiting for it gave up (a store that hangs, a
  // client queueing commands while it reconnects) is a failure then, not never. A loop blocked
  // by other work does not count against the store (deadlineTimer).
  const counted = async <T>(call: () => Promise<T>): Promise<T> => {
    let late = false;
    const cancel = deadlineTimer(timeoutMs, () => {
      late = true;
      counters.failures++;
    });
    try {
      return await call();
    } catch (err) {
      if (!late) counters.failures++;
      throw err;
    } finally {
      cancel();
    }
  };
  const reserve: Store["reserve"] = async (key, field, count, reserveOptions) => {
    const start = performance.now();
    try {
      const reservation = await counted(() => inner.reserve(key, field, count, reserveOptions));
      counters.reservations++;
      counters.lastReservationAt = Date.now();
      counters.lastReservationMs = performance.now() - start;
      return reservation;
    } finally {
      counters.histogram.observe((performance.now() - start) / 1000);
    }
  };
  // A generator's first reservation reads the store's durability before anything else: a store
  // that does not answer fails there, and that is a failed reservation too.
  const durability: AnyStore["durability"] = (key, options) =>
    counted(() => inner.durability!(key, options));
  const bound = new Map<PropertyKey, { of: unknown; fn: unknown }>();
  return new Proxy(inner, {
    get(target, prop) {
      if (prop === "reserve") return reserve;
      const value = Reflect.get(target, prop, target);
      if (prop === "durability" && typeof value === "function") return durability;
      if (typeof value !== "function") return value;
      let b = bound.get(prop);
      if (b === undefined || b.of !== value) {
        bound.set(
          prop,
          b = { of: value, fn: (value as (...a: unknown[]) => unknown).bind(target) },
        );
      }
      return b.fn;
    },
  });
}

/** The registry: at most `max` live generators, the least recently used idle one evicted. */
export class Generators {
  readonly #options: GeneratorsOptions;
  // Insertion order is use order (an entry is moved to the end when used): the first is the
  // least recently used.
  readonly #entries = new Map<string, Entry>();
  // The most recently used entry (the map's last): asked for again, it stays where it is.
  #last: Entry | undefined;
  readonly #closing = new Set<Promise<void>>();
  /** IDs/s of all generators over the last 5 minutes. */
  readonly rates: RateRing = new RateRing(301);

  constructor(options: GeneratorsOptions) {
    this.#options = options;
  }

  /** How many are live. */
  get size(): number {
    return this.#entries.size;
  }

  /** Every live entry. */
  entries(): IterableIterator<Entry> {
    return this.#entries.values();
  }

  /** The live entries whose names `scope` covers. */
  visibleTo(scope: Scope): Entry[] {
    const all = [...this.#entries.values()];
    return scope === "*" ? all : all.filter((e) => inScope(scope, e.name));
  }

  /**
   * The entry of `name`, created when new; undefined when the cap is hit and none can be
   * evicted. Throws on a name the engine refuses.
   */
  get(kind: Kind, name: string, nowMs: number): Entry | undefined {
    const last = this.#last;
    if (last !== undefined && last.name === name && last.kind === kind) {
      last.lastUsed = nowMs;
      return last;
    }
    const id = `${kind}:${name}`;
    let entry = this.#entries.get(id);
    if (entry !== undefined) {
      this.#entries.delete(id);
    } else {
      if (this.#entries.size >= this.#options.max && !this.#evictOne(nowMs)) return undefined;
      entry = new Entry(kind, name, this.#options);
    }
    this.#entries.set(id, entry);
    this.#last = entry;
    entry.lastUsed = nowMs;
    return entry;
  }

  /** Forget `entry` (a name the store refused) and close its generator. */
  drop(entry: Entry): void {
    const id = `${entry.kind}:${entry.name}`;
    if (this.#entries.get(id) === entry) this.#entries.delete(id);
    if (this.#last === entry) this.#last = undefined;
    this.#track(entry.gen.close());
  }

  #evictOne(nowMs: number): boolean {
    const [id, lru] = this.#entries.entries().next().value!;
    if (lru.pending > 0 || !(nowMs - lru.lastUsed >= this.#options.idleMs)) return false;
    this.#entries.delete(id);
    if (this.#last === lru) this.#last = undefined;
    this.#track(lru.gen.close());
    return true;
  }

  #track(closing: Promise<void>): void {
    const p = closing.catch(() => {}).finally(() => this.#closing.delete(p));
    this.#closing.add(p);
  }

  /** Close every generator (each waits for its in-flight reservation). */
  async close(): Promise<void> {
    for (const entry of this.#entries.values()) this.#track(entry.gen.close());
    this.#entries.clear();
    this.#last = undefined;
    await Promise.all(this.#closing);
  }
}
