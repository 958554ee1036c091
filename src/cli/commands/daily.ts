/**
 * `kvid daily` and `kvid cleanup`: the day counters of a daily serial (`DailyId`, hash
 * `kvid:daily:<name>`), on any store. `cleanup` deletes through the Store contract
 * (`deleteDaysBefore`, dated by `now`); reading days (`daily`, `cleanup --dry-run`, and telling
 * a missing serial from one without old days) goes through `readCounters` (Redis: the hash;
 * elsewhere `CounterListing.counters`). Finding every daily serial (`kvid list`) is Redis only (`SCAN`).
 *
 * @module
 */

import { DAY_FIELD } from "../../contract/store.ts";
import { ZonedDays } from "../../daily/calendar.ts";
import { keepFromEither, MAX_KEEP_DAYS, MIN_KEEP_DAYS } from "../../daily/keep_days.ts";
import {
  type Command,
  type CommandInput,
  type CounterText,
  integerArg,
  plural,
  readCounters,
  type Target,
} from "../command.ts";
import { CliError, EXIT, usage } from "../exit.ts";
import type { RedisOps } from "../redis_ops.ts";

/** The hashes of the daily serials start with this; then the serial's name. */
export const DAILY_PREFIX = "kvid:daily:";

const dailyKey = (args: Readonly<Record<string, string>>) => `${DAILY_PREFIX}${args.name}`;

const ZONE_OPTION = { "time-zone": { type: "string" } } as const;

/** `--time-zone`, checked. */
function zoneOf(values: CommandInput["values"]): ZonedDays {
  const name = (values["time-zone"] as string | undefined) ?? "UTC";
  try {
    return new ZonedDays(name);
  } catch {
    throw usage(`--time-zone: unknown time zone ${JSON.stringify(name)}`);
  }
}

/** The counters of a daily serial; one that has none is an error, like a missing counter. */
async function dailyHash(
  target: Target,
  key: string,
  name: string,
): Promise<Map<string, CounterText>> {
  const all = await readCounters(target, key);
  if (all.size > 0) return all;
  throw new CliError(
    EXIT.failed,
    `no daily serial ${JSON.stringify(name)}: hash ${JSON.stringify(key)} does not ` +
      `exist (check the name: "kvid list" shows the daily serials)`,
  );
}

/** `kvid daily <name> [--time-zone Z]`. */
export const daily: Command = {
  name: "daily",
  usage: "daily <name> [--time-zone Z]",
  what: "Print the day counters of a daily serial (DailyId)",
  help: `Usage: kvid daily <name> [--time-zone Z] [options]

Print the day counters of daily serial <name> (fields yyyymmdd of hash kvid:daily:<name>),
oldest first, as "day<TAB>last seq", today's marked "(today)"; then how many days are
stored. Today comes from this machine's clock in the time zone. A serial whose hash does not
exist is an error (exit 1). --json prints {"key", "today", "days": {day: value}}.
Any store (Redis: HGETALL; elsewhere the store's counters()).

  --time-zone <zone>  IANA time zone of the DailyId. Default UTC`,
  options: ZONE_OPTION,
  args: ["name"],
  defaultKey: dailyKey,
  anyStore: "daily",
  parse({ args: { name }, values }) {
    const zone = zoneOf(values);
    return {
      async run({ key, json, target, out, note }) {
        const today = zone.dayAt(Date.now()).text;
        const all = await dailyHash(target, key, name);
        const days = [...all.keys()].filter((f) => DAY_FIELD.test(f)).sort();
        const valueOf = (d: string) => (all.get(d) as CounterText).value;
        if (json) {
          const counters: Record<string, string> = {};
          for (const d of days) counters[d] = valueOf(d);
          out(JSON.stringify({ key, today, days: counters }));
        } else {
          for (const d of days) out(`${d}\t${valueOf(d)}${d === today ? "\t(today)" : ""}`);
          note(`${plural(days.length, "day")} in hash ${JSON.stringify(key)}; today is ${today}`);
        }
      },
    };
  },
};

/** `kvid cleanup <name> --keep-days N [--time-zone Z] [--dry-run]`. */
export const cleanup: Command = {
  name: "cleanup",
  usage: "cleanup <name> --keep-days N [--time-zone Z] [--dry-run]",
  what: "Delete old day counters of a daily serial",
  help: `Usage: kvid cleanup <name> --keep-days N [--time-zone Z] [--dry-run] [options]

Delete the day counters (fields yyyymmdd of hash kvid:daily:<name>) more than N days old,
N >= 1: today is 0 days old, so --keep-days 7 keeps today and the 7 days before. Other
fields are left alone. Today is the earlier of this machine's and the server's (Redis TIME,
the database's clock), in the time zone: a clock running ahead never deletes a day generators
still use. A serial whose hash does not exist is an error (exit 1). A date-named counter of
interleaved servers (it has a layout) is never taken for a day.

  --keep-days <N>     Days to keep besides today, at least 1 (required)
  --time-zone <zone>  IANA time zone of the DailyId. Default UTC
  --dry-run           Print the fields that would be deleted, delete nothing

--json prints {"key", "before", "deleted"} (and "fields" with --dry-run).`,
  options: { "keep-days": { type: "string" }, ...ZONE_OPTION, "dry-run": { type: "boolean" } },
  args: ["name"],
  defaultKey: dailyKey,
  anyStore: "cleanup",
  parse({ args: { name }, values }) {
    if (values["keep-days"] === undefined) throw usage("cleanup: --keep-days N is required");
    const keepDays = integerArg(
      "--keep-days",
      values["keep-days"] as string,
      MIN_KEEP_DAYS,
      MAX_KEEP_DAYS,
    );
    const zone = zoneOf(values);
    const dryRun = values["dry-run"] === true;
    return {
      async run({ key, json, target, out, note }) {
        const today = zone.dayAt(Date.now());
        const all = await dailyHash(target, key, name);
        // Dated by the earlier of this machine's clock and the server's: a clock running ahead
        // never deletes a day other processes still use (as DailyId's cleanup does).
        const { store } = target;
        const storeDay = store.now === undefined ? undefined : zone.dayAt(await store.now());
        const before = keepFromEither(today, storeDay, keepDays).text;
        if (dryRun) {
          // As deleteDaysBefore picks them: days before the cut, not an interleaved member's.
          const fields = [...all].filter(([f, c]) =>
            DAY_FIELD.test(f) && f < before && c.layout === undefined
          ).map(([f]) => f).sort();
          if (json) out(JSON.stringify({ key, before, deleted: 0, fields }));
          else {
            note(`would delete ${plural(fields.length, "day field")} before ${before} of ${key}`);
            for (const f of fields) out(f);
          }
          return;
        }
        if (store.deleteDaysBefore === undefined) {
          throw new CliError(EXIT.failed, `the store of --url cannot delete days`);
        }
        const deleted = await store.deleteDaysBefore(key, before);
        if (json) out(JSON.stringify({ key, before, deleted }));
        else out(`deleted ${plural(deleted, "day field")} before ${before} of ${key}`);
      },
    };
  },
};

/** A daily serial, as `kvid list` shows it. */
export interface DailySerial {
  /** The serial's name (its hash without {@linkcode DAILY_PREFIX}). */
  name: string;
  /** Its hash. */
  key: string;
  /** How many day counters it holds. */
  days: number;
  /** Its latest day and that day's last serial. */
  last: { day: string; value: string } | undefined;
}

/** The daily serials: the hashes `kvid:daily:<name>` (found with `SCAN`), by name. */
export async function dailySerials(redis: RedisOps): Promise<DailySerial[]> {
  const serials: DailySerial[] = [];
  for (const key of (await redis.scan(`${DAILY_PREFIX}*`)).sort()) {
    let all: Record<string, string>;
    try {
      all = await redis.hGetAll(key);
    } catch {
      continue; // not a hash: not a daily serial
    }
    const days = Object.keys(all).filter((f) => DAY_FIELD.test(f)).sort();
    const day = days.at(-1);
    serials.push({
      name: key.slice(DAILY_PREFIX.length),
      key,
      days: days.length,
      last: day === undefined ? undefined : { day, value: all[day] },
    });
  }
  return serials;
}
