/**
 * `kvid next`: reserve IDs and print them, through the Store contract (any store).
 *
 * @module
 */

import { type Command, integerArg, mustExist, printIds } from "../command.ts";
import {
  checkDurability,
  DURABILITY_HELP,
  DURABILITY_OPTION,
  durabilityMode,
} from "../durability_check.ts";

/** The most IDs one `next` reserves. */
export const MAX_COUNT = 10_000_000;

/** `kvid next <name> [-n N] [--create]`. */
export const next: Command = {
  name: "next",
  usage: "next <name> [-n N] [--create]",
  what: "Reserve N IDs (default 1) and print them",
  help: `Usage: kvid next <name> [-n N] [--create] [options]

Reserve N IDs (1 to ${MAX_COUNT}, default 1) of counter <name> in one atomic step (Redis:
HINCRBY; SQL: one UPDATE) and print them, one per line; they are never handed out by a
generator. A counter that does not exist
is an error (exit 1: a typo would start a new counter at 1) unless --create is given (the
check reads it first: Redis HGET, elsewhere the store's counters()).
A store that can lose reservations is refused (exit 1), as a generator refuses it, unless
--durability best-effort is given. --json prints {"key", "name", "first", "last", "count"}.

  -n, --count <N>   How many IDs. Default 1
  --create          Start the counter if it does not exist
${DURABILITY_HELP}`,
  options: {
    count: { type: "string", short: "n" },
    create: { type: "boolean" },
    ...DURABILITY_OPTION,
  },
  args: ["name"],
  anyStore: "next",
  parse({ args: { name }, values }) {
    const count = values.count === undefined
      ? 1
      : integerArg("-n", values.count as string, 1, MAX_COUNT);
    const create = values.create === true;
    const mode = durabilityMode(values.durability);
    return {
      async run({ key, json, target, out }) {
        if (!create) await mustExist(target, key, name);
        await checkDurability(target, key, name, mode);
        // Whatever the server says (an admin tool): no floor, no guard; exact past 2^53.
        const { ranges } = await target.store.reserve(key, name, count, {
          floor: 0n,
          raiseTo: 0n,
          guard: false,
          exact: true,
        });
        const { first, last } = ranges[0];
        if (json) out(JSON.stringify({ key, name, first: `${first}`, last: `${last}`, count }));
        else printIds(out, first, last);
      },
    };
  },
};
