/**
 * The words of a store's durability, whatever the store: the {@linkcode DurabilityMode}, its
 * option's check, and several servers' reports as one ({@linkcode mergeDurability}). The verdict
 * on a report is the engine's alone (`src/engine/durability_gate.ts`); a store that must decide
 * within one call asks it (`DurabilityOptions.judge`).
 *
 * @module
 */

import type { StoreDurability } from "./store.ts";

/**
 * How much loss a generator accepts from its store: `"strict"` refuses a store that can lose a
 * confirmed reservation (no AOF, a setting the server will not tell); `"best-effort"` serves
 * from it (a crash can then re-issue IDs). An eviction policy that can evict the counter is
 * refused under both.
 *
 * @example
 * ```ts
 * import type { DurabilityMode } from "@kvid/core";
 * import assert from "node:assert/strict";
 *
 * const modes: DurabilityMode[] = ["strict", "best-effort"]; // the default first
 * assert.ok(modes.includes("best-effort"));
 * ```
 */
export type DurabilityMode = "strict" | "best-effort";

/** Check a `durability` option of `who`. */
export function checkDurabilityOptions(
  who: string,
  mode: unknown,
  settings: unknown,
): void {
  if (mode !== undefined && mode !== "strict" && mode !== "best-effort") {
    throw new TypeError(
      `${who} option durability must be "strict" or "best-effort", got ${
        typeof mode === "string" ? JSON.stringify(mode.slice(0, 40)) : typeof mode
      }`,
    );
  }
  if (settings === undefined) return;
  if (settings === null || typeof settings !== "object" || Array.isArray(settings)) {
    throw new TypeError(`${who} option serverSettings must be an object of strings`);
  }
  for (const [k, v] of Object.entries(settings)) {
    if (typeof v !== "string") {
      throw new TypeError(`${who} option serverSettings.${k} must be a string`);
    }
  }
}

/** The opt-out a generator's refusal names: the library's option. */
export const LIBRARY_OPT_OUT = `durability: "best-effort"`;

/**
 * A generator's durability refusal (`reason: "not-durable"`) in the words of a caller with its
 * own knob (the service's `KVID_DURABILITY=best-effort`): the same sentence, that knob named.
 */
export function refusalWith(err: Error, optOut: string): string {
  return err.message.replace(LIBRARY_OPT_OUT, optOut);
}

/**
 * The durability of several independent servers as one: durable when every one is, their
 * settings and problems each named by the server's index.
 */
export function mergeDurability(
  members: readonly (StoreDurability | undefined)[],
): StoreDurability {
  const settings: Record<string, string> = {};
  const problems: string[] = [];
  let lossWithoutCrash = false;
  members.forEach((d, i) => {
    if (d === undefined) {
      settings[`${i}.probe`] = "not yet (unreachable; probed at its next use)";
      return;
    }
    for (const [k, v] of Object.entries(d.settings)) settings[`${i}.${k}`] = v;
    for (const p of d.problems) problems.push(`server ${i}: ${p}`);
    lossWithoutCrash ||= d.lossWithoutCrash === true;
  });
  return { durable: problems.length === 0, settings, problems, lossWithoutCrash };
}
