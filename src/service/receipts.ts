/**
 * The receipts of `/v1/segments/{name}`: each segment the service hands out is remembered with
 * a random receipt and the token it went to, and a release must show the receipts of the IDs it
 * gives back. So a token gives back only IDs that it alone was handed, each once.
 *
 * A table, not a signature: a signed receipt (an HMAC over name, range and token) needs no
 * memory, but it stays valid, so a replay after someone reserved the released IDs again would
 * pass; stopping that needs a table of used receipts anyway. Bounded: at most
 * {@linkcode MAX_RECEIPTS_PER_NAME} per name and {@linkcode MAX_RECEIPT_NAMES} names; a receipt
 * forgotten past that, or by a restart, is refused, and its IDs stay a gap.
 *
 * @module
 */

import type { IdRange } from "../contract/store.ts";

/** Receipts remembered per name, the newest; an older one is forgotten. */
export const MAX_RECEIPTS_PER_NAME = 8;
/** Names with receipts remembered, the most recently served; the oldest forgotten. */
export const MAX_RECEIPT_NAMES = 10_000;
/** Receipts one release may show. */
export const MAX_RECEIPTS_PER_RELEASE = MAX_RECEIPTS_PER_NAME;
/** A receipt's form: 16 random bytes, base64url. */
export const RECEIPT = /^[A-Za-z0-9_-]{22}$/;

interface Outstanding {
  readonly receipt: string;
  readonly holder: number;
  readonly ranges: readonly IdRange[];
}

/** The receipts of the segments one service instance handed out and nobody gave back yet. */
export class Receipts {
  readonly #byName = new Map<string, Outstanding[]>();

  /** Remember the segment `ranges` of `name` handed to `holder`: its receipt. */
  issue(name: string, holder: number, ranges: readonly IdRange[]): string {
    const receipt = randomReceipt();
    let list = this.#byName.get(name);
    if (list === undefined) {
      if (this.#byName.size >= MAX_RECEIPT_NAMES) {
        this.#byName.delete(this.#byName.keys().next().value!);
      }
      list = [];
    } else {
      this.#byName.delete(name); // set again below: the most recently served name is last
    }
    this.#byName.set(name, list);
    list.push({ receipt, holder, ranges });
    if (list.length > MAX_RECEIPTS_PER_NAME) list.shift();
    return receipt;
  }

  /**
   * Use `receipts` to give back `range` of `name` for `holder`: undefined when they cover it
   * and it ends at their segments' top (they are then used up, before the store is asked, so a
   * replay finds none), else why not.
   */
  take(
    name: string,
    holder: number,
    receipts: readonly string[],
    range: IdRange,
  ): string | undefined {
    const list = this.#byName.get(name) ?? [];
    const shown: Outstanding[] = [];
    for (const receipt of new Set(receipts)) {
      const found = list.find((o) => o.receipt === receipt);
      if (found === undefined) {
        return "a receipt is not one of a segment of this name this service instance handed " +
          "out and nobody gave back (used, forgotten, or from before a restart)";
      }
      if (found.holder !== holder) return "a receipt is of a segment handed to another token";
      shown.push(found);
    }
    const ranges = shown.flatMap((o) => o.ranges).sort((a, b) => (a.first < b.first ? -1 : 1));
    const top = ranges.at(-1)!.last;
    if (range.last !== top) {
      return `a release gives back the top of its segments: last must be ${top}`;
    }
    // From the range holding `first`, each next one adjacent, up to the top.
    let i = ranges.findIndex((r) => r.first <= range.first && range.first <= r.last);
    if (i < 0) return "first is not an ID of the receipts' segments";
    for (; i < ranges.length - 1; i++) {
      if (ranges[i + 1].first !== ranges[i].last + 1n) {
        return "the range is not wholly of the receipts' segments (they are not adjacent)";
      }
    }
    const used = new Set(shown);
    const left = list.filter((o) => !used.has(o));
    if (left.length === 0) this.#byName.delete(name);
    else this.#byName.set(name, left);
    return undefined;
  }
}

function randomReceipt(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return btoa(String.fromCharCode(...bytes)).replace(/\+/g, "-").replace(/\//g, "_")
    .replace(/=+$/, "");
}
