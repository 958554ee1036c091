/**
 * `kvid next`: reserve IDs and print them, through the Store contract (any store).
 *
 * @module
 */

import { type Command, integerArg, mustExist, printIds } from "../command.ts";

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
--json prints {"key", "name", "first", "last", "count"}.

  -n, --count <N>   How many IDs. Default 1
  --create          Start the counter if it does not exist`,
  options: { count: { type: "string", short: "n" }, create: { type: "boolean" } },
  args: ["name"],
  anyStore: "next",
  parse({ args: { name }, values }) {
    const count = values.count === undefined
      ? 1
      : integerArg("-n", values.count as string, 1, MAX_COUNT);
    const create = values.create === true;
    return {
      async run({ key, json, target, out }) {
        if (!create) await mustExist(target, key, name);
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
