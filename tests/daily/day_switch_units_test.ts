/**
 * DaySwitch, pure: handed the time. The day a `DailyId` dates IDs by, when it ends (the next
 * local midnight, a DST day's 23 or 25 hours included), never back, and when a call that waited
 * must read the clock again. A wrong end makes `DailyId` roll forever; here it fails an
 * assertion first.
 */

import "../support/deadline.ts"; // a time limit on every test of this file
import assert from "node:assert/strict";
import { ZonedDays } from "../../src/daily/calendar.ts";
import { DaySwitch } from "../../src/daily/day_switch.ts";

const at = (iso: string) => Date.parse(iso);

Deno.test("DaySwitch: the day at the clock, ending at the next local midnight", () => {
  const days = new DaySwitch(new ZonedDays("Asia/Shanghai"), 65_000);
  assert.equal(days.day, undefined);
  assert.equal(days.end, -Infinity);
  assert.equal(days.recheckFrom, -Infinity);
  const noon = at("2026-11-30T04:00:00Z"); // 12:00 in Shanghai
  const started = days.roll(noon);
  assert.equal(started?.text, "20261130");
  assert.equal(days.day, started);
  assert.equal(days.end, at("2026-11-30T16:00:00Z"), "midnight in Shanghai");
  assert.equal(days.recheckFrom, days.end - 65_000);
  // One millisecond before midnight: the same day, the same end.
  assert.equal(days.roll(days.end - 1), undefined);
  assert.equal(days.end, at("2026-11-30T16:00:00Z"));
  // At midnight: the next day, ending a day later.
  assert.equal(days.roll(at("2026-11-30T16:00:00Z"))?.text, "20261201");
  assert.equal(days.end, at("2026-12-01T16:00:00Z"));
});

Deno.test("DaySwitch: a DST day ends after 23 or 25 hours", () => {
  const days = new DaySwitch(new ZonedDays("Europe/Berlin"), 1_000);
  // 2026-03-29: clocks go from 02:00 to 03:00 (CET to CEST): a day of 23 hours.
  assert.equal(days.roll(at("2026-03-28T23:00:00Z"))?.text, "20260329");
  assert.equal(days.end, at("2026-03-29T22:00:00Z"));
  assert.equal(days.end - at("2026-03-28T23:00:00Z"), 23 * 3_600_000);
  // 2026-10-25: clocks go from 03:00 back to 02:00: a day of 25 hours.
  assert.equal(days.roll(at("2026-10-24T22:00:00Z"))?.text, "20261025");
  assert.equal(days.end, at("2026-10-25T23:00:00Z"));
  assert.equal(days.end - at("2026-10-24T22:00:00Z"), 25 * 3_600_000);
});

Deno.test("DaySwitch: a clock going back keeps the day and its end", () => {
  const days = new DaySwitch(new ZonedDays("UTC"), 10_000);
  const day = days.roll(at("2026-12-04T10:00:00Z"));
  assert.equal(day?.text, "20261204");
  const end = days.end;
  assert.equal(end, at("2026-12-05T00:00:00Z"));
  // A day back: still 4 December, ending at the same midnight.
  assert.equal(days.roll(at("2026-12-03T10:00:00Z")), undefined);
  assert.equal(days.day, day);
  assert.equal(days.end, end);
  assert.equal(days.recheckFrom, end - 10_000);
});

Deno.test("DaySwitch: only a call that started within the margin of the end reads again", () => {
  const days = new DaySwitch(new ZonedDays("UTC"), 10_000);
  days.roll(at("2026-12-04T10:00:00Z"));
  const end = days.end;
  let reads = 0;
  const clock = (t: number) => () => (reads++, t);
  // Started before the margin: one read was enough, the clock is not read again.
  assert.equal(days.endedWhileWaiting(end - 10_001, clock(end + 5)), false);
  assert.equal(reads, 0);
  // Within the margin: ended exactly when the clock reads the end, not a millisecond before.
  assert.equal(days.endedWhileWaiting(end - 10_000, clock(end - 1)), false);
  assert.equal(days.endedWhileWaiting(end - 10_000, clock(end)), true);
  assert.equal(days.endedWhileWaiting(end - 1, clock(end + 1)), true);
  assert.equal(reads, 3);
});
