/**
 * The layout of an interleaved counter, shared by the stores that record it (see
 * `MemberReserveOptions.layout`): where it lives next to the counter, how it is written, and
 * the refusals every store words the same way.
 *
 * @module
 */

import { KvIdError } from "../../contract/errors.ts";

/** The field (Redis) or key part (Deno KV) of a counter's layout: this prefix, then the name. */
export const LAYOUT_FIELD_PREFIX = "\u0000layout:";

/**
 * The layout string of member `index` of `members` with blocks of `block` IDs, as stored: the
 * same text the Redis interleaved store has written since its first version, so sets made
 * before keep working.
 */
export function layoutOf(members: number, block: number, index: number): string {
  return `v1 servers=${members} block=${block} index=${index}`;
}

type Where = { key: string; field: string };

/**
 * Check a counter's recorded layout against the one a reservation asks for (undefined: a
 * single-store reservation), throwing the `"config"` refusal; `value` is the counter's value.
 */
export function checkLayout(
  recorded: unknown,
  value: bigint,
  asked: string | undefined,
  where: Where,
): void {
  const found = recorded === null || recorded === undefined ? undefined : String(recorded);
  if (asked === undefined) {
    if (found !== undefined) throw interleavedCounter(found, where);
    return;
  }
  if (found !== undefined && found !== asked) throw otherLayout(found, asked, where);
  if (found === undefined && value !== 0n) throw singleStoreCounter(String(value), where);
}

/** A set's member found another layout on the counter. */
export function otherLayout(found: string, asked: string, where: Where): KvIdError {
  return new KvIdError(
    "config",
    `this store holds the layout "${found}" for this counter, not "${asked}": the number of members, the block and the members' order must not change on a live counter (use a new key or name)`,
    where,
  );
}

/** A set's member found a value without a layout: a single-store counter. */
export function singleStoreCounter(value: string, where: Where): KvIdError {
  return new KvIdError(
    "config",
    `this store holds this counter as a single-store one (value ${value}, no layout): its IDs were handed out by a generator on one store or the CLI, and interleaved blocks would repeat them (use a new key or name)`,
    where,
  );
}

/** A single-store reservation found a layout: the counter belongs to an interleaved set. */
export function interleavedCounter(found: string, where: Where): KvIdError {
  return new KvIdError(
    "config",
    `this counter belongs to interleaved servers (layout "${found}"): use a generator with the same list of stores (redis: [...] or an InterleavedStore), or another name`,
    where,
  );
}
