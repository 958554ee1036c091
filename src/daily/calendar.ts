/**
 * Calendar days in an IANA time zone: a {@linkcode Day}, day arithmetic by the Gregorian
 * calendar, and {@linkcode ZonedDays}, which finds where each local day ends (DST jumps
 * included). Pure: no I/O, the clock reading is passed in.
 *
 * @module
 */

/** A calendar day. */
export interface Day {
  /** Year, 1000 to 9999. */
  year: number;
  /** Month, 1 to 12. */
  month: number;
  /** Day of the month, 1 to 31. */
  day: number;
  /** `yyyymmdd` as a number. */
  ymd: number;
  /** `yyyymmdd`. */
  text: string;
}

const DAY_MS = 86_400_000;

/** Make a {@linkcode Day} from its parts. */
function makeDay(year: number, month: number, day: number): Day {
  const ymd = year * 10_000 + month * 100 + day;
  return { year, month, day, ymd, text: String(ymd) };
}

/** The day `n` days after `day` (before, if negative), by the Gregorian calendar. */
export function addDays(day: Day, n: number): Day {
  const d = new Date(Date.UTC(day.year, day.month - 1, day.day + n));
  return makeDay(d.getUTCFullYear(), d.getUTCMonth() + 1, d.getUTCDate());
}

/**
 * Local calendar days of one IANA time zone, from `Intl.DateTimeFormat`. Only the day
 * boundaries are computed here; the hot path compares the clock with a precomputed instant.
 */
export class ZonedDays {
  /** The canonical zone name. */
  readonly timeZone: string;
  readonly #fmt: Intl.DateTimeFormat;

  /** @param timeZone An IANA zone name (or an offset like `"+08:00"`); RangeError if unknown. */
  constructor(timeZone: string) {
    this.#fmt = new Intl.DateTimeFormat("en-US", {
      timeZone,
      calendar: "gregory",
      numberingSystem: "latn",
      year: "numeric",
      month: "numeric",
      day: "numeric",
      hour: "numeric",
      minute: "numeric",
      second: "numeric",
      hourCycle: "h23",
    });
    this.timeZone = this.#fmt.resolvedOptions().timeZone;
  }

  /** The local day at epoch ms `t`. */
  dayAt(t: number): Day {
    const p = this.#parts(t);
    return makeDay(p[0], p[1], p[2]);
  }

  /**
   * The first instant at or after `from` when the local date is past `day`: the next local
   * midnight, or the end of a DST jump that skips it. `from` must be before that instant.
   */
  endOf(day: Day, from: number): number {
    const target = Date.UTC(day.year, day.month - 1, day.day + 1); // next midnight, wall time
    let x = from;
    let offset = this.#offset(x);
    // Offsets change rarely (DST, zone history): each round handles one change before midnight.
    for (let round = 0; round < 16; round++) {
      const guess = target - offset; // when the wall clock reaches midnight if the offset holds
      if (guess <= x) return x;
      if (this.#offset(guess) === offset) return guess;
      // The offset changes in (x, guess]: find the first instant of the new one.
      let lo = x;
      let hi = guess;
      while (hi - lo > 1) {
        const mid = lo + Math.floor((hi - lo) / 2);
        if (this.#offset(mid) === offset) lo = mid;
        else hi = mid;
      }
      x = hi;
      offset = this.#offset(x);
      if (x + offset >= target) return x; // the jump skipped midnight: the day starts here
    }
    return x + DAY_MS; // unreachable with real zone data; a later call recomputes
  }

  /** Wall-clock time minus UTC, in ms, at `t`. */
  #offset(t: number): number {
    const p = this.#parts(t);
    const ms = ((t % 1000) + 1000) % 1000;
    return Date.UTC(p[0], p[1] - 1, p[2], p[3] % 24, p[4], p[5]) + ms - t;
  }

  /** [year, month, day, hour, minute, second] local at `t`. */
  #parts(t: number): number[] {
    const out = [0, 0, 0, 0, 0, 0];
    for (const { type, value } of this.#fmt.formatToParts(t)) {
      const i = PART_INDEX[type];
      if (i !== undefined) out[i] = Number(value);
    }
    return out;
  }
}

const PART_INDEX: Record<string, number | undefined> = {
  year: 0,
  month: 1,
  day: 2,
  hour: 3,
  minute: 4,
  second: 5,
};
