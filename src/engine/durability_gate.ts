/**
 * The durability gate: what a generator accepts from its store, read before its first
 * reservation and again after a transient failure, a refusal or a rollback.
 *
 * @module
 */

import { type DurabilityMode, LIBRARY_OPT_OUT } from "../contract/durability.ts";
import { KvIdError } from "../contract/errors.ts";
import {
  type DurabilityOptions,
  hasCachedReads,
  hasDurability,
  readsDurabilityInReserve,
  type Reservation,
  type Store,
  type StoreDurability,
} from "../contract/store.ts";
import type { DurabilityReport } from "./kvid_options.ts";
import type { KvIdSettings } from "./settings.ts";

/**
 * What the gate reads of the generator's settings; the whole settings object is also what the
 * store is told of the generator (`DurabilityOptions.generator`).
 */
export type GateSettings = Pick<KvIdSettings, "durability" | "serverSettings" | "key">;

/**
 * The refusal a generator in `mode` makes of a store whose durability is `d`, or undefined when
 * it may serve: the one verdict on whether a store may serve. A store that must decide within
 * one call asks it through `DurabilityOptions.judge`; the service's readiness and the CLI's
 * check ask it too. Eviction is refused in every mode; the other problems only under
 * `"strict"`. `optOut` is the knob of the caller's own words that accepts the loss (the
 * library's option, the service's `KVID_DURABILITY=best-effort`, the CLI's
 * `--durability best-effort`).
 */
export function durabilityRefusal(
  d: StoreDurability,
  mode: DurabilityMode,
  key: string,
  field: string,
  optOut: string = LIBRARY_OPT_OUT,
): KvIdError | undefined {
  if (d.problems.length === 0) return undefined;
  if (d.lossWithoutCrash === true) {
    return new KvIdError(
      "config",
      `the store loses counters in ordinary operation, refused whatever durability says: ${
        d.problems.join("; ")
      }`,
      { key, field, reason: "not-durable" },
    );
  }
  if (mode === "best-effort") return undefined;
  return new KvIdError(
    "config",
    `the store can lose reservations, so IDs could be issued twice: ${
      d.problems.join("; ")
    }. Fix the server, or accept the loss with ${optOut}`,
    { key, field, reason: "not-durable" },
  );
}

/** Tell a store that keeps its server's reads for other callers to stop sharing them. */
function forget(store: Store): void {
  if (hasCachedReads(store)) store.forgetReads();
}

/** A read of the store's durability going on beside a reservation, or made by it. */
export interface DurabilityRead {
  /**
   * Set when the store reads its durability in the reservation itself (`DurabilityInReserve`,
   * a generator's first read): pass it as `DurabilityReserveOptions.durability`.
   */
  readonly asked?: DurabilityOptions;
  /**
   * Settles when the read did, given the reservation's reply: rejects with the refusal of a
   * store that can lose IDs (the reply's range is then spent, or empty).
   */
  settle(reply: Reservation): Promise<void>;
}

/**
 * One generator's durability gate. The store is read when due (first use; after a transient
 * failure, a refusal or a rollback: the server may have restarted, or be another one), and a
 * store that can lose reservations is refused (see {@linkcode durabilityRefusal}); a refusal
 * leaves the read due, so a fixed server is served again.
 *
 * Where the read goes, in one place ({@linkcode DurabilityGate.beforeReserve}): on first use,
 * in the reservation itself when the store can (`DurabilityInReserve`: it reserves only on a
 * server it accepts), else before anything is reserved, as after a refusal (a refused server is
 * left untouched); later, beside the reservation, one round trip for both, its range used only
 * once the read answered.
 *
 * @example A custom store without `durability()` is trusted
 * ```ts
 * import { DurabilityGate } from "./durability_gate.ts";
 * import type { Store } from "../contract/store.ts";
 * import assert from "node:assert/strict";
 *
 * const settings = { durability: "strict", serverSettings: {}, key: "kvid" } as const;
 * const gate = new DurabilityGate(settings, "order");
 * const store: Store = { reserve: () => Promise.reject(new Error("not called")) };
 * await gate.check(store);
 * assert.ok(gate.report().durable === undefined);
 * ```
 */
export class DurabilityGate {
  // Due before the first reservation.
  #due = true;
  #read: StoreDurability | undefined;
  // The last read was accepted: a re-read may then go beside the reservation.
  #accepted = false;
  readonly #s: GateSettings;
  readonly #field: string;

  /**
   * @param settings The generator's settings: its `durability` and `serverSettings` options
   *   and its hash (held, not copied: an idle generator is measured in bytes).
   * @param field The counter.
   */
  constructor(settings: GateSettings, field: string) {
    this.#s = settings;
    this.#field = field;
  }

  /**
   * First use: start the read (beside the remembered step's lookup, one round trip for both);
   * the first reservation waits for it in {@linkcode DurabilityGate.beforeReserve}. Undefined
   * for a store that reads its durability in the reservation itself (`DurabilityInReserve`).
   */
  firstRead(store: Store): Promise<void> | undefined {
    if (this.#inReserve(store)) return undefined; // read by the reservation itself
    const read = this.check(store);
    read.catch(() => {}); // awaited by the reservation
    return read;
  }

  /**
   * Start the read a reservation needs and, when the last read was not accepted (first use, a
   * refusal), wait for it before anything is reserved. `started`: a read begun already (first
   * use, beside the remembered step's lookup).
   *
   * @throws {KvIdError} The refusal of a store that can lose reservations, when waited for.
   */
  async beforeReserve(store: Store, started?: Promise<void>): Promise<DurabilityRead> {
    if (started === undefined && this.#inReserve(store)) {
      // The store reads it in the reservation and reserves only if it accepts what it read: a
      // refused server is left untouched, and the first ID is one round trip.
      return {
        asked: this.#asked(),
        settle: async (reply) => {
          if (reply.durability !== undefined) this.#judge(store, reply.durability);
          else await this.check(store); // it did not: read now, the range used only after
        },
      };
    }
    const verdict = started ?? this.check(store);
    verdict.catch(() => {}); // awaited by the reservation
    if (!this.#accepted) await verdict;
    return { settle: () => verdict };
  }

  /** The first read, by a store that makes it in the reservation itself. */
  #inReserve(store: Store): boolean {
    return readsDurabilityInReserve(store) && this.#due && this.#read === undefined;
  }

  /**
   * Read the store's durability when due and refuse one that can lose reservations.
   *
   * @throws {KvIdError} A `"config"` refusal naming the fix, or the read's own failure.
   */
  async check(store: Store): Promise<void> {
    if (!this.#due || !hasDurability(store)) {
      this.#accepted = true;
      return;
    }
    this.#judge(store, await store.durability(this.#s.key, this.#asked()));
  }

  /** What the store's durability read is asked with. */
  #asked(): DurabilityOptions {
    const s = this.#s;
    return {
      field: this.#field,
      mode: s.durability,
      stated: s.serverSettings,
      judge: (d) => durabilityRefusal(d, s.durability, s.key, this.#field),
      // The first read may be another generator's on the same client (see DurabilityOptions).
      reuse: this.#read === undefined,
      generator: s,
    };
  }

  /** Keep the read `d`; throw the refusal of a store that can lose reservations. */
  #judge(store: Store, d: StoreDurability): void {
    const s = this.#s;
    this.#read = d;
    const refusal = durabilityRefusal(d, s.durability, s.key, this.#field);
    this.#accepted = refusal === undefined;
    if (refusal !== undefined) {
      forget(store); // a fixed server is read again by the next generator too
      throw refusal;
    }
    this.#due = false;
  }

  /**
   * Read the store again before the next reservation, and have `store` stop sharing the reads
   * made so far (`CachedReads`).
   */
  markDue(store: Store | undefined): void {
    this.#due = true;
    if (store !== undefined) forget(store);
  }

  /** What the last read said, for `stats().durability`. */
  report(): DurabilityReport {
    const d = this.#read;
    return {
      mode: this.#s.durability,
      durable: d?.durable,
      problems: d === undefined ? [] : [...d.problems],
      settings: d === undefined ? {} : { ...d.settings },
    };
  }
}
