/**
 * A {@linkcode KvIdOptions} checked and completed with {@linkcode KVID_DEFAULTS}: what a
 * generator runs on, decided once at construction.
 *
 * @module
 */

import type { RedisSource } from "../contract/redis_client.ts";
import type { Store } from "../contract/store.ts";
import type { DurabilityMode } from "../contract/durability.ts";
import { checkDurabilityOptions } from "../contract/durability.ts";
import { checkStoreSource } from "../contract/store_source.ts";
import {
  checkCounterName,
  checkInteger,
  checkName,
  checkNumber,
  describe,
} from "../contract/validate.ts";
import type { StepRule } from "./step.ts";
import type { KvIdOptions } from "./kvid_options.ts";
import { KVID_DEFAULTS } from "./defaults.ts";

const OPTION_NAMES = new Set([
  "redis",
  "block",
  "store",
  "key",
  "minStep",
  "maxStep",
  "initialStep",
  "segmentDuration",
  "prefetchAt",
  "timeout",
  "failFast",
  "bigint",
  "guard",
  "rollbackMargin",
  "giveBack",
  "rememberStep",
  "replicas",
  "waitAof",
  "stepRule",
  "clock",
  "durability",
  "serverSettings",
  "floor",
]);
const MAX_TIMER_MS = 2_147_483_647; // setTimeout fires at once above this
const MAX_REPLICAS = 1_000;
/** The default clock, one function for every generator. */
const now = () => performance.now();

/**
 * Every option of a generator, checked, with its default filled in.
 *
 * @example
 * ```ts
 * import { resolveOptions } from "./settings.ts";
 * import assert from "node:assert/strict";
 *
 * const s = resolveOptions("order", { minStep: 10 });
 * assert.ok(s.minStep === 10 && s.maxStep === 1_000_000 && s.initialStep === 10);
 * ```
 */
export interface KvIdSettings {
  /** The counters' hash. */
  readonly key: string;
  /** The `redis` option as given (undefined: `configure()`'s client). */
  readonly redis: RedisSource | RedisSource[] | undefined;
  /** The `store` option as given. */
  readonly store: Store | undefined;
  /** IDs per block on interleaved servers. */
  readonly block: number;
  /** Smallest step. */
  readonly minStep: number;
  /** Largest step. */
  readonly maxStep: number;
  /** The first step. */
  readonly initialStep: number;
  /** The `initialStep` option was given (the remembered step is then not looked up). */
  readonly initialStepGiven: boolean;
  /** Target lifetime of a segment, ms. */
  readonly segmentDuration: number;
  /** Fraction of a reservation left when the next one is wanted. */
  readonly prefetchAt: number;
  /** ms one reservation (and one waiting call, and close) may take. */
  readonly timeout: number;
  /** Fail fast while the store is known down. */
  readonly failFast: boolean;
  /** `bigint` IDs. */
  readonly bigint: boolean;
  /** The guard script raises a counter found below the mark. */
  readonly guard: boolean;
  /** How far past the mark a counter found below it is raised. */
  readonly margin: bigint;
  /** Unused IDs go back to the store on close. */
  readonly giveBack: boolean;
  /** The step is remembered next to the counter. */
  readonly rememberStep: boolean;
  /** Replicas that must acknowledge a reservation. */
  readonly replicas: number;
  /** `WAITAOF` after each reservation. */
  readonly waitAof: boolean;
  /** How the step adapts. */
  readonly stepRule: StepRule;
  /** The ms clock the step adapts by. */
  readonly clock: () => number;
  /** What the generator accepts from its store. */
  readonly durability: DurabilityMode;
  /** Server settings as the user states them. */
  readonly serverSettings: Readonly<Record<string, string>>;
  /** The user's independent floor, if any. */
  readonly floor: KvIdOptions["floor"];
}

/**
 * Check a generator's name and options and fill in the defaults.
 *
 * @param name The counter's field.
 * @param options The options as given to `new KvId()`.
 * @returns The settings the generator runs on.
 * @throws {TypeError} A name or an option that is not what it must be, naming which and why.
 */
export function resolveOptions(name: string, options: KvIdOptions): KvIdSettings {
  checkCounterName("KvId", "name", name);
  if (options === null || typeof options !== "object") {
    throw new TypeError(`KvId options must be an object, got ${describe(options)}`);
  }
  if (last !== undefined && sameOptions(options, last.options)) return last.settings;
  const settings = resolve(options);
  // Data the user may change in place between two generators is checked every time.
  const data = options.serverSettings !== undefined || Array.isArray(options.redis);
  last = data ? undefined : { options: { ...options }, settings };
  return settings;
}

// The last options resolved and what they resolved to: generators made with equal options (a
// multi-tenant service's 10,000 names, each `new KvId(name, { redis })`) share one settings
// object (one each otherwise, which tests/faults/memory.ts counts in bytes) and skip the checks.
// The settings do not depend on the name; every value is compared by identity.
let last: { readonly options: KvIdOptions; readonly settings: KvIdSettings } | undefined;

/** The same options: the same names, each with the identical value. */
function sameOptions(a: KvIdOptions, b: KvIdOptions): boolean {
  const ka = Object.keys(a);
  if (ka.length !== Object.keys(b).length) return false;
  for (const k of ka) {
    if (!Object.hasOwn(b, k)) return false;
    if (
      (a as Record<string, unknown>)[k] !== (b as Record<string, unknown>)[k]
    ) return false;
  }
  return true;
}

/** The options checked (all but the name) and completed with the defaults. */
function resolve(options: KvIdOptions): KvIdSettings {
  for (const k of Object.keys(options)) {
    if (!OPTION_NAMES.has(k)) throw new TypeError(`KvId: unknown option ${JSON.stringify(k)}`);
    // `??` below would take null for "the default": a wrong type, said so by name.
    if ((options as Record<string, unknown>)[k] === null) {
      throw new TypeError(`KvId option ${k} must not be null (leave it out for the default)`);
    }
  }
  const d = KVID_DEFAULTS;
  const key = options.key ?? d.key;
  checkName("KvId", "key", key);
  const minStep = options.minStep ?? d.minStep;
  checkInteger("KvId", "minStep", minStep, 1, Number.MAX_SAFE_INTEGER);
  const maxStep = options.maxStep ?? Math.max(d.maxStep, minStep);
  checkInteger("KvId", "maxStep", maxStep, minStep, Number.MAX_SAFE_INTEGER);
  const initialStep = options.initialStep ?? minStep;
  checkInteger("KvId", "initialStep", initialStep, minStep, maxStep);
  const segmentDuration = options.segmentDuration ?? d.segmentDuration;
  checkNumber("KvId", "segmentDuration", segmentDuration, Number.MIN_VALUE, Number.MAX_VALUE);
  const prefetchAt = options.prefetchAt ?? d.prefetchAt;
  checkNumber("KvId", "prefetchAt", prefetchAt, 0, 1);
  const timeout = options.timeout ?? d.timeout;
  checkNumber("KvId", "timeout", timeout, 1, MAX_TIMER_MS);
  const margin = options.rollbackMargin ?? d.rollbackMargin;
  checkInteger("KvId", "rollbackMargin", margin, 0, Number.MAX_SAFE_INTEGER);
  const replicas = options.replicas ?? d.replicas;
  checkInteger("KvId", "replicas", replicas, 0, MAX_REPLICAS);
  for (
    const flag of ["bigint", "guard", "giveBack", "rememberStep", "failFast", "waitAof"] as const
  ) {
    if (options[flag] !== undefined && typeof options[flag] !== "boolean") {
      throw new TypeError(
        `KvId option ${flag} must be a boolean, got ${describe(options[flag])}`,
      );
    }
  }
  const stepRule = options.stepRule ?? d.stepRule;
  if (stepRule !== "doubling" && stepRule !== "rate") {
    throw new TypeError(
      `KvId option stepRule must be "doubling" or "rate", got ${describe(stepRule)}`,
    );
  }
  if (options.clock !== undefined && typeof options.clock !== "function") {
    throw new TypeError(`KvId option clock must be a function, got ${describe(options.clock)}`);
  }
  checkStoreSource("KvId", options.redis);
  checkDurabilityOptions("KvId", options.durability, options.serverSettings);
  if (options.floor !== undefined) {
    if (typeof options.floor !== "function") {
      throw new TypeError(`KvId option floor must be a function, got ${describe(options.floor)}`);
    }
    if (options.guard === false) {
      throw new TypeError(
        "KvId option floor needs guard (the counter is raised above it by the guard script)",
      );
    }
  }
  if (options.block !== undefined) {
    checkInteger("KvId", "block", options.block, 1, Number.MAX_SAFE_INTEGER);
    if (!Array.isArray(options.redis)) {
      throw new TypeError("KvId option block needs several servers in the redis option");
    }
  }
  if (options.store !== undefined) {
    if (options.redis !== undefined) {
      throw new TypeError("KvId: give either the redis option or the store option, not both");
    }
    if (typeof options.store?.reserve !== "function") {
      throw new TypeError("KvId option store must have a reserve() method");
    }
  }
  return {
    key,
    redis: options.redis,
    store: options.store,
    block: options.block ?? d.block,
    minStep,
    maxStep,
    initialStep,
    initialStepGiven: options.initialStep !== undefined,
    segmentDuration,
    prefetchAt,
    timeout,
    failFast: options.failFast ?? d.failFast,
    bigint: options.bigint ?? d.bigint,
    guard: options.guard ?? d.guard,
    margin: BigInt(margin),
    giveBack: options.giveBack ?? d.giveBack,
    rememberStep: options.rememberStep ?? d.rememberStep,
    replicas,
    waitAof: options.waitAof ?? d.waitAof,
    stepRule,
    clock: options.clock ?? now,
    durability: options.durability ?? d.durability,
    serverSettings: options.serverSettings ?? d.serverSettings,
    floor: options.floor,
  };
}
