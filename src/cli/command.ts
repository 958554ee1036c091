/**
 * What a CLI command is: one entry of the command table ({@linkcode Command}: its usage, help,
 * options, and `parse` turning its arguments into a {@linkcode Job} that runs on the store of
 * `--url`), what a job is handed ({@linkcode Context}, {@linkcode Target}), and the checks and
 * output helpers the commands share.
 *
 * @module
 */

import type { AnyStore } from "../contract/store.ts";
import { CliError, EXIT, usage } from "./exit.ts";
import type { RedisOps } from "./redis_ops.ts";
import { LAYOUT_FIELD_PREFIX } from "../stores/interleaved/layout.ts";

/** An option of a command, as `node:util`'s `parseArgs` takes it. */
export interface OptionSpec {
  /** A string takes a value, a boolean does not. */
  type: "string" | "boolean";
  /** The one-letter form, e.g. `"n"` for `-n`. */
  short?: string;
}

/** Option values as `parseArgs` reads them, by long name. */
export type OptionValues = Readonly<Record<string, string | boolean | undefined>>;

/** What `parse` of a {@linkcode Command} is given: its arguments by name and its options. */
export interface CommandInput {
  /** The positional arguments, named as {@linkcode Command.args} names them. */
  args: Readonly<Record<string, string>>;
  /** The options given. */
  values: OptionValues;
}

/** The store a job runs on, opened from `--url`. */
export interface Target {
  /** The store, through the contract: every store the URL can name. */
  store: AnyStore;
  /**
   * On `redis://` and `rediss://`: the hash commands, so the CLI reads the hash as it is (a
   * field another tool wrote text into included) and `floor` raises without reserving.
   */
  redis: RedisOps | undefined;
  /** The URL's scheme, e.g. `"postgres:"`. */
  scheme: string;
}

/** What a running job is handed. */
export interface Context {
  /** The hash (`--key`, or the command's default). */
  key: string;
  /** `--json`: print JSON, values as exact decimal strings. */
  json: boolean;
  /** The store. */
  target: Target;
  /** Print one result line (or several, joined by newlines) to standard output. */
  out(line: string): void;
  /** Print a line for people (a summary, a note) to standard error. */
  note(line: string): void;
}

/** A command, checked and ready to run on a store. */
export interface Job {
  /** Run it. */
  run(context: Context): Promise<void>;
}

/**
 * One entry of the command table: `kvid <name> ...`.
 *
 * @example A command that prints the store's clock
 * ```ts
 * import type { Command } from "./command.ts";
 * import assert from "node:assert/strict";
 *
 * const clock: Command = {
 *   name: "clock",
 *   usage: "clock",
 *   what: "Print the server's clock",
 *   help: "Usage: kvid clock [options]\n\nPrint the server's clock, in ms since the epoch.",
 *   options: {},
 *   args: [],
 *   anyStore: "clock",
 *   parse: () => ({ run: async ({ target, out }) => out(String(await target.store.now?.())) }),
 * };
 * assert.ok(clock.args.length === 0);
 * ```
 */
export interface Command {
  /** The command, the first argument. */
  name: string;
  /** Its usage, as `kvid --help` and the CLI's module doc table list it. */
  usage: string;
  /** What it does, in one line of `kvid --help`. */
  what: string;
  /** `kvid <name> --help`, before the options every command takes. */
  help: string;
  /** Its own options, besides the ones every command takes. */
  options: Readonly<Record<string, OptionSpec>>;
  /** Its positional arguments, by name. */
  args: readonly string[];
  /** The hash when `--key` is not given; without it, `"kvid"`. */
  defaultKey?: (args: Readonly<Record<string, string>>) => string;
  /**
   * What of it runs on every store the URL can name (`"next"`, `"list"`), for `--url`'s help;
   * undefined when it runs on Redis only (none does: the Store contract reserves, reads counters
   * and deletes days).
   */
  anyStore?: string;
  /**
   * Check the arguments and options (before connecting) into the job to run.
   *
   * @throws {CliError} Exit 2 for a bad argument or option, exit 1 for a refused name.
   */
  parse(input: CommandInput): Job;
}

/**
 * A command that needs no store (`encode`, `decode`): it reads its own arguments and resolves to
 * the exit code.
 */
export interface StandaloneCommand {
  /** The command, the first argument. */
  name: string;
  /** Its usage, as `kvid --help` and the CLI's module doc table list it. */
  usage: string;
  /** What it does, in one line of `kvid --help`. */
  what: string;
  /**
   * Run it with the arguments after its name.
   *
   * @throws {CliError} A failure with its exit code.
   */
  runAlone(args: string[]): Promise<number>;
}

/**
 * An integer option or argument from `min` to `max`.
 *
 * @throws {CliError} Exit 2 naming `what`, for anything else.
 */
export function integerArg(what: string, text: string, min: number, max: number): number {
  const n = /^\d+$/.test(text) ? Number(text) : NaN;
  if (!(n >= min && n <= max)) {
    throw usage(`${what} must be an integer from ${min} to ${max}, got ${JSON.stringify(text)}`);
  }
  return n;
}

/** A counter as the CLI reads and prints it. */
export interface CounterText {
  /**
   * Its value as the store holds it: through the Store contract a non-negative integer; on
   * Redis the field's text, whatever another tool wrote there (`get` and `floor` refuse a
   * non-integer, `list` shows it).
   */
  value: string;
  /** The layout of a member of interleaved servers: `value` is then its block cycle. */
  layout?: string;
}

/**
 * The counters of hash `key` (only `names`, when given) on any store: on Redis the hash itself
 * (`HGET`, `HGETALL`: a field holding text is read as it is), elsewhere the store's
 * `counters()`. Never the library's own fields (their names begin with NUL).
 *
 * @example On a stand-in store
 * ```ts
 * import { readCounters } from "./command.ts";
 * import assert from "node:assert/strict";
 *
 * const store = {
 *   reserve: () => Promise.reject(new Error("not in this example")),
 *   counters: () => Promise.resolve(new Map([["order", { value: 42n }]])),
 * };
 * const read = await readCounters({ store, redis: undefined, scheme: "postgres:" }, "kvid");
 * assert.ok(read.get("order")?.value === "42");
 * ```
 *
 * @throws {CliError} Exit 1 on a store that cannot read counters; the store's own failures.
 */
export async function readCounters(
  target: Target,
  key: string,
  names?: readonly string[],
): Promise<Map<string, CounterText>> {
  const found = new Map<string, CounterText>();
  const { redis, store } = target;
  if (redis !== undefined) {
    const fields = names === undefined ? await redis.hGetAll(key) : Object.fromEntries(
      await Promise.all(
        names.flatMap((n) => [n, LAYOUT_FIELD_PREFIX + n]).map(async (f) =>
          [f, await redis.hGet(key, f)] as const
        ),
      ),
    );
    for (const [name, value] of Object.entries(fields)) {
      if (name.startsWith(INTERNAL) || value === null) continue;
      const layout = fields[LAYOUT_FIELD_PREFIX + name] ?? undefined;
      found.set(name, layout === undefined || layout === null ? { value } : { value, layout });
    }
    return found;
  }
  if (store.counters === undefined) {
    throw new CliError(EXIT.failed, `the store of --url cannot read counters`);
  }
  const read = await store.counters(key, names === undefined ? undefined : { names });
  for (const [name, { value, layout }] of read) {
    found.set(name, layout === undefined ? { value: `${value}` } : { value: `${value}`, layout });
  }
  return found;
}

// Fields of a hash that are not counters start with this: an interleaved counter's layout, a
// counter's remembered step and pool, each then the counter's name.
const INTERNAL = "\u0000";

/**
 * Refuse a counter that does not exist unless --create: a typo must not start a new one.
 *
 * @throws {CliError} Exit 1, naming the counter and the fix.
 */
export async function mustExist(target: Target, key: string, name: string): Promise<void> {
  if ((await readCounters(target, key, [name])).has(name)) return;
  throw new CliError(
    EXIT.failed,
    `no counter ${JSON.stringify(name)} in hash ${JSON.stringify(key)}: check the name ` +
      `("kvid list"), or pass --create to start it`,
  );
}

/** "1 day", "2 days". */
export function plural(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? "" : "s"}`;
}

/** A name as printed in a list: JSON-quoted if it holds whitespace, a quote or a backslash. */
export function quoted(name: string): string {
  return /[\s"\\]/.test(name) ? JSON.stringify(name) : name;
}

/** Print the IDs `first..last`, one a line, ten thousand lines a write. */
export function printIds(out: (lines: string) => void, first: bigint, last: bigint): void {
  for (let from = first; from <= last; from += 10_000n) {
    const lines = [];
    for (let x = from; x <= last && x < from + 10_000n; x++) lines.push(x);
    out(lines.join("\n"));
  }
}
