/**
 * The options of {@linkcode KvIdOptions} in one table ({@linkcode KVID_OPTIONS}): each name, its
 * default and its bounds, written once. The generator's checks (`settings.ts`), `DailyId`'s, the
 * service's per-name options and the docs' table (`docs/api.md`, held to it by
 * `tests/engine/defaults_test.ts`) all read it; each option's `@default` in `kvid_options.ts` names the
 * same value.
 *
 * @module
 */

import type { KvIdOptions } from "./kvid_options.ts";
import { checkInteger, checkNumber } from "../contract/validate.ts";

/** The options whose default is not a value: see {@linkcode KVID_OPTIONS}. */
type Computed = "redis" | "store" | "initialStep" | "clock" | "floor";
/** The options with a default value. */
type Defaulted = Exclude<keyof KvIdOptions, Computed>;
/** An option's value type, `undefined` left out. */
type Value<K extends keyof KvIdOptions> = NonNullable<KvIdOptions[K]>;

/** The options that are numbers: each has bounds in {@linkcode KVID_OPTIONS}. */
export type NumberOption = {
  [K in keyof KvIdOptions]-?: Value<K> extends number ? K : never;
}[keyof KvIdOptions];

/** A bound: a number, or the option (checked before) whose value it is. */
export type Bound = number | "minStep" | "maxStep";

/** What {@linkcode KVID_OPTIONS} says of a number option besides its default. */
export interface NumberRule {
  /** `"integer"`: a whole number; `"real"`: any number. */
  readonly number: "integer" | "real";
  /** The least value. */
  readonly min: Bound;
  /** The largest value. */
  readonly max: Bound;
}

/** What {@linkcode KVID_OPTIONS} says of option `K`. */
export type OptionRule<K extends keyof KvIdOptions> =
  & (K extends NumberOption ? NumberRule : unknown)
  & (K extends Defaulted ? { readonly default: Value<K> } : { readonly default?: never });

/** Setting `setTimeout` above this fires it at once. */
const MAX_TIMER_MS = 2_147_483_647;

/**
 * Every option of {@linkcode KvIdOptions}: its default (when it is a value) and, for a number,
 * its bounds. The compiler holds the names to the interface's. Options whose default is not a
 * value: `redis` (the client given to `configure()`), `store` (made from `redis`), `initialStep`
 * (`minStep`), `clock` (`performance.now()`), `floor` (none). A default below its option's `min`
 * is raised to it (`maxStep` is at least `minStep`).
 *
 * @example
 * ```ts
 * import { KVID_OPTIONS } from "./defaults.ts";
 * import assert from "node:assert/strict";
 *
 * assert.ok(KVID_OPTIONS.maxStep.default === 1_000_000 && KVID_OPTIONS.maxStep.min === "minStep");
 * ```
 */
export const KVID_OPTIONS: { readonly [K in keyof KvIdOptions]-?: OptionRule<K> } = Object.freeze({
  redis: {},
  block: { default: 1_000, number: "integer", min: 1, max: Number.MAX_SAFE_INTEGER },
  store: {},
  key: { default: "kvid" },
  minStep: { default: 1, number: "integer", min: 1, max: Number.MAX_SAFE_INTEGER },
  maxStep: { default: 1_000_000, number: "integer", min: "minStep", max: Number.MAX_SAFE_INTEGER },
  initialStep: { number: "integer", min: "minStep", max: "maxStep" },
  segmentDuration: {
    default: 600_000,
    number: "real",
    min: Number.MIN_VALUE,
    max: Number.MAX_VALUE,
  },
  prefetchAt: { default: 0.2, number: "real", min: 0, max: 1 },
  timeout: { default: 5_000, number: "real", min: 1, max: MAX_TIMER_MS },
  failFast: { default: true },
  bigint: { default: false },
  guard: { default: true },
  rollbackMargin: { default: 0, number: "integer", min: 0, max: Number.MAX_SAFE_INTEGER },
  giveBack: { default: true },
  rememberStep: { default: true },
  replicas: { default: 0, number: "integer", min: 0, max: 1_000 },
  waitAof: { default: true },
  stepRule: { default: "doubling" },
  clock: {},
  durability: { default: "strict" },
  serverSettings: { default: Object.freeze({}) },
  floor: {},
});
/** The values of `minStep` and `maxStep` a {@linkcode Bound} may name, checked before. */
export interface Steps {
  /** The `minStep` in force. */
  readonly minStep?: number;
  /** The `maxStep` in force. */
  readonly maxStep?: number;
}

/**
 * Throw unless `value` is within option `name`'s bounds in {@linkcode KVID_OPTIONS}: a TypeError
 * for a value that is not a number, a RangeError out of range, both naming `who` and the option.
 *
 * @example
 * ```ts
 * import { checkBounds } from "./defaults.ts";
 * import assert from "node:assert/strict";
 *
 * checkBounds("KvId", "maxStep", 10, { minStep: 10 });
 * assert.throws(() => checkBounds("KvId", "maxStep", 5, { minStep: 10 }), RangeError);
 * ```
 *
 * @param who Who checks, named in the error: `"KvId"` or `"DailyId"`.
 * @param name The option.
 * @param value Its value.
 * @param steps The values of `minStep` and `maxStep` a bound may name.
 * @param max A lower largest value than the table's (`DailyId`'s `minStep`: a day's serials).
 */
export function checkBounds(
  who: string,
  name: NumberOption,
  value: unknown,
  steps: Steps = {},
  max?: number,
): void {
  const rule: NumberRule = KVID_OPTIONS[name];
  const check = rule.number === "integer" ? checkInteger : checkNumber;
  check(who, name, value, bound(rule.min, steps), max ?? bound(rule.max, steps));
}

/**
 * Option `name` of a `KvId`: `given`, or else its default (raised to its least value, which an
 * option without a default value takes: `initialStep` is `minStep`), checked by
 * {@linkcode checkBounds}.
 *
 * @example
 * ```ts
 * import { numberOption } from "./defaults.ts";
 * import assert from "node:assert/strict";
 *
 * assert.ok(numberOption("KvId", "maxStep", undefined, { minStep: 2_000_000 }) === 2_000_000);
 * assert.ok(numberOption("KvId", "initialStep", undefined, { minStep: 5, maxStep: 10 }) === 5);
 * ```
 */
export function numberOption(
  who: string,
  name: NumberOption,
  given: number | undefined,
  steps: Steps = {},
): number {
  const rule: NumberRule & { readonly default?: number } = KVID_OPTIONS[name];
  const min = bound(rule.min, steps);
  const value = given ?? Math.max(rule.default ?? min, min);
  checkBounds(who, name, value, steps);
  return value;
}

function bound(b: Bound, steps: Steps): number {
  if (typeof b === "number") return b;
  const v = steps[b];
  if (v === undefined) throw new Error(`the bound ${b} was not given`);
  return v;
}

/**
 * What a {@linkcode KvIdOptions} option left out means, from {@linkcode KVID_OPTIONS}: the
 * options with a default value. Frozen.
 *
 * @example
 * ```ts
 * import { KVID_DEFAULTS } from "./defaults.ts";
 * import assert from "node:assert/strict";
 *
 * assert.ok(KVID_DEFAULTS.timeout === 5_000 && Object.isFrozen(KVID_DEFAULTS));
 * ```
 */
export const KVID_DEFAULTS: Readonly<{ [K in Defaulted]: Value<K> }> = Object.freeze(
  Object.fromEntries(
    Object.entries(KVID_OPTIONS).flatMap(([k, rule]) =>
      rule.default === undefined ? [] : [[k, rule.default]]
    ),
  ),
) as { [K in Defaulted]: Value<K> };
