/**
 * The remembered step: read next to the counter before the first reservation, written when it
 * changed, so a restarted or newly scaled process skips the ramp-up.
 *
 * @module
 */

import { hasStepMemory, type Store } from "../contract/store.ts";
import { withDeadline } from "../runtime/deadline_timer.ts";
import type { StepSizer } from "./step.ts";
import type { KvIdSettings } from "./settings.ts";

/** What the step's memory reads of the generator's settings. */
export type MemorySettings = Pick<
  KvIdSettings,
  "minStep" | "maxStep" | "rememberStep" | "initialStepGiven" | "key"
>;

/**
 * How often, at most, a changed step is written next to the counter. The first write is that
 * long after the first reservation: a process killed young leaves the step it was given, not one
 * it doubled at once (each restart then started at twice its predecessor's: 4 processes at
 * 50,000 IDs/s, one killed every 1.25 s, had a density of 0.44; 0.63 this way,
 * bench/deploy_bench.ts).
 */
const STEP_SAVE_MS = 10_000;

/**
 * One generator's remembered step. Decides when to read and write it; the writes themselves are
 * best effort (a failure leaves the step as it was, the next change tries again).
 *
 * @example
 * ```ts
 * import { StepMemory } from "./step_memory.ts";
 * import { StepSizer } from "./step.ts";
 * import assert from "node:assert/strict";
 *
 * const sizer = new StepSizer(1, 1_000, 600_000, "doubling");
 * const settings = { minStep: 1, maxStep: 1_000, rememberStep: true, initialStepGiven: false, key: "kvid" };
 * const memory = new StepMemory(sizer, settings, "order");
 * memory.found(4_096); // a remembered step above maxStep
 * assert.ok(sizer.step === 1_000);
 * ```
 */
export class StepMemory {
  /** Looked up already (or not to be: `rememberStep: false`, `initialStep` given). */
  loaded: boolean;
  #saved = 0;
  #savedAt = -Infinity;
  readonly #sizer: StepSizer;
  readonly #s: MemorySettings;
  readonly #field: string;

  /**
   * @param sizer The generator's step.
   * @param settings The generator's `minStep`, `maxStep`, `rememberStep` and whether an
   *   `initialStep` was given (then nothing is looked up), and its hash (held, not copied).
   * @param field The counter.
   */
  constructor(sizer: StepSizer, settings: MemorySettings, field: string) {
    this.#sizer = sizer;
    this.#s = settings;
    this.#field = field;
    this.loaded = !settings.rememberStep || settings.initialStepGiven;
  }

  /**
   * Look the remembered step up (once, before the first reservation), within `ms`. Undefined: a
   * failure, no value or no lookup in this store (the step rule grows it from `minStep`).
   */
  async lookUp(store: Store, ms: number): Promise<number | undefined> {
    this.loaded = true;
    if (!hasStepMemory(store)) return undefined;
    try {
      return await withDeadline(store.loadStep(this.#s.key, this.#field), ms, () => undefined);
    } catch {
      return undefined; // no remembered step: start at minStep
    }
  }

  /** A remembered step was found: start from it, within `minStep`..`maxStep`. */
  found(step: number): void {
    this.#sizer.resume(step);
    this.#saved = step;
  }

  /** The step differs from the remembered one (a counter that never left minStep has none). */
  changed(): boolean {
    const step = this.#sizer.step;
    return step !== this.#saved && (step > this.#s.minStep || this.#saved > 0);
  }

  /**
   * A reservation landed at `now` (the generator's clock): true when the step should be written
   * now (it changed, and the last write, or the first reservation, is `STEP_SAVE_MS` ago).
   */
  dueAt(now: number): boolean {
    if (this.#savedAt === -Infinity) {
      this.#savedAt = now;
      return false;
    }
    if (!this.changed() || now - this.#savedAt < STEP_SAVE_MS) return false;
    this.#savedAt = now;
    return true;
  }

  /** Write the current step next to the counter; best effort. */
  async save(store: Store | undefined): Promise<void> {
    const step = this.#sizer.step;
    if (store === undefined || !hasStepMemory(store) || !this.#s.rememberStep) return;
    this.#saved = step;
    try {
      await store.saveStep(this.#s.key, this.#field, step);
    } catch {
      // Best effort: the next change tries again.
    }
  }
}
