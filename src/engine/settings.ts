/**
 * A {@linkcode KvIdOptions} checked and completed with {@linkcode KVID_DEFAULTS}: what a
 * generator runs on, decided once at construction.
 *
 * @module
 */

import { checkDurabilityOptions } from "../contract/durability.ts";
import { checkStoreSource } from "../runtime/store_source.ts";
import { checkCounterName, checkName, describe } from "../contract/validate.ts";
import type { KvIdOptions } from "./kvid_options.ts";
import { KVID_DEFAULTS, KVID_OPTIONS, numberOption } from "./defaults.ts";

const OPTION_NAMES = new Set(Object.keys(KVID_OPTIONS));
/** The options that are booleans: those whose default is one. */
const FLAGS = (Object.keys(KVID_OPTIONS) as (keyof KvIdOptions)[]).filter((k) =>
  typeof KVID_OPTIONS[k].default === "boolean"
);
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
export type KvIdSettings = Readonly<
  & Required<Omit<KvIdOptions, "redis" | "store" | "floor" | "rollbackMargin">>
  & Pick<KvIdOptions, "redis" | "store" | "floor">
  & {
    /** The `initialStep` option was given (the remembered step is then not looked up). */
    initialStepGiven: boolean;
    /** `rollbackMargin`, as a bigint. */
    margin: bigint;
  }
>;

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
// object (one each otherwise, which tests/support/idle_heap.ts counts in bytes) and skip the checks.
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
  const minStep = numberOption("KvId", "minStep", options.minStep);
  const maxStep = numberOption("KvId", "maxStep", options.maxStep, { minStep });
  const initialStep = numberOption("KvId", "initialStep", options.initialStep, {
    minStep,
    maxStep,
  });
  const segmentDuration = numberOption("KvId", "segmentDuration", options.segmentDuration);
  const prefetchAt = numberOption("KvId", "prefetchAt", options.prefetchAt);
  const timeout = numberOption("KvId", "timeout", options.timeout);
  const margin = numberOption("KvId", "rollbackMargin", options.rollbackMargin);
  const replicas = numberOption("KvId", "replicas", options.replicas);
  for (const flag of FLAGS) {
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
    numberOption("KvId", "block", options.block);
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
