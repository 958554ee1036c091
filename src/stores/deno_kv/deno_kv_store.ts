/**
 * The Deno KV store: the same segment engine on `Deno.openKv()`, a local SQLite file (or
 * `":memory:"`) on a laptop and Deno Deploy's global KV in production. No Redis needed.
 *
 * A counter is one KV entry `[...prefix, key, name]` holding a `Deno.KvU64`; with the default
 * hash key `"kvid"` and no prefix that is `["kvid", name]`. A reservation of `count` IDs reads
 * the entry and writes `value + count` in an atomic operation that checks the versionstamp it
 * read, retrying on a conflict a bounded number of times: reply V means IDs V-count+1..V, as
 * with `HINCRBY` on Redis, and the first ID of a new name is 1.
 *
 * `Deno.openKv` is still unstable in Deno 2: run with `--unstable-kv` (or
 * `"unstable": ["kv"]` in deno.json). Deno Deploy needs no flag.
 *
 * Beside this file: its options, defaults and stats (`deno_kv_options.ts`), the KV layout of
 * the counters (`deno_kv_layout.ts`) and the failures to open the database (`deno_kv_errors.ts`).
 *
 * ## Deno KV and Deno Deploy
 *
 * No Redis? The same generator runs on Deno KV: a local SQLite file on a laptop or server, `:memory:`
 * in tests, the project's KV database on Deno Deploy. The demo (`deno run -A bench/demo.ts`) uses a
 * local KV file (`.kvid/demo.sqlite3`) unless `KVID_REDIS_URL` is set.
 *
 * ```ts ignore
 * import { KvId } from "@kvid/core";
 * import { DenoKvStore } from "@kvid/core/deno-kv";
 *
 * const store = new DenoKvStore("./data/ids.sqlite3"); // opened on first use
 * export const ORDER_ID = new KvId("order", { store });
 * ```
 *
 * - **Layout**: one entry `[...prefix, key, name]` holding a `Deno.KvU64` (`["kvid", "order"]` with
 *   the defaults), the last ID reserved, as on Redis: a new name starts at 1.
 * - **Reservation**: read the entry, then write value + step in an atomic operation that checks the
 *   versionstamp read. A write that loses to another writer, or finds the file locked by another
 *   process, is retried with a jittered pause, at most `maxAttempts` (32) times; then the reservation
 *   fails as a transient error and the generator retries after its backoff. `store.stats()` counts
 *   reservations, conflicts, locked-database retries (`busy`), the most attempts one reservation
 *   needed and give-ups.
 * - **Same engine, same guarantees**: a range is handed out only after its write committed; the
 *   rollback guard raises a counter found below IDs already issued; `bigint` is exact to 2^63-1.
 * - **Flags**: Deno 2 needs `--unstable-kv` (or `"unstable": ["kv"]` in deno.json) for `Deno.openKv`.
 *   Deno Deploy needs none.
 * - **On Deno Deploy**: `new DenoKvStore()` opens the project's KV database. Checked writes go to the
 *   primary region, so a reservation costs a couple of round trips there, once per segment, hidden by
 *   prefetch. Each isolate reserves its own segments; a recycled isolate leaves the rest of its
 *   segment unused, so keep `maxStep` moderate if gaps matter.
 * - **Redis or Kvrocks from Deploy**: outbound TCP and TLS work. Connect `jsr:@db/redis` with
 *   `{ hostname, port, tls: true }`, or `npm:redis` with a `rediss://` URL through `fromNodeRedis`.
 * - **Daily serials**: `new DailyId("order", { store })` works the same; each day is an entry
 *   `[...prefix, "kvid:daily:order", "yyyymmdd"]`. `keepDays` and `cleanup()` delete old days with
 *   `store.deleteDaysBefore` (an entry written since it was listed is left alone). A custom store
 *   without that method is refused with `keepDays` at construction.
 * - KV and Redis counters are separate: to move a service, first set the new counter above the old.
 *
 * @example A local KV file
 * ```ts ignore
 * import { KvId } from "@kvid/core";
 * import { DenoKvStore } from "@kvid/core/deno-kv";
 *
 * using store = new DenoKvStore("./ids.sqlite3"); // opened on the first reservation
 * await using ORDER_ID = new KvId("order", { store });
 * console.log(await ORDER_ID.next()); // 1, 2, 3, ...
 * ```
 *
 * @example Deno Deploy: the project's KV database
 * ```ts ignore
 * import { KvId } from "@kvid/core";
 * import { DenoKvStore } from "@kvid/core/deno-kv";
 *
 * export const ORDER_ID = new KvId("order", { store: new DenoKvStore() });
 * Deno.serve(async () => new Response(String(await ORDER_ID.next())));
 * ```
 *
 * @module
 */

import { fieldLabel, KvIdError } from "../../contract/errors.ts";
import { disown, own } from "../../runtime/shutdown.ts";
import type {
  CounterListing,
  CountersOptions,
  CounterValue,
  DayCleanup,
  DurabilityFacts,
  DurabilityOptions,
  IdRange,
  MemberReserveOptions,
  Release,
  Reservation,
  ReserveOptions,
  StepMemory,
  Store,
  StoreDurability,
} from "../../contract/store.ts";
import { DAY_FIELD, MAX_ID, stepField } from "../../contract/store.ts";
import { isBusy, openError } from "./deno_kv_errors.ts";
import { counterValue, dayOf } from "./deno_kv_layout.ts";
import {
  denoKvConfig,
  type DenoKvSource,
  type DenoKvStoreOptions,
  type DenoKvStoreStats,
} from "./deno_kv_options.ts";
import { checkLayout, LAYOUT_FIELD_PREFIX as LAYOUT_PREFIX } from "../interleaved/layout.ts";

// Re-exported so this entry point documents itself (the same types as from "@kvid/core").
export type { Reservation, ReserveOptions, Store };
export type { IdRange };
export type { DenoKvSource, DenoKvStoreOptions, DenoKvStoreStats };

/**
 * A {@linkcode Store} on Deno KV: pass it as the `store` option of `KvId`. It opens the
 * database lazily, so it can be declared at module scope.
 *
 * `close()` closes a database the store opened itself (from a path or a function, or the
 * default one); a `Deno.Kv` passed in stays yours. Close the generators first, or call
 * `shutdown()` from `@kvid/core`: it closes every generator, then such stores.
 *
 * @example Throwaway in-memory database
 * ```ts
 * import { DenoKvStore } from "@kvid/core/deno-kv";
 * import assert from "node:assert/strict";
 *
 * using store = new DenoKvStore(":memory:");
 * const options = { floor: 0n, raiseTo: 0n, guard: true, exact: true };
 * const a = await store.reserve("kvid", "order", 10, options);
 * const b = await store.reserve("kvid", "order", 5, options);
 * assert.ok(a.ranges[0].first === 1n && a.ranges[0].last === 10n);
 * assert.ok(b.ranges[0].first === 11n && b.ranges[0].last === 15n);
 * assert.ok(store.stats().reservations === 2);
 * ```
 */
export class DenoKvStore
  implements Store, Release, StepMemory, DurabilityFacts, DayCleanup, CounterListing, Disposable {
  readonly #source: DenoKvSource | undefined;
  readonly #owned: boolean;
  readonly #prefix: Deno.KvKey;
  readonly #maxAttempts: number;
  readonly #maxBackoff: number;
  #kv: Promise<Deno.Kv> | undefined;
  #opened: Deno.Kv | undefined;
  #closed = false;
  #stats: DenoKvStoreStats = {
    reservations: 0,
    conflicts: 0,
    busy: 0,
    maxAttempts: 0,
    exhausted: 0,
    raised: 0,
  };

  /**
   * Make a store; nothing is opened until the first reservation.
   *
   * @param source The database; default `Deno.openKv()` (Deno Deploy: the project's KV).
   * @param options See {@linkcode DenoKvStoreOptions}.
   */
  constructor(source?: DenoKvSource, options: DenoKvStoreOptions = {}) {
    const { prefix, maxAttempts, maxBackoff } = denoKvConfig(source, options);
    this.#source = source;
    this.#owned = source === undefined || typeof source === "string" ||
      typeof source === "function";
    this.#prefix = prefix;
    this.#maxAttempts = maxAttempts;
    this.#maxBackoff = maxBackoff;
  }

  /** A snapshot of the store's counters: reservations, conflicts, retries. */
  stats(): DenoKvStoreStats {
    return { ...this.#stats };
  }

  /** The KV key of counter `field` in hash `key`: `[...prefix, key, field]`. */
  kvKey(key: string, field: string): Deno.KvKey {
    return [...this.#prefix, key, field];
  }

  /**
   * Counter `field` of hash `key` in this store's words, for messages: its KV key, e.g.
   * `key ["kvid", "order"]`; see {@linkcode Store.describe}.
   *
   * @example
   * ```ts
   * import { DenoKvStore } from "@kvid/core/deno-kv";
   * import assert from "node:assert/strict";
   *
   * const store = new DenoKvStore(":memory:", { prefix: ["ids"] });
   * assert.equal(store.describe("kvid", "order"), 'key ["ids", "kvid", "order"]');
   * ```
   *
   * @param key The hash key.
   * @param field The counter ("": the hash's keys).
   * @returns The words a {@linkcode KvIdError} puts in parentheses.
   */
  describe(key: string, field: string): string {
    const parts = field === "" ? [...this.#prefix, key] : this.kvKey(key, field);
    return `key [${parts.map(keyPart).join(", ")}]`;
  }

  #at(key: string, field: string): { key: string; field: string; where: string } {
    return { key, field, where: this.describe(key, field) };
  }

  /**
   * Reserve `count` IDs of counter `field` in hash `key`; see {@linkcode Store.reserve}. With
   * `guard`, a counter below `floor` is first raised to `raiseTo` (`raised: true`).
   */
  async reserve(
    key: string,
    field: string,
    count: number,
    options: ReserveOptions & MemberReserveOptions,
  ): Promise<Reservation> {
    const where = this.#at(key, field);
    if (!Number.isSafeInteger(count) || count < 1) {
      throw new RangeError(`DenoKvStore.reserve: count must be a positive integer, got ${count}`);
    }
    const kv = await this.#open(key, field);
    const kvKey = this.kvKey(key, field);
    // An interleaved counter's layout (see MemberReserveOptions.layout), read and checked with it.
    const layoutKey = this.kvKey(key, LAYOUT_PREFIX + field);
    for (let attempt = 1;; attempt++) {
      let committed: Deno.KvCommitResult | Deno.KvCommitError | undefined;
      let last = 0n;
      let raised = false;
      try {
        const [entry, layoutEntry] = await kv.getMany([kvKey, layoutKey]);
        let current = counterValue(entry.value, where);
        checkLayout(layoutEntry.value, current, options.layout, where);
        if (options.guard && current < options.floor) {
          current = options.raiseTo;
          raised = true;
        }
        last = current + BigInt(count);
        if (last > MAX_ID) {
          throw new KvIdError(
            "overflow",
            `the counter (${current}) plus ${count} would pass 2^63-1`,
            where,
          );
        }
        const op = kv.atomic().check(entry, layoutEntry).set(kvKey, new Deno.KvU64(last));
        if (options.layout !== undefined && layoutEntry.value === null) {
          op.set(layoutKey, options.layout);
        }
        committed = await op.commit();
      } catch (cause) {
        // Another process holds the SQLite write lock: nothing was written, try again.
        if (!isBusy(cause)) throw this.#error(cause, key, field);
        this.#stats.busy++;
      }
      if (committed?.ok) {
        const s = this.#stats;
        s.reservations++;
        s.maxAttempts = Math.max(s.maxAttempts, attempt);
        if (raised) s.raised++;
        const ranges = [{ first: last - BigInt(count) + 1n, last }];
        return options.layout === undefined
          ? { ranges, raised }
          : { ranges, raised, layout: options.layout };
      }
      if (committed !== undefined) this.#stats.conflicts++;
      if (attempt >= this.#maxAttempts) {
        this.#stats.exhausted++;
        throw new KvIdError(
          "conflict",
          `the counter stayed contended: ${attempt} check-and-set attempts conflicted or found the database locked`,
          where,
        );
      }
      // Jittered, growing pause so contending writers stop colliding in lockstep.
      const ceiling = Math.min(this.#maxBackoff, 2 ** Math.min(attempt, 16) / 2);
      const pause = Math.random() * ceiling;
      if (pause >= 1) await new Promise((resolve) => setTimeout(resolve, pause));
    }
  }

  /**
   * Give back the unused tail `range` of the caller's last reservation (on close): the counter
   * is set to `range.first - 1` only if it still holds `range.last`, in an atomic operation that
   * checks the versionstamp read; otherwise nothing changes. Resolves to true when given back.
   *
   * @example A reservation of 100 of which 10 were used
   * ```ts
   * import { DenoKvStore } from "@kvid/core/deno-kv";
   * import assert from "node:assert/strict";
   *
   * using store = new DenoKvStore(":memory:");
   * const options = { floor: 0n, raiseTo: 0n, guard: true, exact: true };
   * await store.reserve("kvid", "order", 100, options); // IDs 1..100
   * assert.ok(await store.release("kvid", "order", { first: 11n, last: 100n }));
   * const next = await store.reserve("kvid", "order", 5, options);
   * assert.ok(next.ranges[0].first === 11n); // nobody reserved since: 11..100 came back
   * ```
   *
   * @param key The hash key.
   * @param field The counter.
   * @param range The unused IDs, ending at the end of the caller's last reservation.
   */
  async release(key: string, field: string, range: IdRange): Promise<boolean> {
    if (range.first < 1n || range.last < range.first) return false;
    const kv = await this.#open(key, field);
    const kvKey = this.kvKey(key, field);
    try {
      const entry = await kv.get(kvKey);
      const value = entry.value;
      if (!(value instanceof Deno.KvU64) || value.value !== range.last) return false;
      const done = await kv.atomic().check(entry).set(kvKey, new Deno.KvU64(range.first - 1n))
        .commit();
      return done.ok;
    } catch (cause) {
      throw this.#error(cause, key, field);
    }
  }

  /**
   * Deno KV's durability: a commit returns only once it is durable (SQLite in WAL mode locally,
   * the primary region's log on Deno Deploy), and nothing evicts or expires a counter entry.
   * No I/O. See {@linkcode DurabilityFacts.durability}.
   *
   * @example
   * ```ts
   * import { DenoKvStore } from "@kvid/core/deno-kv";
   * import assert from "node:assert/strict";
   *
   * using store = new DenoKvStore(":memory:");
   * const d = await store.durability("kvid", {
   *   field: "order",
   *   mode: "strict",
   *   judge: () => undefined,
   *   stated: {},
   * });
   * assert.ok(d.durable && d.problems.length === 0);
   * ```
   *
   * @param _key The hash key.
   * @param _options What the generator asks with.
   * @returns Durable, always.
   */
  durability(_key: string, _options: DurabilityOptions): Promise<StoreDurability> {
    return Promise.resolve({
      durable: true,
      settings: { store: "deno-kv" },
      problems: [],
      lossWithoutCrash: false,
    });
  }

  /**
   * The step the counter's processes last used, remembered in the entry
   * `[...prefix, key, "\0step:" + field]`; see {@linkcode StepMemory.loadStep}.
   *
   * @example
   * ```ts
   * import { DenoKvStore } from "@kvid/core/deno-kv";
   * import assert from "node:assert/strict";
   *
   * using store = new DenoKvStore(":memory:");
   * await store.saveStep("kvid", "order", 4096);
   * assert.ok(await store.loadStep("kvid", "order") === 4096);
   * ```
   *
   * @param key The hash key.
   * @param field The counter.
   * @returns The remembered step, or undefined.
   */
  async loadStep(key: string, field: string): Promise<number | undefined> {
    const kv = await this.#open(key, field);
    try {
      const value = (await kv.get(this.kvKey(key, stepField(field)))).value;
      return typeof value === "number" && Number.isSafeInteger(value) && value > 0
        ? value
        : undefined;
    } catch (cause) {
      throw this.#error(cause, key, field);
    }
  }

  /**
   * Remember `step` for the counter's next generators; see {@linkcode StepMemory.saveStep}.
   *
   * @param key The hash key.
   * @param field The counter.
   * @param step The step to start from.
   */
  async saveStep(key: string, field: string, step: number): Promise<void> {
    const kv = await this.#open(key, field);
    try {
      await kv.set(this.kvKey(key, stepField(field)), step);
    } catch (cause) {
      throw this.#error(cause, key, field);
    }
  }

  /**
   * Delete the counters `[...prefix, key, day]` whose `day` is a `yyyymmdd` date before `before`
   * and nothing else: the cleanup of a {@linkcode DailyId} on Deno KV (its `keepDays` option and
   * `cleanup()` call this). Resolves to how many were deleted.
   *
   * @example Days before 2026-11-01 go, the rest stays
   * ```ts
   * import { DenoKvStore } from "@kvid/core/deno-kv";
   * import assert from "node:assert/strict";
   *
   * using kv = await Deno.openKv(":memory:");
   * for (const day of ["20261030", "20261031", "20261101", "notaday"]) {
   *   await kv.set(["kvid:daily:order", day], new Deno.KvU64(5n));
   * }
   * using store = new DenoKvStore(kv);
   * assert.ok(await store.deleteDaysBefore("kvid:daily:order", "20261101") === 2);
   * assert.ok((await kv.get(["kvid:daily:order", "notaday"])).value !== null);
   * ```
   *
   * @param key The hash key (a `DailyId`'s `key`).
   * @param before The first day kept, `yyyymmdd`.
   */
  async deleteDaysBefore(key: string, before: string): Promise<number> {
    const field = `<${before}`;
    if (!DAY_FIELD.test(before)) {
      throw new RangeError(`DenoKvStore.deleteDaysBefore: not a yyyymmdd day: ${before}`);
    }
    const kv = await this.#open(key, field);
    const prefix = [...this.#prefix, key];
    let deleted = 0;
    try {
      // A counter of interleaved servers named like a day (its layout entry is there too) is a
      // KvId's, not a day's: deleting it would restart that member at cycle 0 under its layout.
      const owned = new Set<string>();
      const old: Deno.KvEntry<unknown>[] = [];
      for await (const entry of kv.list({ prefix })) {
        const part = entry.key[prefix.length];
        if (entry.key.length === prefix.length + 1 && typeof part === "string") {
          if (part.startsWith(LAYOUT_PREFIX)) owned.add(part.slice(LAYOUT_PREFIX.length));
        }
        const day = dayOf(entry.key, prefix.length);
        if (day !== undefined && day < before) old.push(entry);
      }
      for (const entry of old) {
        if (owned.has(entry.key[prefix.length] as string)) continue;
        // Only if unchanged since listed: a counter written meanwhile is in use, left alone.
        const done = await kv.atomic().check(entry).delete(entry.key).commit();
        if (done.ok) deleted++;
      }
    } catch (cause) {
      throw this.#error(cause, key, field);
    }
    return deleted;
  }

  /**
   * The counters of hash `key`: the entries `[...prefix, key, name]`, each a `Deno.KvU64`, with
   * the layout entry of an interleaved member's; never the step or layout entries themselves
   * (their names begin with NUL) nor another key's. With `names`, one `getMany` of those (and
   * their layouts, in batches of 5 names: `getMany` takes at most 10 keys); otherwise one
   * `list` of the prefix. See {@linkcode CounterListing.counters}.
   *
   * @example
   * ```ts
   * import { DenoKvStore } from "@kvid/core/deno-kv";
   * import assert from "node:assert/strict";
   *
   * using store = new DenoKvStore(":memory:");
   * const floor = 1n << 60n;
   * await store.reserve("kvid", "order", 3, { floor, raiseTo: floor, guard: true, exact: true });
   * const counters = await store.counters("kvid");
   * assert.ok(counters.get("order")?.value === floor + 3n && counters.size === 1);
   * ```
   *
   * @param key The hash key.
   * @param options `names`: only these counters.
   * @returns The counters that exist, by name.
   * @throws {KvIdError} `"reply"` (reason `"not-a-counter"`) for an entry that is not one.
   */
  async counters(key: string, options: CountersOptions = {}): Promise<Map<string, CounterValue>> {
    const kv = await this.#open(key, "");
    const found = new Map<string, CounterValue>();
    const add = (name: string, value: unknown, layout: unknown) => {
      if (name.startsWith("\0") || value === null) return;
      const read = counterValue(value, this.#at(key, name));
      found.set(name, typeof layout === "string" ? { value: read, layout } : { value: read });
    };
    try {
      const names = options.names;
      if (names !== undefined) {
        for (let i = 0; i < names.length; i += 5) {
          const batch = names.slice(i, i + 5);
          const keys = batch.flatMap((
            n,
          ) => [this.kvKey(key, n), this.kvKey(key, LAYOUT_PREFIX + n)]);
          const entries = await kv.getMany(keys);
          batch.forEach((n, j) => add(n, entries[2 * j].value, entries[2 * j + 1].value));
        }
        return found;
      }
      const prefix = [...this.#prefix, key];
      const values = new Map<string, unknown>();
      for await (const entry of kv.list({ prefix })) {
        const part = entry.key[prefix.length];
        if (entry.key.length === prefix.length + 1 && typeof part === "string") {
          values.set(part, entry.value);
        }
      }
      for (const [name, value] of values) add(name, value, values.get(LAYOUT_PREFIX + name));
    } catch (cause) {
      throw this.#error(cause, key, "");
    }
    return found;
  }

  /**
   * Close the database if the store opened it (a `Deno.Kv` passed in stays open). Later
   * reservations reject with a `"closed"` {@linkcode KvIdError}.
   */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    disown(this);
    if (this.#owned) this.#opened?.close();
    this.#opened = undefined;
  }

  /** Same as {@linkcode DenoKvStore.close}, for `using`. */
  [Symbol.dispose](): void {
    this.close();
  }

  #open(key: string, field: string): Promise<Deno.Kv> {
    if (this.#closed) {
      return Promise.reject(
        new KvIdError("closed", "the DenoKvStore is closed", this.#at(key, field)),
      );
    }
    if (this.#kv !== undefined) return this.#kv;
    const source = this.#source;
    const kv = (async () => {
      let opened: Deno.Kv;
      try {
        opened = typeof source === "function"
          ? await source()
          : typeof source === "string" || source === undefined
          ? await Deno.openKv(source)
          : source;
      } catch (cause) {
        throw openError(cause, source, this.#at(key, field));
      }
      if (this.#closed) {
        // Closed while opening: do not leak what was opened.
        if (this.#owned) opened.close();
        throw new KvIdError("closed", "the DenoKvStore is closed", this.#at(key, field));
      }
      this.#opened = opened;
      // Opened here and held alone: shutdown() closes it after the generators.
      if (this.#owned) own(this);
      return opened;
    })();
    this.#kv = kv;
    // A failed open is tried again on the next reservation.
    kv.catch(() => {
      if (this.#kv === kv) this.#kv = undefined;
    });
    return kv;
  }

  #error(cause: unknown, key: string, field: string): KvIdError {
    if (cause instanceof KvIdError) return cause;
    const message = cause instanceof Error ? cause.message : String(cause);
    const where = { ...this.#at(key, field), cause };
    if (this.#closed || /database is closed|bad resource/i.test(message)) {
      return new KvIdError("closed", "the Deno KV database is closed", where);
    }
    if (/key too large/i.test(message)) {
      return new KvIdError(
        "config",
        "the KV key is too large (Deno KV keys are at most 2 KiB): use a shorter name, key or prefix",
        { ...where, reason: "name-too-long" },
      );
    }
    return new KvIdError("connection", `Deno KV failed: ${message}`, where);
  }
}

/** A part of a KV key as a message shows it: text quoted (cut to 80 characters), 7n for a bigint. */
function keyPart(part: Deno.KvKeyPart): string {
  if (typeof part === "string") return fieldLabel(part);
  if (typeof part === "bigint") return `${part}n`;
  if (part instanceof Uint8Array) return `bytes(${part.length})`;
  return String(part);
}
