/**
 * The CLI's command line: options and help of each command, parsing and checking them into
 * {@linkcode Parsed}, the exit codes, and the error carrying one.
 *
 * @module
 */

import { parseArgs } from "node:util";
import config from "../../deno.json" with { type: "json" };
import { ZonedDays } from "../daily/calendar.ts";
import { storeKind } from "../stores/store_url.ts";

/** What `kvid --version` prints. */
export const VERSION = `kvid (${config.name}) ${config.version}`;

/** The exit codes of {@linkcode main}. */
export const EXIT: Readonly<{ ok: 0; failed: 1; usage: 2; unreachable: 3 }> = Object.freeze({
  ok: 0,
  failed: 1,
  usage: 2,
  unreachable: 3,
});

const DEFAULT_URL = "redis://127.0.0.1:6379";
const MAX_COUNT = 10_000_000;
const MAX_I64 = 2n ** 63n - 1n;

type OptionSpec = { type: "string" | "boolean"; short?: string };
const GLOBAL_OPTIONS: Record<string, OptionSpec> = {
  url: { type: "string" },
  key: { type: "string" },
  json: { type: "boolean" },
  timeout: { type: "string" },
  help: { type: "boolean", short: "h" },
  version: { type: "boolean" },
};
const COMMAND_OPTIONS: Record<string, Record<string, OptionSpec>> = {
  next: { count: { type: "string", short: "n" }, create: { type: "boolean" } },
  get: {},
  list: {},
  floor: { create: { type: "boolean" } },
  daily: { "time-zone": { type: "string" } },
  durability: {},
  cleanup: {
    "keep-days": { type: "string" },
    "time-zone": { type: "string" },
    "dry-run": { type: "boolean" },
  },
};
const ARITY: Record<string, string[]> = {
  next: ["name"],
  get: ["name"],
  list: [],
  floor: ["name", "value"],
  daily: ["name"],
  cleanup: ["name"],
  durability: [],
};

const COMMON_HELP = `Options of every command:
  --url <url>       Server, redis://[user:password@]host:port[/db] or rediss://...
                    postgres://, mysql://: next --create only, for now
                    Default: $KVID_STORE_URL, $KVID_REDIS_URL, else ${DEFAULT_URL}
  --key <hash>      The hash holding the counters. Default "kvid"
                    (daily, cleanup: "kvid:daily:<name>")
  --json            Print JSON (values as decimal strings, exact up to 2^63-1);
                    errors go to stderr as {"error": {"message", "exit"}}
  --timeout <ms>    Give up after this long (connect and commands). Default 5000
  -h, --help        Show help
  --version         Print the version

Exit codes: 0 done, 1 the command failed, 2 bad arguments,
            3 the server could not be reached or used (network, auth, timeout)`;

/**
 * Each command's usage and what it does: the list in `kvid --help`, and the table of the CLI's
 * module doc (src/cli/mod.ts; `tests/cli_test.ts` checks that they agree).
 */
export const COMMANDS: readonly (readonly [usage: string, what: string])[] = [
  ["next <name> [-n N] [--create]", "Reserve N IDs (default 1) and print them"],
  ["get <name>", "Print the last reserved value of a counter"],
  ["list", "Print the counters of the hash, then the daily serials"],
  ["floor <name> <value> [--create]", "Raise a counter to at least <value>; never lower it"],
  ["daily <name> [--time-zone Z]", "Print the day counters of a daily serial (DailyId)"],
  [
    "cleanup <name> --keep-days N [--time-zone Z] [--dry-run]",
    "Delete old day counters of a daily serial",
  ],
  ["durability", "Print what the server can lose and the fix (exit 1 if a generator would refuse)"],
  [
    "encode [ID ...] [--form F] [--width N] [--encrypt]",
    "Write IDs in a public form, no server (kvid encode --help)",
  ],
  ["decode [TEXT ...] [--form F] [--width N] [--encrypt]", "Read public forms back into IDs"],
];

const HELP: Record<string, string> = {
  "": `kvid: admin CLI for @kvid/core counters (hash fields reserved with HINCRBY)

Usage: kvid <command> [arguments] [options]

Commands:
${COMMANDS.map(([usage, what]) => `  ${usage}\n      ${what}`).join("\n")}

Run "kvid <command> --help" for a command's details.

${COMMON_HELP}`,
  next: `Usage: kvid next <name> [-n N] [--create] [options]

Reserve N IDs (1 to ${MAX_COUNT}, default 1) of counter <name> with one HINCRBY and print
them, one per line; they are never handed out by a generator. A counter that does not exist
is an error (exit 1: a typo would start a new counter at 1) unless --create is given.
--json prints {"key", "name", "first", "last", "count"}.

  -n, --count <N>   How many IDs. Default 1
  --create          Start the counter if it does not exist

${COMMON_HELP}`,
  get: `Usage: kvid get <name> [options]

Print the last reserved value of counter <name> (the next ID is above it), read exactly.
A missing counter is an error (exit 1). --json prints {"key", "name", "value"}.

${COMMON_HELP}`,
  list: `Usage: kvid list [options]

Print every counter of the hash and its value, sorted by name, as "name<TAB>value"
(names holding whitespace are JSON-quoted). --json prints {"key", "counters": {name: value}}.
A counter of interleaved servers (redis: [...]) is shown as "(interleaved, <layout>, next
cycle <m>)": its field on this server is a block cycle, not an ID (--json: under
"interleaved": {name: {layout, cycle}}); next, get and floor refuse such a counter.
Without --key, then the daily serials (DailyId, hashes kvid:daily:<name>) as
"name<TAB>(daily, <n> days, last <day> <seq>)" (--json: under "daily": {name: {key, days,
last: {day, value}}}); "kvid daily <name>" shows one's days.

${COMMON_HELP}`,
  floor: `Usage: kvid floor <name> <value> [options]

Raise counter <name> to at least <value> (0 to 2^63-1), atomically: the next ID handed out
is above <value>. Use it when moving from a database AUTO_INCREMENT: floor order <MAX(id)>.
A counter already at <value> is left as is; one above it is never lowered (exit 1).
Generators running meanwhile take their next segment above <value>. A counter that does
not exist is an error (exit 1) unless --create is given. --json prints
{"key", "name", "old", "new", "raised"}.

  --create          Create the counter at <value> if it does not exist

${COMMON_HELP}`,
  daily: `Usage: kvid daily <name> [--time-zone Z] [options]

Print the day counters of daily serial <name> (fields yyyymmdd of hash kvid:daily:<name>),
oldest first, as "day<TAB>last seq", today's marked "(today)"; then how many days are
stored. Today comes from this machine's clock in the time zone. A serial whose hash does not
exist is an error (exit 1). --json prints {"key", "today", "days": {day: value}}.

  --time-zone <zone>  IANA time zone of the DailyId. Default UTC

${COMMON_HELP}`,
  durability: `Usage: kvid durability [options]

Read what the server can lose for the hash (INFO persistence and memory, CONFIG GET
appendfsync and save, the hash's TTL: what every generator reads before its first
reservation) and print each setting, then each problem with its fix. Exit 0 when a
generator with durability: "strict" (the default) would serve, 1 when it would refuse.
--json prints {"key", "durable", "settings", "problems"}.

${COMMON_HELP}`,
  cleanup: `Usage: kvid cleanup <name> --keep-days N [--time-zone Z] [--dry-run] [options]

Delete the day counters (fields yyyymmdd of hash kvid:daily:<name>) more than N days old,
N >= 1: today is 0 days old, so --keep-days 7 keeps today and the 7 days before. Other
fields are left alone. Today is the earlier of this machine's and the server's (TIME), in
the time zone: a clock running ahead never deletes a day generators still use. A serial
whose hash does not exist is an error (exit 1).

  --keep-days <N>     Days to keep besides today, at least 1 (required)
  --time-zone <zone>  IANA time zone of the DailyId. Default UTC
  --dry-run           Print the fields that would be deleted, delete nothing

--json prints {"key", "before", "deleted"} (and "fields" with --dry-run).

${COMMON_HELP}`,
};

/** A failure with its exit code. */
export class CliError extends Error {
  constructor(readonly exit: number, message: string) {
    super(message);
  }
}

export const usage = (message: string) =>
  new CliError(EXIT.usage, `${message}\nRun "kvid --help" for usage.`);

export interface Parsed {
  command: string;
  args: Record<string, string>;
  url: string;
  key: string;
  json: boolean;
  timeout: number;
  /** next: how many IDs. */
  count: number;
  /** floor: the value, canonical decimal. */
  value: string;
  /** cleanup: days kept besides today, the zone, and whether to delete. */
  keepDays: number;
  zone: ZonedDays | undefined;
  dryRun: boolean;
  /** next, floor: start a counter that does not exist. */
  create: boolean;
}

/** What `kvid` prints for `--help` or `--version`, without connecting. */
export interface Print {
  print: string;
}

export function parse(argv: string[]): Parsed | Print {
  // "-n=3" as "--count=3" is: parseArgs would read the value of a short option as "=3".
  argv = argv.flatMap((a) => /^-[a-zA-Z]=/.test(a) ? [a.slice(0, 2), a.slice(3)] : [a]);
  const all: Record<string, OptionSpec> = { ...GLOBAL_OPTIONS };
  for (const spec of Object.values(COMMAND_OPTIONS)) Object.assign(all, spec);
  checkNegative(argv, all);
  let first;
  try {
    first = parseArgs({ args: argv, options: all, allowPositionals: true, strict: true });
  } catch (err) {
    throw usage(parseError(err));
  }
  const command = first.positionals[0];
  if (first.values.version) return { print: VERSION };
  if (command === undefined || command === "help") {
    const topic = command === "help" ? first.positionals[1] ?? "" : "";
    if (!(topic in HELP)) throw usage(`unknown command ${JSON.stringify(topic)}`);
    if (first.values.help || command === "help") return { print: HELP[topic] };
    throw usage("no command given");
  }
  if (!(command in COMMAND_OPTIONS)) throw usage(`unknown command ${JSON.stringify(command)}`);
  if (first.values.help) return { print: HELP[command] };
  // Again with this command's options only, so a misplaced option is refused.
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      options: { ...GLOBAL_OPTIONS, ...COMMAND_OPTIONS[command] },
      allowPositionals: true,
      strict: true,
    });
  } catch (err) {
    const message = (err as Error).message;
    const option = /Unknown option '([^']+)'/.exec(message)?.[1];
    throw usage(option ? `${command} has no option ${option}` : `${command}: ${parseError(err)}`);
  }
  const names = ARITY[command];
  const positionals = parsed.positionals.slice(1);
  if (positionals.length !== names.length) {
    const shape = names.map((n) => `<${n}>`).join(" ");
    throw usage(
      `${command} takes ${names.length || "no"} argument${names.length === 1 ? "" : "s"}` +
        `${shape ? ` (${shape})` : ""}, got ${positionals.length}`,
    );
  }
  const args: Record<string, string> = {};
  names.forEach((n, i) => args[n] = positionals[i]);
  if (args.name !== undefined && args.name.length === 0) throw usage("the name must not be empty");
  if (args.name?.startsWith("\0")) {
    // Fields that begin with NUL are the library's own ("\0step:<name>", "\0layout:<name>").
    throw new CliError(
      EXIT.failed,
      `the name must not begin with a NUL byte: such fields are the library's own ("\\0step:<name>", "\\0layout:<name>")`,
    );
  }

  const values = parsed.values as Record<string, string | boolean | undefined>;
  const url = (values.url as string | undefined) || Deno.env.get("KVID_STORE_URL") ||
    Deno.env.get("KVID_REDIS_URL") || DEFAULT_URL;
  checkUrl(url);
  const key = (values.key as string | undefined) ??
    (command === "cleanup" || command === "daily" ? `kvid:daily:${args.name}` : "kvid");
  if (key.length === 0) throw usage("--key must not be empty");
  const timeout = values.timeout === undefined
    ? 5000
    : integerArg("--timeout", values.timeout as string, 1, 3_600_000);
  // Every argument is checked here, before connecting.
  const count = values.count === undefined
    ? 1
    : integerArg("-n", values.count as string, 1, MAX_COUNT);
  let value = "";
  if (command === "floor") {
    const text = args.value;
    if (!/^\d+$/.test(text) || BigInt(text) > MAX_I64) {
      throw usage(
        `floor: <value> must be an integer from 0 to 2^63-1, got ${JSON.stringify(text)}`,
      );
    }
    value = BigInt(text).toString();
  }
  let keepDays = 0;
  let zone: ZonedDays | undefined;
  if (command === "cleanup" || command === "daily") {
    if (command === "cleanup") {
      if (values["keep-days"] === undefined) throw usage("cleanup: --keep-days N is required");
      keepDays = integerArg("--keep-days", values["keep-days"] as string, 1, 100_000);
    }
    const zoneName = (values["time-zone"] as string | undefined) ?? "UTC";
    try {
      zone = new ZonedDays(zoneName);
    } catch {
      throw usage(`--time-zone: unknown time zone ${JSON.stringify(zoneName)}`);
    }
  }
  return {
    command,
    args,
    url,
    key,
    json: values.json === true,
    timeout,
    count,
    value,
    keepDays,
    zone,
    dryRun: values["dry-run"] === true,
    create: values.create === true,
  };
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

/** parseArgs' message in a sentence of ours. */
function parseError(err: unknown): string {
  const message = (err as Error).message;
  const unknown = /Unknown option '([^']+)'/.exec(message)?.[1];
  if (unknown) return `unknown option ${unknown}`;
  const option = /Option '(-\w, )?(--[\w-]+)/.exec(message)?.[2];
  if (option && /argument missing/.test(message)) return `${option} needs a value`;
  if (option && /ambiguous/.test(message)) return `${option} needs a value`;
  if (option && /does not take an argument/.test(message)) return `${option} takes no value`;
  return message.split(". ")[0];
}

function integerArg(what: string, text: string, min: number, max: number): number {
  const n = /^\d+$/.test(text) ? Number(text) : NaN;
  if (!(n >= min && n <= max)) {
    throw usage(`${what} must be an integer from ${min} to ${max}, got ${JSON.stringify(text)}`);
  }
  return n;
}

function checkUrl(url: string): void {
  try {
    storeKind(url, "--url");
  } catch (err) {
    throw usage((err as Error).message);
  }
}

/** The URL without its password, for messages. */
export function redact(url: string): string {
  return url.replace(/\/\/([^@/]*)@/, (_, auth: string) => `//${auth.replace(/:.*/, ":***")}@`);
}
