/**
 * {@linkcode DaySwitch}: which day a `DailyId` dates IDs by, when that day ends, and from when a
 * call that waited must read the clock again. Pure: handed the time, no I/O.
 *
 * @module
 */

import type { Day, ZonedDays } from "./calendar.ts";

/**
 * The day IDs are dated by, moved forward by the clock and never back.
 *
 * The hot path compares the clock with {@linkcode DaySwitch.end}; only at or past it does
 * {@linkcode DaySwitch.roll} compute the next day. A call that read the clock before waiting
 * for a reservation is checked again only when it started within `recheckMargin` ms of the end
 * (a call waits at most `timeout`): before that, one read is enough.
 *
 * @example Midnight in Shanghai
 * ```ts
 * import { ZonedDays } from "./calendar.ts";
 * import { DaySwitch } from "./day_switch.ts";
 * import assert from "node:assert/strict";
 *
 * const days = new DaySwitch(new ZonedDays("Asia/Shanghai"), 65_000);
 * const noon = Date.parse("2026-11-30T04:00:00Z"); // 12:00 in Shanghai
 * assert.ok(days.roll(noon)?.text === "20261130");
 * assert.ok(days.end === Date.parse("2026-11-30T16:00:00Z"));
 * assert.ok(days.roll(noon - 86_400_000) === undefined, "a clock going back keeps the day");
 * assert.ok(!days.endedWhileWaiting(noon, () => days.end - 1));
 * assert.ok(days.endedWhileWaiting(days.end - 1, () => days.end));
 * ```
 */
export class DaySwitch {
  /** The day IDs are dated by; undefined before the first roll. */
  day: Day | undefined;
  /** Epoch ms when {@linkcode DaySwitch.day} ends; -Infinity before the first roll. */
  end = -Infinity;
  /**
   * From this instant on, a call may still be waiting when the day ends (it waits at most the
   * margin): its result is checked against the clock again.
   */
  recheckFrom = -Infinity;
  readonly #zone: ZonedDays;
  readonly #recheckMargin: number;

  /**
   * @param zone The calendar of the days.
   * @param recheckMargin How long a call may wait (its timeout and the event loop's slack), ms.
   */
  constructor(zone: ZonedDays, recheckMargin: number) {
    this.#zone = zone;
    this.#recheckMargin = recheckMargin;
  }

  /**
   * Move to the day at `now` (never back to an earlier one) and compute when it ends.
   *
   * @param now A clock reading in epoch ms, within the calendar's years.
   * @returns The day started, or undefined when the day stays (the clock went back, or a zone
   *   repeats the last hour of a day).
   */
  roll(now: number): Day | undefined {
    let day = this.#zone.dayAt(now);
    const current = this.day;
    let started: Day | undefined;
    if (current !== undefined && day.ymd <= current.ymd) {
      // The clock went back (or a zone repeats the last hour of a day): IDs never go back.
      day = current;
    } else {
      this.day = started = day;
    }
    this.end = this.#zone.endOf(day, now);
    this.recheckFrom = this.end - this.#recheckMargin;
    return started;
  }

  /**
   * Whether the day ended while a call that read the clock at `readAt` waited: its result is
   * then dated yesterday. The clock is read again only near the end of the day.
   */
  endedWhileWaiting(readAt: number, clock: () => number): boolean {
    return readAt >= this.recheckFrom && !(clock() < this.end);
  }
}
