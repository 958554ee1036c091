/**
 * `kvid durability`: what the store's server can lose, through `DurabilityFacts` (any store).
 *
 * @module
 */

import type { Command } from "../command.ts";
import { CliError, EXIT } from "../exit.ts";

/** `kvid durability`. */
export const durability: Command = {
  name: "durability",
  usage: "durability",
  what: "Print what the server can lose and the fix (exit 1 if a generator would refuse)",
  help: `Usage: kvid durability [options]

Read what the server can lose for the hash (Redis: INFO persistence and memory, CONFIG GET
appendfsync and save, the hash's TTL; PostgreSQL, MySQL: fsync and commit settings: what every
generator reads before its first reservation) and print each setting, then each problem with
its fix. Exit 0 when a generator with durability: "strict" (the default) would serve, 1 when
it would refuse. --json prints {"key", "durable", "settings", "problems"}.`,
  options: {},
  args: [],
  anyStore: "durability",
  parse: () => ({
    async run({ key, json, target: { store }, out }) {
      // A store without a probe is trusted, as a generator trusts it.
      const d = store.durability === undefined
        ? { durable: true, settings: {}, problems: [] }
        : await store.durability(key, {
          field: "",
          mode: "strict",
          stated: {},
          judge: () => undefined,
        });
      if (json) {
        out(
          JSON.stringify({ key, durable: d.durable, settings: d.settings, problems: d.problems }),
        );
      } else {
        for (const [k, v] of Object.entries(d.settings)) out(`${k}\t${v}`);
        out(d.durable ? "durable: yes" : "durable: NO");
        for (const problem of d.problems) out(`problem: ${problem}`);
      }
      if (!d.durable) {
        throw new CliError(EXIT.failed, "the server can lose reservations (see above)");
      }
    },
  }),
};
