/**
 * The defaults of {@linkcode KvIdOptions}, written once: the generator uses these values and each
 * option's `@default` in `kvid_options.ts` names the same one.
 *
 * @module
 */

import type { KvIdOptions } from "./kvid_options.ts";

/**
 * What a {@linkcode KvIdOptions} option left out means. Frozen. Options whose default is not a
 * value are not here: `redis` (the client given to `configure()`), `store` (made from `redis`),
 * `initialStep` (`minStep`), `clock` (`performance.now()`), `floor` (none); `maxStep` is at least
 * `minStep`.
 *
 * @example
 * ```ts
 * import { KVID_DEFAULTS } from "./defaults.ts";
 * import assert from "node:assert/strict";
 *
 * assert.ok(KVID_DEFAULTS.timeout === 5_000 && Object.isFrozen(KVID_DEFAULTS));
 * ```
 */
export const KVID_DEFAULTS: Readonly<{
  key: string;
  block: number;
  minStep: number;
  maxStep: number;
  segmentDuration: number;
  prefetchAt: number;
  timeout: number;
  failFast: boolean;
  bigint: boolean;
  guard: boolean;
  rollbackMargin: number;
  giveBack: boolean;
  rememberStep: boolean;
  replicas: number;
  waitAof: boolean;
  stepRule: NonNullable<KvIdOptions["stepRule"]>;
  durability: NonNullable<KvIdOptions["durability"]>;
  serverSettings: Readonly<Record<string, string>>;
}> = Object.freeze({
  key: "kvid",
  block: 1_000,
  minStep: 1,
  maxStep: 1_000_000,
  segmentDuration: 600_000,
  prefetchAt: 0.2,
  timeout: 5_000,
  failFast: true,
  bigint: false,
  guard: true,
  rollbackMargin: 0,
  giveBack: true,
  rememberStep: true,
  replicas: 0,
  waitAof: true,
  stepRule: "doubling",
  durability: "strict",
  serverSettings: Object.freeze({}),
});
