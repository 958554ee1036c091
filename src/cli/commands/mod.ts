/**
 * The command table of the CLI, in the order `kvid --help` lists it: one entry per command.
 *
 * @module
 */

import type { Command, StandaloneCommand } from "../command.ts";
import { floor, get, list } from "./counters.ts";
import { cleanup, daily } from "./daily.ts";
import { durability } from "./durability.ts";
import { next } from "./next.ts";

/** `encode` or `decode`, loaded only when run (the other commands do not load the cipher). */
function codec(name: "encode" | "decode", usage: string, what: string): StandaloneCommand {
  return {
    name,
    usage,
    what,
    async runAlone(args) {
      const { codecCommand, processIo } = await import("../codec.ts");
      return await codecCommand(name, args, processIo());
    },
  };
}

/** Every command of `kvid`, in the order of `kvid --help` and the CLI's module doc table. */
export const COMMAND_TABLE: readonly (Command | StandaloneCommand)[] = [
  next,
  get,
  list,
  floor,
  daily,
  cleanup,
  durability,
  codec(
    "encode",
    "encode [ID ...] [--form F] [--width N] [--encrypt]",
    "Write IDs in a public form, no server (kvid encode --help)",
  ),
  codec(
    "decode",
    "decode [TEXT ...] [--form F] [--width N] [--encrypt]",
    "Read public forms back into IDs",
  ),
];
