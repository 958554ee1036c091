/**
 * Reading the Redis store's replies: integers exactly ({@linkcode parseInteger}), text, and the
 * range a counter reply stands for.
 *
 * @module
 */

import type { IdRange } from "../../contract/store.ts";

export function text(value: unknown): string {
  if (value instanceof Uint8Array) return new TextDecoder().decode(value);
  return String(value);
}

/** The range a counter reply V stands for: V - count + 1 .. V. */
export function range(last: bigint, count: number): IdRange {
  return { first: last - BigInt(count) + 1n, last };
}

/** An integer reply as a bigint, with whether it is exact (a number above 2^53 is not). */
export function parseInteger(reply: unknown): { value: bigint; exact: boolean } | undefined {
  if (typeof reply === "bigint") return { value: reply, exact: true };
  if (typeof reply === "number") {
    if (!Number.isInteger(reply)) return undefined;
    return { value: BigInt(reply), exact: Number.isSafeInteger(reply) };
  }
  if (reply instanceof Uint8Array) reply = new TextDecoder().decode(reply);
  if (typeof reply === "string" && /^-?\d+$/.test(reply)) {
    return { value: BigInt(reply), exact: true };
  }
  return undefined;
}
