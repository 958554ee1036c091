/**
 * The reference store: the whole Store contract in memory, for the shared spec and for engine unit
 * tests. Never a stand-in for a real server in a test of a behaviour that involves one.
 *
 * @module
 */

import { KvIdError } from "../../mod.ts";
import {
  type CounterListing,
  type CountersOptions,
  type CounterValue,
  DAY_FIELD,
  type DayCleanup,
  type IdRange,
  MAX_ID,
  type Release,
  type Reservation,
  type ReserveOptions,
  type StepMemory,
  type Store,
} from "../../src/contract/store.ts";

/**
 * The contract's operation and the capabilities memory can have atomically (JavaScript runs one
 * call at a time): release, step memory, counter listing, day cleanup.
 */
export class MemoryStore implements Store, Release, StepMemory, CounterListing, DayCleanup {
  readonly #counters = new Map<string, Map<string, bigint>>();
  readonly #steps = new Map<string, number>();

  #hash(key: string): Map<string, bigint> {
    let hash = this.#counters.get(key);
    if (hash === undefined) this.#counters.set(key, hash = new Map());
    return hash;
  }

  /** The stored value of a counter (0 when never written), for assertions. */
  value(key: string, field: string): bigint {
    return this.#counters.get(key)?.get(field) ?? 0n;
  }

  /** Set a counter's value behind the store's back (a fault: a lowered counter). */
  setValue(key: string, field: string, value: bigint): void {
    this.#hash(key).set(field, value);
  }

  /** Reserve `count` IDs; see {@linkcode Store.reserve}. */
  reserve(
    key: string,
    field: string,
    count: number,
    options: ReserveOptions,
  ): Promise<Reservation> {
    const hash = this.#hash(key);
    const found = hash.get(field) ?? 0n;
    const raised = options.guard && found < options.floor;
    const last = (raised ? options.raiseTo : found) + BigInt(count);
    if (last > MAX_ID) {
      return Promise.reject(
        new KvIdError("overflow", "the counter would pass 2^63-1", { key, field }),
      );
    }
    hash.set(field, last);
    return Promise.resolve({ ranges: [{ first: last - BigInt(count) + 1n, last }], raised });
  }

  /** Give back the tail if nobody reserved since; see {@linkcode Release.release}. */
  release(key: string, field: string, range: IdRange): Promise<boolean> {
    const hash = this.#hash(key);
    if ((hash.get(field) ?? 0n) !== range.last) return Promise.resolve(false);
    hash.set(field, range.first - 1n);
    return Promise.resolve(true);
  }

  /** The remembered step; see {@linkcode StepMemory.loadStep}. */
  loadStep(key: string, field: string): Promise<number | undefined> {
    return Promise.resolve(this.#steps.get(`${key}\n${field}`));
  }

  /** Remember a step; see {@linkcode StepMemory.saveStep}. */
  saveStep(key: string, field: string, step: number): Promise<void> {
    this.#steps.set(`${key}\n${field}`, step);
    return Promise.resolve();
  }

  /** The counters of a hash; see {@linkcode CounterListing.counters}. */
  counters(key: string, options: CountersOptions = {}): Promise<Map<string, CounterValue>> {
    const hash = this.#counters.get(key) ?? new Map<string, bigint>();
    const found = new Map<string, CounterValue>();
    for (const name of options.names ?? hash.keys()) {
      const value = hash.get(name);
      if (value !== undefined) found.set(name, { value });
    }
    return Promise.resolve(found);
  }

  /** Delete the day counters before `before`; see {@linkcode DayCleanup.deleteDaysBefore}. */
  deleteDaysBefore(key: string, before: string): Promise<number> {
    if (!DAY_FIELD.test(before)) {
      return Promise.reject(new RangeError(`MemoryStore: not a yyyymmdd day: ${before}`));
    }
    const hash = this.#hash(key);
    let deleted = 0;
    for (const field of [...hash.keys()]) {
      if (DAY_FIELD.test(field) && field < before) {
        hash.delete(field);
        deleted++;
      }
    }
    return Promise.resolve(deleted);
  }
}
