/**
 * How a {@linkcode DenoKvStore} lays its counters out in Deno KV: one entry
 * `[...prefix, key, field]` per counter holding a `Deno.KvU64` (the last ID reserved, as on
 * Redis), the remembered step at `[...prefix, key, "\0step:" + field]`, an interleaved counter's
 * layout at `[...prefix, key, "\0layout:" + field]`, a `DailyId`'s days at
 * `[...prefix, key, "yyyymmdd"]`.
 *
 * @module
 */

import { KvIdError } from "../../contract/errors.ts";
import { DAY_FIELD, MAX_ID } from "../../contract/store.ts";

/** Whether `part` can be a part of a KV key (string, number, bigint, boolean, Uint8Array). */
export function isKeyPart(part: unknown): boolean {
  return ["string", "number", "bigint", "boolean"].includes(typeof part) ||
    part instanceof Uint8Array;
}

/**
 * The day of an entry listed under `[...prefix, key]` (`prefixLength` parts), when the entry is
 * a `DailyId` day's counter: its last part a `yyyymmdd` string, nothing after it.
 */
export function dayOf(entryKey: Deno.KvKey, prefixLength: number): string | undefined {
  const day = entryKey[prefixLength];
  if (entryKey.length !== prefixLength + 1 || typeof day !== "string") return undefined;
  return DAY_FIELD.test(day) ? day : undefined;
}

/** The counter in an entry's value: 0 when absent; a KvU64, bigint or safe integer otherwise. */
export function counterValue(value: unknown, where: { key: string; field: string }): bigint {
  if (value === null || value === undefined) return 0n;
  let n: bigint | undefined;
  if (value instanceof Deno.KvU64) n = value.value;
  else if (typeof value === "bigint") n = value;
  else if (typeof value === "number" && Number.isSafeInteger(value)) n = BigInt(value);
  if (n === undefined || n < 0n) {
    throw new KvIdError(
      "reply",
      "the counter entry does not hold a non-negative integer (a Deno.KvU64)",
      { ...where, reason: "not-a-counter" },
    );
  }
  if (n > MAX_ID) {
    throw new KvIdError("overflow", `the counter (${n}) is above 2^63-1`, where);
  }
  return n;
}
