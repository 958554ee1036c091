#!/usr/bin/env -S deno run -A
/**
 * The admin CLI of @kvid/core: read, reserve, raise, list and clean up counters.
 *
 * ```sh
 * deno run -A jsr:@kvid/core/cli list --url redis://127.0.0.1:6379
 * deno run -A jsr:@kvid/core/cli floor order 120000 --create  # after leaving AUTO_INCREMENT
 * deno run -A jsr:@kvid/core/cli next order -n 3
 * deno run -A jsr:@kvid/core/cli daily order --time-zone Asia/Shanghai
 * deno run -A jsr:@kvid/core/cli cleanup order --keep-days 30 --time-zone Asia/Shanghai
 * ```
 *
 * It owns its connection, made with node-redis (`npm:redis`). Exit codes: 0 done, 1 the
 * command failed (no such counter, refused to lower, wrong type, ...), 2 bad arguments, 3 the
 * server could not be reached or used (network, authentication, timeout).
 *
 * @module
 */

import { parseArgs } from "node:util";
import { fromNodeRedis } from "./adapters.ts";
import { ZonedDays } from "./calendar.ts";
import { cleanupFrom, deleteDaysBefore, oldDays } from "./daily_cleanup.ts";
import { KvIdError } from "./errors.ts";
import { LAYOUT_FIELD_PREFIX } from "./interleaved_store.ts";
import { LUA_BELOW, LuaScript, type RedisClient, RedisStore } from "./redis_store.ts";

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
};
const COMMAND_OPTIONS: Record<string, Record<string, OptionSpec>> = {
  next: { count: { type: "string", short: "n" }, create: { type: "boolean" } },
  get: {},
  list: {},
  floor: { create: { type: "boolean" } },
  daily: { "time-zone": { type: "string" } },
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
};

const COMMON_HELP = `Options of every command:
  --url <url>       Server, redis://[user:password@]host:port[/db] or rediss://...
                    Default: $KVID_REDIS_URL, else ${DEFAULT_URL}
  --key <hash>      The hash holding the counters. Default "kvid"
                    (daily, cleanup: "kvid:daily:<name>")
  --json            Print JSON (values as decimal strings, exact up to 2^63-1);
                    errors go to stderr as {"error": {"message", "exit"}}
  --timeout <ms>    Give up after this long (connect and commands). Default 5000
  -h, --help        Show help

Exit codes: 0 done, 1 the command failed, 2 bad arguments,
            3 the server could not be reached or used (network, auth, timeout)`;

const HELP: Record<string, string> = {
  "": `kvid: admin CLI for @kvid/core counters (hash fields reserved with HINCRBY)

Usage: kvid <command> [arguments] [options]

Commands:
  next <name> [-n N] [--create] Reserve N IDs (default 1) and print them
  get <name>                    Print the last reserved value of a counter
  list                          Print every counter of the hash and its value
  floor <name> <value>          Raise a counter to at least <value>; never lowers one
  daily <name>                  Print the day counters of a daily serial (DailyId)
  cleanup <name> --keep-days N  Delete old day counters of a daily serial (DailyId)

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
For a daily serial use --key kvid:daily:<name>: its fields are the days.

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
stored. Today comes from this machine's clock in the time zone. --json prints
{"key", "today", "days": {day: value}}.

  --time-zone <zone>  IANA time zone of the DailyId. Default UTC

${COMMON_HELP}`,
  cleanup: `Usage: kvid cleanup <name> --keep-days N [--time-zone Z] [--dry-run] [options]

Delete the day counters (fields yyyymmdd of hash kvid:daily:<name>) more than N days old,
N >= 1: today is 0 days old, so --keep-days 7 keeps today and the 7 days before. Other
fields are left alone. Today is the earlier of this machine's and the server's (TIME), in
the time zone: a clock running ahead never deletes a day generators still use.

  --keep-days <N>     Days to keep besides today, at least 1 (required)
  --time-zone <zone>  IANA time zone of the DailyId. Default UTC
  --dry-run           Print the fields that would be deleted, delete nothing

--json prints {"key", "before", "deleted"} (and "fields" with --dry-run).

${COMMON_HELP}`,
};

/** A failure with its exit code. */
class CliError extends Error {
  constructor(readonly exit: number, message: string) {
    super(message);
  }
}

const usage = (message: string) =>
  new CliError(EXIT.usage, `${message}\nRun "kvid --help" for usage.`);

interface Parsed {
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

function parse(argv: string[]): Parsed | { help: string } {
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
  if (command === undefined || command === "help") {
    const topic = command === "help" ? first.positionals[1] ?? "" : "";
    if (!(topic in HELP)) throw usage(`unknown command ${JSON.stringify(topic)}`);
    if (first.values.help || command === "help") return { help: HELP[topic] };
    throw usage("no command given");
  }
  if (!(command in COMMAND_OPTIONS)) throw usage(`unknown command ${JSON.stringify(command)}`);
  if (first.values.help) return { help: HELP[command] };
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

  const values = parsed.values as Record<string, string | boolean | undefined>;
  const url = (values.url as string | undefined) || Deno.env.get("KVID_REDIS_URL") || DEFAULT_URL;
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
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw usage(`--url: not a URL: ${JSON.stringify(redact(url))}`);
  }
  if (u.protocol !== "redis:" && u.protocol !== "rediss:") {
    throw usage(`--url must start with redis:// or rediss://, got ${JSON.stringify(redact(url))}`);
  }
}

/** The URL without its password, for messages. */
function redact(url: string): string {
  return url.replace(/\/\/([^@/]*)@/, (_, auth: string) => `//${auth.replace(/:.*/, ":***")}@`);
}

interface Io {
  out(line: string): void;
}

// Raises the field to ARGV[2] if below it (decimal strings compared exactly, a missing field
// counting as 0), never lowers it. Replies {outcome, old value or ''}.
const FLOOR_SCRIPT = new LuaScript(
  LUA_BELOW + `local layout = redis.call('HGET', KEYS[1], ARGV[3])
if layout then return {'layout', layout} end
local cur = redis.call('HGET', KEYS[1], ARGV[1])
local v = ARGV[2]
local c = cur or '0'
if c ~= '0' and not string.match(c, '^%-?[1-9]%d*$') then return {'nan', c} end
if below(c, v) then
  redis.call('HSET', KEYS[1], ARGV[1], v)
  return {'raised', cur or ''}
end
if c == v then return {'equal', cur or ''} end
return {'above', c}`,
);

const INTEGER = /^(0|-?[1-9]\d*)$/;
// Fields of the hash that are not counters start with this: an interleaved counter's layout
// (see InterleavedStore) and a counter's remembered step, each then the counter's name.
const INTERNAL = "\u0000";

/**
 * Refuse a command on a counter that interleaved servers own: its field on this server is the
 * server's block cycle, not an ID, and only a generator with every server can use it.
 */
function interleaved(key: string, name: string, layout: string, cycle: string | null): CliError {
  return new CliError(
    EXIT.failed,
    `counter ${JSON.stringify(name)} of hash ${
      JSON.stringify(key)
    } belongs to interleaved servers (${
      JSON.stringify(layout)
    }): its field on this server holds the server's next block cycle (${
      cycle ?? "none"
    }), not an ID; use a generator with the same redis: [...] list`,
  );
}
const AUTH_ERROR = /^(NOAUTH|WRONGPASS|NOPERM)/;

async function run(p: Parsed, client: RedisClient & { hGet: HGet; hGetAll: HGetAll }, io: Io) {
  const { key, args: { name } } = p;
  switch (p.command) {
    case "next": {
      await mustExist(p, client);
      const count = p.count;
      const store = new RedisStore(client);
      const { ranges } = await store.reserve(key, name, count, {
        floor: 0n,
        raiseTo: 0n,
        guard: false,
        exact: true,
      });
      const { first, last } = ranges[0];
      if (p.json) {
        io.out(JSON.stringify({ key, name, first: `${first}`, last: `${last}`, count }));
      } else {
        for (let from = first; from <= last; from += 10_000n) {
          const lines = [];
          for (let x = from; x <= last && x < from + 10_000n; x++) lines.push(x);
          io.out(lines.join("\n"));
        }
      }
      return;
    }
    case "get": {
      const [value, layout] = await Promise.all([
        client.hGet(key, name),
        client.hGet(key, LAYOUT_FIELD_PREFIX + name),
      ]);
      if (layout !== null && layout !== undefined) throw interleaved(key, name, layout, value);
      if (value === null || value === undefined) {
        throw new CliError(
          EXIT.failed,
          `no counter ${JSON.stringify(name)} in hash ${JSON.stringify(key)}`,
        );
      }
      if (!INTEGER.test(value)) {
        throw new CliError(
          EXIT.failed,
          `counter ${JSON.stringify(name)} of hash ${JSON.stringify(key)} holds ${
            JSON.stringify(value)
          }, not an integer`,
        );
      }
      io.out(p.json ? JSON.stringify({ key, name, value }) : value);
      return;
    }
    case "list": {
      const all = await client.hGetAll(key);
      // Internal fields are not counters; an interleaved counter's field is a block cycle.
      const names = Object.keys(all).filter((n) => !n.startsWith(INTERNAL)).sort();
      const layoutOf = (n: string) => all[LAYOUT_FIELD_PREFIX + n] as string | undefined;
      if (p.json) {
        const counters: Record<string, string> = {};
        const inter: Record<string, { layout: string; cycle: string }> = {};
        for (const n of names) {
          const layout = layoutOf(n);
          if (layout === undefined) counters[n] = all[n];
          else inter[n] = { layout, cycle: all[n] };
        }
        io.out(
          JSON.stringify(
            Object.keys(inter).length === 0
              ? { key, counters }
              : { key, counters, interleaved: inter },
          ),
        );
      } else {
        if (names.length === 0) console.error(`(no counters in hash ${JSON.stringify(key)})`);
        for (const n of names) {
          const layout = layoutOf(n);
          const shown = /[\s"\\]/.test(n) ? JSON.stringify(n) : n;
          io.out(
            layout === undefined
              ? `${shown}\t${all[n]}`
              : `${shown}\t(interleaved, ${layout}, next cycle ${all[n]})`,
          );
        }
      }
      return;
    }
    case "floor": {
      await mustExist(p, client);
      const value = p.value;
      const reply = await client.eval(FLOOR_SCRIPT.source, [key], [ // one-shot: no EVALSHA first
        name,
        value,
        LAYOUT_FIELD_PREFIX + name,
      ]);
      if (!Array.isArray(reply) || reply.length !== 2) {
        throw new CliError(EXIT.failed, `unexpected reply from the floor script: ${String(reply)}`);
      }
      const [outcome, oldText] = reply.map(String);
      const old = oldText === "" ? null : oldText;
      if (outcome === "layout") throw interleaved(key, name, oldText, await client.hGet(key, name));
      const label = `counter ${JSON.stringify(name)} of hash ${JSON.stringify(key)}`;
      if (outcome === "nan") {
        throw new CliError(EXIT.failed, `${label} holds ${JSON.stringify(old)}, not an integer`);
      }
      if (outcome === "above") {
        throw new CliError(
          EXIT.failed,
          `refusing to lower ${label} from ${old} to ${value}: IDs up to ${old} may have been handed out`,
        );
      }
      const raised = outcome === "raised";
      if (p.json) io.out(JSON.stringify({ key, name, old, new: value, raised }));
      else io.out(raised ? `${name}: ${old ?? "(none)"} -> ${value}` : `${name}: already ${value}`);
      return;
    }
    case "daily": {
      const today = p.zone!.dayAt(Date.now()).text;
      const all = await client.hGetAll(key);
      const days = Object.keys(all).filter((f) => /^\d{8}$/.test(f)).sort();
      if (p.json) {
        const counters: Record<string, string> = {};
        for (const d of days) counters[d] = all[d];
        io.out(JSON.stringify({ key, today, days: counters }));
      } else {
        for (const d of days) io.out(`${d}\t${all[d]}${d === today ? "\t(today)" : ""}`);
        console.error(`${days.length} days in hash ${JSON.stringify(key)}; today is ${today}`);
      }
      return;
    }
    case "cleanup": {
      // Dated by the earlier of this machine's clock and the server's: a clock running ahead
      // never deletes a day other processes still use.
      const today = p.zone!.dayAt(Date.now());
      const before = (await cleanupFrom(client, p.zone!, today, p.keepDays)).text;
      if (p.dryRun) {
        const fields = oldDays(Object.keys(await client.hGetAll(key)), before).sort();
        if (p.json) io.out(JSON.stringify({ key, before, deleted: 0, fields }));
        else {
          console.error(`would delete ${fields.length} day fields before ${before} of ${key}`);
          for (const f of fields) io.out(f);
        }
        return;
      }
      const deleted = await deleteDaysBefore(client, key, before);
      if (p.json) io.out(JSON.stringify({ key, before, deleted }));
      else io.out(`deleted ${deleted} day fields before ${before} of ${key}`);
      return;
    }
  }
}

/** Refuse a counter that does not exist unless --create: a typo must not start a new one. */
async function mustExist(p: Parsed, client: { hGet: HGet }): Promise<void> {
  if (p.create) return;
  const { key, args: { name } } = p;
  const value = await client.hGet(key, name);
  if (value !== null && value !== undefined) return;
  throw new CliError(
    EXIT.failed,
    `no counter ${JSON.stringify(name)} in hash ${JSON.stringify(key)}: check the name ` +
      `("kvid list"), or pass --create to start it`,
  );
}

type HGet = (key: string, field: string) => Promise<string | null>;
type HGetAll = (key: string) => Promise<Record<string, string>>;

/**
 * Run the CLI with `args` (as `Deno.args`), printing to stdout and stderr; resolves to the exit
 * code (see {@linkcode EXIT}).
 *
 * @example
 * ```ts ignore
 * import { main } from "@kvid/core/cli";
 *
 * const code = await main(["get", "order", "--url", "redis://127.0.0.1:6379"]);
 * ```
 */
export async function main(args: string[]): Promise<number> {
  let json = args.includes("--json");
  const io: Io = { out: (line) => console.log(line) };
  const fail = (exit: number, message: string) => {
    if (json) console.error(JSON.stringify({ error: { message, exit } }));
    else console.error(`kvid: ${message}`);
    return exit;
  };
  let parsed;
  try {
    parsed = parse(args);
  } catch (err) {
    if (err instanceof CliError) return fail(err.exit, err.message);
    throw err;
  }
  if ("help" in parsed) {
    io.out(parsed.help);
    return EXIT.ok;
  }
  json = parsed.json;
  const p = parsed;
  const where = redact(p.url);
  // Loaded here so that help and argument errors do not wait for it.
  const { createClient } = await import("redis");
  const client = createClient({
    url: p.url,
    socket: { connectTimeout: p.timeout, reconnectStrategy: false },
  });
  client.on("error", () => {}); // connection errors are reported through connect() and commands
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(new CliError(EXIT.unreachable, `${where} did not answer within ${p.timeout} ms`)),
      p.timeout,
    );
  });
  try {
    await Promise.race([
      (async () => {
        try {
          await client.connect();
        } catch (err) {
          throw new CliError(EXIT.unreachable, `cannot use ${where}: ${errorText(err)}`);
        }
        const adapted = fromNodeRedis(client);
        const ops = Object.assign(adapted, {
          hGet: (k: string, f: string) => client.hGet(k, f) as Promise<string | null>,
          hGetAll: (k: string) => client.hGetAll(k) as Promise<Record<string, string>>,
        });
        await run(p, ops, io);
      })(),
      deadline,
    ]);
    return EXIT.ok;
  } catch (err) {
    if (err instanceof CliError) return fail(err.exit, err.message);
    if (err instanceof Deno.errors.BrokenPipe) return EXIT.ok; // e.g. piped into head
    if (err instanceof KvIdError) {
      const unreachable = err.code === "connection" || err.code === "timeout" ||
        err.code === "unavailable" ||
        AUTH_ERROR.test(errorText(err.cause));
      return fail(unreachable ? EXIT.unreachable : EXIT.failed, err.message);
    }
    const text = errorText(err);
    if (/WRONGTYPE/.test(text)) {
      return fail(
        EXIT.failed,
        `key ${JSON.stringify(p.key)} holds a value that is not a hash (WRONGTYPE)`,
      );
    }
    if (AUTH_ERROR.test(text)) return fail(EXIT.unreachable, `${where}: ${text}`);
    if (/closed|ECONN|socket|connect/i.test(text)) {
      return fail(EXIT.unreachable, `lost ${where}: ${text}`);
    }
    return fail(EXIT.failed, `the server refused the command: ${text}`);
  } finally {
    clearTimeout(timer);
    try {
      client.destroy();
    } catch {
      // never connected
    }
  }
}

function errorText(err: unknown): string {
  if (err instanceof AggregateError && err.errors.length > 0) return errorText(err.errors[0]);
  return err instanceof Error ? err.message || err.name : String(err);
}

if (import.meta.main) Deno.exit(await main(Deno.args));
