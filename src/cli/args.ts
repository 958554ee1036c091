/**
 * The CLI's command line: the options every command takes, the help, and parsing and checking
 * `argv` into a {@linkcode Parsed} command (the command table, `commands/mod.ts`, checks its
 * own arguments).
 *
 * @module
 */

import { parseArgs } from "node:util";
import config from "../../deno.json" with { type: "json" };
import { storeKind } from "../stores/store_url.ts";
import { counterNameProblem } from "../contract/validate.ts";
import {
  type Command,
  integerArg,
  type Job,
  type OptionSpec,
  type StandaloneCommand,
} from "./command.ts";
import { COMMAND_TABLE } from "./commands/mod.ts";
import { CliError, EXIT, usage } from "./exit.ts";

/** What `kvid --version` prints. */
export const VERSION = `kvid (${config.name}) ${config.version}`;

const DEFAULT_URL = "redis://127.0.0.1:6379";
const DEFAULT_TIMEOUT_MS = 5_000;

const GLOBAL_OPTIONS: Readonly<Record<string, OptionSpec>> = {
  url: { type: "string" },
  key: { type: "string" },
  json: { type: "boolean" },
  timeout: { type: "string" },
  help: { type: "boolean", short: "h" },
  version: { type: "boolean" },
};

const STORE_COMMANDS = new Map<string, Command>();
const STANDALONE = new Map<string, StandaloneCommand>();
for (const c of COMMAND_TABLE) {
  if ("parse" in c) STORE_COMMANDS.set(c.name, c);
  else STANDALONE.set(c.name, c);
}

/** What runs on every store, for `--url`'s help: "next, get, list, ...". */
export const ANY_STORE: string = [...STORE_COMMANDS.values()].flatMap((c) => c.anyStore ?? [])
  .join(", ");

const COMMON_HELP = `Options of every command:
  --url <url>       Server, redis://[user:password@]host:port[/db] or rediss://...
                    or postgres://, mysql://, which run ${ANY_STORE}
                    Default: $KVID_STORE_URL, $KVID_REDIS_URL, else ${DEFAULT_URL}
  --key <hash>      The hash holding the counters. Default "kvid"
                    (daily, cleanup: "kvid:daily:<name>")
  --json            Print JSON (values as decimal strings, exact up to 2^63-1);
                    errors go to stderr as {"error": {"message", "exit"}}
  --timeout <ms>    Give up after this long (connect and commands). Default ${DEFAULT_TIMEOUT_MS}
  -h, --help        Show help
  --version         Print the version

Exit codes: 0 done, 1 the command failed, 2 bad arguments,
            3 the server could not be reached or used (network, auth, timeout)`;

/**
 * Each command's usage and what it does: the list in `kvid --help`, and the table of the CLI's
 * module doc (src/cli/mod.ts; `tests/cli/cli_test.ts` checks that they agree).
 */
export const COMMANDS: readonly (readonly [usage: string, what: string])[] = COMMAND_TABLE.map((
  c,
) => [c.usage, c.what] as const);

const MAIN_HELP = `kvid: admin CLI for @kvid/core counters (hash fields reserved with HINCRBY)

Usage: kvid <command> [arguments] [options]

Commands:
${COMMANDS.map(([usage, what]) => `  ${usage}\n      ${what}`).join("\n")}

Run "kvid <command> --help" for a command's details.

${COMMON_HELP}`;

/** A command line, checked: the job and where it runs. */
export interface Parsed {
  /** The command's entry. */
  command: Command;
  /** What to run. */
  job: Job;
  /** `--url`, or its default; its scheme is a known one. */
  url: string;
  /** The hash. */
  key: string;
  /** `--json`. */
  json: boolean;
  /** `--timeout`, in ms. */
  timeout: number;
}

/** What `kvid` prints for `--help` or `--version`, without connecting. */
export interface Print {
  /** The text. */
  print: string;
}

/** A command that needs no store, with its arguments (`kvid help encode`: `--help`). */
export interface Standalone {
  /** The command. */
  alone: StandaloneCommand;
  /** The arguments after its name. */
  args: string[];
}

/**
 * Parse and check `argv` (as `Deno.args`), every argument before connecting.
 *
 * @example
 * ```ts
 * import { parse } from "./args.ts";
 * import assert from "node:assert/strict";
 *
 * const parsed = parse(["next", "order", "-n", "3", "--url", "redis://127.0.0.1:6379"]);
 * assert.ok("job" in parsed && parsed.command.name === "next" && parsed.key === "kvid");
 * assert.throws(() => parse(["next", "order", "-n", "0"]), /-n must be an integer/);
 * ```
 *
 * @param argv The arguments.
 * @returns The command to run, or what to print.
 * @throws {CliError} Exit 2 for bad arguments, exit 1 for a name beginning with NUL.
 */
export function parse(argv: string[]): Parsed | Print | Standalone {
  // A command without a store reads its own options (encode, decode).
  const standalone = STANDALONE.get(argv[0]);
  if (standalone !== undefined) return { alone: standalone, args: argv.slice(1) };
  // "-n=3" as "--count=3" is: parseArgs would read the value of a short option as "=3".
  argv = argv.flatMap((a) => /^-[a-zA-Z]=/.test(a) ? [a.slice(0, 2), a.slice(3)] : [a]);
  const all: Record<string, OptionSpec> = { ...GLOBAL_OPTIONS };
  for (const c of STORE_COMMANDS.values()) Object.assign(all, c.options);
  checkNegative(argv, all);
  let first;
  try {
    first = parseArgs({ args: argv, options: all, allowPositionals: true, strict: true });
  } catch (err) {
    throw usage(parseError(err));
  }
  const name = first.positionals[0];
  if (first.values.version) return { print: VERSION };
  if (name === undefined || name === "help") {
    const topic = name === "help" ? first.positionals[1] ?? "" : "";
    const alone = STANDALONE.get(topic);
    if (alone !== undefined) return { alone, args: ["--help"] };
    if (topic !== "" && !STORE_COMMANDS.has(topic)) {
      throw usage(`unknown command ${JSON.stringify(topic)}`);
    }
    if (first.values.help || name === "help") return { print: helpOf(topic) };
    throw usage("no command given");
  }
  const command = STORE_COMMANDS.get(name);
  if (command === undefined) throw usage(`unknown command ${JSON.stringify(name)}`);
  if (first.values.help) return { print: helpOf(name) };
  // Again with this command's options only, so a misplaced option is refused.
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      options: { ...GLOBAL_OPTIONS, ...command.options },
      allowPositionals: true,
      strict: true,
    });
  } catch (err) {
    const option = unknownOption(err);
    throw usage(option ? `${name} has no option ${option}` : `${name}: ${parseError(err)}`);
  }
  const names = command.args;
  const positionals = parsed.positionals.slice(1);
  if (positionals.length !== names.length) {
    const shape = names.map((n) => `<${n}>`).join(" ");
    throw usage(
      `${name} takes ${names.length || "no"} argument${names.length === 1 ? "" : "s"}` +
        `${shape ? ` (${shape})` : ""}, got ${positionals.length}`,
    );
  }
  const args: Record<string, string> = {};
  names.forEach((n, i) => args[n] = positionals[i]);
  if (args.name !== undefined && args.name.length === 0) throw usage("the name must not be empty");
  const problem = args.name === undefined ? undefined : counterNameProblem(args.name);
  if (problem !== undefined) {
    // KvId's rule: NUL-first fields are the library's own; control characters reach terminals.
    throw new CliError(EXIT.failed, `the name ${problem}`);
  }
  const values = parsed.values as Record<string, string | boolean | undefined>;
  const url = (values.url as string | undefined) || Deno.env.get("KVID_STORE_URL") ||
    Deno.env.get("KVID_REDIS_URL") || DEFAULT_URL;
  try {
    storeKind(url, "--url");
  } catch (err) {
    throw usage((err as Error).message);
  }
  const key = (values.key as string | undefined) ?? command.defaultKey?.(args) ?? "kvid";
  if (key.length === 0) throw usage("--key must not be empty");
  const timeout = values.timeout === undefined
    ? DEFAULT_TIMEOUT_MS
    : integerArg("--timeout", values.timeout as string, 1, 3_600_000);
  const job = command.parse({ args, values });
  return { command, job, url, key, json: values.json === true, timeout };
}

function helpOf(topic: string): string {
  const command = STORE_COMMANDS.get(topic);
  return command === undefined ? MAIN_HELP : `${command.help}\n\n${COMMON_HELP}`;
}

/**
 * Refuse a negative number before parseArgs reads it as an unknown option (its own message
 * for that is a hint about `--` with an unbalanced quote).
 */
function checkNegative(argv: string[], options: Record<string, OptionSpec>): void {
  const takesValue = new Set<string>();
  for (const [name, spec] of Object.entries(options)) {
    if (spec.type !== "string") continue;
    takesValue.add(`--${name}`);
    if (spec.short) takesValue.add(`-${spec.short}`);
  }
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === "--") return;
    if (!/^-\d/.test(argv[i])) continue;
    const before = argv[i - 1];
    const command = argv.find((a) => !a.startsWith("-")) ?? "kvid";
    const what = before !== undefined && takesValue.has(before) ? before : command;
    throw usage(
      `${what}: negative numbers are not accepted, got ${JSON.stringify(argv[i])}`,
    );
  }
}

/** The option parseArgs refused as unknown (its error code says so; its message names it). */
function unknownOption(err: unknown): string | undefined {
  if ((err as { code?: string }).code !== "ERR_PARSE_ARGS_UNKNOWN_OPTION") return undefined;
  return /'([^']+)'/.exec((err as Error).message)?.[1];
}

/** parseArgs' message in a sentence of ours. */
function parseError(err: unknown): string {
  const unknown = unknownOption(err);
  if (unknown) return `unknown option ${unknown}`;
  const message = (err as Error).message;
  const option = /Option '(-\w, )?(--[\w-]+)/.exec(message)?.[2];
  if (option && /argument missing/.test(message)) return `${option} needs a value`;
  if (option && /ambiguous/.test(message)) return `${option} needs a value`;
  if (option && /does not take an argument/.test(message)) return `${option} takes no value`;
  return message.split(". ")[0];
}
