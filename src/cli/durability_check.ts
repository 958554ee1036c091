/**
 * The durability check of the commands that reserve (`next`, `floor`): the store is read as a
 * generator reads it before its first reservation, and refused as a generator refuses it, with
 * the same opt-out (`--durability best-effort`, the library's `durability: "best-effort"`).
 *
 * @module
 */

import type { DurabilityMode } from "../contract/durability.ts";
import type { StoreDurability } from "../contract/store.ts";
import { durabilityRefusal } from "../engine/durability_gate.ts";
import type { Target } from "./command.ts";
import { CliError, EXIT, usage } from "./exit.ts";

/** The option `next` and `floor` take. */
export const DURABILITY_OPTION = { durability: { type: "string" } } as const;

/** Its line in their help. */
export const DURABILITY_HELP =
  `  --durability <m>  "strict" (default): refuse a store that can lose reservations, as a
                    generator does (see "kvid durability"); "best-effort": accept the loss`;

/** `--durability`, checked before connecting (exit 2 for another value). */
export function durabilityMode(value: unknown): DurabilityMode {
  if (value === undefined) return "strict";
  if (value === "strict" || value === "best-effort") return value;
  throw usage(`--durability must be "strict" or "best-effort", got ${JSON.stringify(value)}`);
}

/**
 * Refuse (exit 1) what a generator in `mode` refuses, before reserving on counter `name`.
 *
 * @throws {CliError} Exit 1 with the store's problems and the fix.
 */
export async function checkDurability(
  target: Target,
  key: string,
  name: string,
  mode: DurabilityMode,
): Promise<void> {
  const { store } = target;
  // A store without a probe is trusted, as a generator trusts it.
  if (store.durability === undefined) return;
  // The generators' verdict, the one there is (engine/durability_gate.ts), in the CLI's knob.
  const judge = (d: StoreDurability) =>
    durabilityRefusal(d, mode, key, name, "--durability best-effort");
  const refusal = judge(await store.durability(key, { field: name, mode, stated: {}, judge }));
  if (refusal !== undefined) throw new CliError(EXIT.failed, refusal.message);
}
