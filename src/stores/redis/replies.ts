/**
 * Reading the Redis store's replies: integers exactly ({@linkcode parseInteger}), text, and the
 * range a counter reply stands for.
 *
 * @module
 */

import type { IdRange, Reservation } from "../../contract/store.ts";
import type { RedisReserveOptions as ReserveOptions } from "./store_options.ts";
import { MAX_ID, poolField, stepField } from "../../contract/store.ts";

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

/** The ARGV of `RESERVE_SCRIPT` (scripts.ts) for a reservation of `count` IDs. */
export function reserveArgs(field: string, count: number, options: ReserveOptions): string[] {
  // A counter is never written past 2^63-1 (no client could increment it again): capped, the
  // increment overflows and the counter stays a valid integer.
  const raiseTo = options.raiseTo > MAX_ID ? MAX_ID : options.raiseTo;
  return [
    field,
    String(count),
    String(options.floor),
    String(raiseTo),
    options.loadStep === true ? stepField(field) : "",
    String(Math.max(count, options.maxCount ?? count)),
    options.pool === true ? poolField(field) : "",
  ];
}

/** The reservation `RESERVE_SCRIPT`'s reply stands for; throws on any other reply. */
export function reservationFrom(reply: unknown): Reservation {
  if (!Array.isArray(reply) || reply.length < 3) {
    throw new Error(`unexpected script reply ${String(reply)}`);
  }
  // Lua's false arrives as null (RESP2) or false (RESP3): anything not an integer reads as none.
  const last = parseInteger(reply[0]);
  const pooledFirst = parseInteger(reply[3]);
  const used = parseInteger(reply[2]);
  if (last === undefined || !last.exact || used === undefined) {
    throw new Error(`unexpected script reply ${String(reply[0])}`);
  }
  const first = pooledFirst !== undefined && pooledFirst.exact
    ? pooledFirst.value
    : last.value - used.value + 1n;
  if (first > last.value) throw new Error(`unexpected script reply ${String(reply)}`);
  const remembered = parseInteger(reply[4])?.value;
  const step = remembered !== undefined && remembered > 0n &&
      remembered <= BigInt(Number.MAX_SAFE_INTEGER)
    ? Number(remembered)
    : undefined;
  const ttlRemovedMs = Number(String(reply[5] ?? 0)) || 0;
  return {
    ranges: [{ first, last: last.value }],
    raised: Number(reply[1]) === 1,
    step,
    ttlRemovedMs,
  };
}
