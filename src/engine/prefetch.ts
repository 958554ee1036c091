/**
 * When the next reservation starts: the prefetch lead, which moves the prefetch mark earlier
 * when `prefetchAt` alone would leave too few IDs for the round trip. (Whether a prefetch may be
 * sent at all stays inline in `kvid.ts`: it is asked on every `next()` between the mark and the
 * reservation's landing, where a call with its arguments read up front would read the clock per
 * ID.)
 *
 * @module
 */

/**
 * Round trips the IDs left at the prefetch's start must last at the rate seen: the prefetch then
 * lands before the callers run dry even when a round trip is slower than the last one.
 */
const LEAD_ROUND_TRIPS = 4;
/** How fast the slowest recent round trip is forgotten, per reservation. */
const SLOW_TRIP_DECAY = 0.8;

/**
 * The prefetch lead: how many IDs should be left when the next reservation starts so that, at the
 * rate seen since the previous reservation, they last 4 of the slowest recent round trips.
 * `prefetchAt` alone can be too little when segments are short and the network slow. Pure: the
 * caller passes the time, the IDs taken so far and the last round trip.
 *
 * @example 1,000 IDs a ms and 2 ms round trips: start with 8,000 IDs left
 * ```ts
 * import { PrefetchLead } from "./prefetch.ts";
 * import assert from "node:assert/strict";
 *
 * const lead = new PrefetchLead();
 * assert.ok(lead.reserved(0, 0, 2) === 0); // no rate yet
 * assert.ok(lead.reserved(10, 10_000, 2) === 8_000);
 * ```
 */
export class PrefetchLead {
  #slowTrip = 0;
  #lastAt: number | undefined;
  #lastTaken = 0;

  /**
   * Record a reservation completed at `now` (ms), when `taken` IDs in all had been taken or asked
   * for, whose round trip took `tripMs`; returns the lead, in IDs, for the segment it brought.
   */
  reserved(now: number, taken: number, tripMs: number): number {
    this.#slowTrip = Math.max(tripMs, this.#slowTrip * SLOW_TRIP_DECAY);
    const lastAt = this.#lastAt;
    // A clock that went back gives no rate.
    const rate = lastAt === undefined || now < lastAt
      ? 0
      : (taken - this.#lastTaken) / Math.max(now - lastAt, 1);
    this.#lastAt = now;
    this.#lastTaken = taken;
    return rate * this.#slowTrip * LEAD_ROUND_TRIPS;
  }
}
