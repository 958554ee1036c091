#!/usr/bin/env -S deno run -A
/**
 * The admin CLI of @kvid/core: read, reserve, raise, list and clean up counters.
 *
 * ```sh
 * kvid list --url redis://127.0.0.1:6379
 * kvid floor order 120000 --create  # after leaving AUTO_INCREMENT
 * kvid next order -n 3
 * kvid daily order --time-zone Asia/Shanghai
 * kvid cleanup order --keep-days 30 --time-zone Asia/Shanghai
 * kvid durability  # appendonly, appendfsync, maxmemory_policy, TTL: what a generator reads
 * ```
 *
 * It owns its connection, made with node-redis (`npm:redis`). Exit codes: 0 done, 1 the
 * command failed (no such counter or daily serial, refused to lower, wrong type, ...), 2 bad
 * arguments, 3 the server could not be reached or used (network, authentication, timeout).
 *
 * ## CLI
 *
 * ```sh
 * deno install -g -A -n kvid jsr:@kvid/core/cli            # the kvid command, from JSR
 * deno install -g -A -n kvid --config deno.json src/cli/mod.ts  # or from a checkout, in its root
 * kvid <command> [--url redis://host:6379] [--key hash] [--json]
 * deno run -A jsr:@kvid/core/cli <command> ...              # without installing it
 * ```
 *
 * `deno install -g` writes a `kvid` script to `~/.deno/bin` (add it to `PATH`, as it says); the
 * `--config` of a checkout gives the CLI its `npm:redis`. `kvid --version` prints the version.
 *
 * | command                                                    | what it does                                                                     |
 * | ---------------------------------------------------------- | -------------------------------------------------------------------------------- |
 * | `next <name> [-n N] [--create]`                            | reserves N IDs (one `HINCRBY`) and prints them                                   |
 * | `get <name>`                                               | prints the last reserved value, exactly                                          |
 * | `list`                                                     | prints each counter of the hash and its value (no internals), then daily serials |
 * | `floor <name> <value> [--create]`                          | raises a counter to at least `value`, atomically; never lowers                   |
 * | `daily <name> [--time-zone Z]`                             | prints the day counters of `kvid:daily:<name>`, oldest first, today marked       |
 * | `cleanup <name> --keep-days N [--time-zone Z] [--dry-run]` | deletes day fields of `kvid:daily:<name>` more than N days old                   |
 * | `durability`                                               | prints what the server can lose and the fix; exit 1 if a generator would refuse it |
 * | `encode [ID ...] [--form F] [--width N] [--encrypt]`       | writes IDs in a public form (`@kvid/core/codec`); no server                      |
 * | `decode [TEXT ...] [--form F] [--width N] [--encrypt]`     | reads public forms back into IDs                                                 |
 *
 * Every command takes `--help` (the list above is the one `kvid --help` prints). `--url` defaults
 * to `$KVID_STORE_URL`, then `$KVID_REDIS_URL`, then `redis://127.0.0.1:6379`; its scheme picks the
 * store: on `postgres://`, `postgresql://` and `mysql://` the CLI has `next --create` for now (other
 * commands exit 2); another scheme exits 2.
 * `--json` prints values as exact decimal strings; `--timeout` bounds connecting and the command
 * (default 5000 ms). `next` and `floor` refuse a counter that does not exist (a typo would start a new
 * one at 1) unless `--create` is given. Negative numbers and unknown options are refused with exit 2.
 * To move from a database `AUTO_INCREMENT`: `kvid floor order <SELECT MAX(id)> --create`; running
 * generators take their next segment above it. `daily` and `cleanup` refuse a daily serial whose
 * hash does not exist (exit 1, like `get` of a missing counter). `list` shows, after the counters
 * of the hash, the daily serials (hashes `kvid:daily:<name>`) as
 * `name<TAB>(daily, 3 days, last 20261201 42)` (with `--json`, under `"daily"`) when no `--key` is
 * given.
 *
 * `encode` and `decode` take values as arguments or, without any, one a line on standard input
 * (`kvid next order -n 1000 | kvid encode --form base62 --width 7`). `--encrypt` is the keyed form
 * (FF1), with the key in hex in `$KVID_ID_KEY` (never an argument: `ps` and shell history show
 * those); `--tweak` should be the generator's name. `kvid encode --help` lists the options.
 *
 * A counter of interleaved servers (`redis: [a, b]`) holds, on each server, that server's next block
 * cycle, not an ID: `next`, `get` and `floor` refuse it (exit 1, naming the layout), and `list` shows
 * it as `name<TAB>(interleaved, v1 servers=2 block=1000 index=0, next cycle 3)` (with `--json`, under
 * `"interleaved"`), never the internal `"\0layout:<name>"` field. `cleanup` dates days by the earlier
 * of this machine's clock and the server's, like `DailyId`. A name beginning with NUL (the library's
 * own fields) is refused with exit 1.
 *
 * `durability` reads what every generator reads before its first reservation (`INFO`, `CONFIG GET
 * appendfsync` and `save`, the hash's `PTTL`) and prints each setting, `durable: yes` or `NO`, and
 * each problem with its fix, e.g. `problem: AOF is off (appendonly no, ...): ...; set appendonly yes`.
 * `next` reserves whatever the server says (it is an admin tool): run `durability` first.
 *
 * @module
 */

import { fromNodeRedis } from "../stores/redis/adapters.ts";
import { CliError, EXIT, parse, type Parsed, redact } from "./args.ts";
import { cleanupFrom, deleteDaysBefore, oldDays } from "../stores/redis/daily_cleanup.ts";
import { KvIdError } from "../contract/errors.ts";
import { LAYOUT_FIELD_PREFIX } from "../stores/interleaved/layout.ts";
import { storeFromUrl, storeKind } from "../stores/store_url.ts";
import { LUA_BELOW, type RedisClient, RedisStore } from "../stores/redis/redis_store.ts";
import { LuaScript } from "../stores/redis/lua_script.ts";

export { EXIT };

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
    case "durability": {
      const d = await new RedisStore(client).durability(key, {
        field: "",
        mode: "strict",
        replicas: 0,
        stated: {},
      });
      if (p.json) {
        io.out(
          JSON.stringify({ key, durable: d.durable, settings: d.settings, problems: d.problems }),
        );
      } else {
        for (const [k, v] of Object.entries(d.settings)) io.out(`${k}\t${v}`);
        io.out(d.durable ? "durable: yes" : "durable: NO");
        for (const problem of d.problems) io.out(`problem: ${problem}`);
      }
      if (!d.durable) {
        throw new CliError(EXIT.failed, "the server can lose reservations (see above)");
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
        const daily = await dailySerials(p, client);
        io.out(
          JSON.stringify({
            key,
            counters,
            ...Object.keys(inter).length === 0 ? {} : { interleaved: inter },
            ...daily.length === 0 ? {} : {
              daily: Object.fromEntries(
                daily.map((d) => [d.name, { key: d.key, days: d.days, last: d.last }]),
              ),
            },
          }),
        );
      } else {
        const daily = await dailySerials(p, client);
        if (names.length === 0 && daily.length === 0) {
          console.error(`(no counters in hash ${JSON.stringify(key)})`);
        }
        for (const n of names) {
          const layout = layoutOf(n);
          io.out(
            layout === undefined
              ? `${quoted(n)}\t${all[n]}`
              : `${quoted(n)}\t(interleaved, ${layout}, next cycle ${all[n]})`,
          );
        }
        for (const d of daily) {
          const last = d.last ? `, last ${d.last.day} ${d.last.value}` : "";
          io.out(`${quoted(d.name)}\t(daily, ${plural(d.days, "day")}${last})`);
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
      const all = await dailyHash(p, client);
      const days = Object.keys(all).filter((f) => /^\d{8}$/.test(f)).sort();
      if (p.json) {
        const counters: Record<string, string> = {};
        for (const d of days) counters[d] = all[d];
        io.out(JSON.stringify({ key, today, days: counters }));
      } else {
        for (const d of days) io.out(`${d}\t${all[d]}${d === today ? "\t(today)" : ""}`);
        console.error(
          `${plural(days.length, "day")} in hash ${JSON.stringify(key)}; today is ${today}`,
        );
      }
      return;
    }
    case "cleanup": {
      // Dated by the earlier of this machine's clock and the server's: a clock running ahead
      // never deletes a day other processes still use.
      const today = p.zone!.dayAt(Date.now());
      const all = await dailyHash(p, client);
      const before = (await cleanupFrom(client, p.zone!, today, p.keepDays)).text;
      if (p.dryRun) {
        const fields = oldDays(Object.keys(all), before).sort();
        if (p.json) io.out(JSON.stringify({ key, before, deleted: 0, fields }));
        else {
          console.error(
            `would delete ${plural(fields.length, "day field")} before ${before} of ${key}`,
          );
          for (const f of fields) io.out(f);
        }
        return;
      }
      const deleted = await deleteDaysBefore(client, key, before);
      if (p.json) io.out(JSON.stringify({ key, before, deleted }));
      else io.out(`deleted ${plural(deleted, "day field")} before ${before} of ${key}`);
      return;
    }
  }
}

/** "1 day", "2 days". */
function plural(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? "" : "s"}`;
}

/** A name as printed in a list: JSON-quoted if it holds whitespace, a quote or a backslash. */
function quoted(name: string): string {
  return /[\s"\\]/.test(name) ? JSON.stringify(name) : name;
}

const DAILY_PREFIX = "kvid:daily:";

/** The hash of a daily serial; one that does not exist is an error, like a missing counter. */
async function dailyHash(p: Parsed, client: { hGetAll: HGetAll }) {
  const all = await client.hGetAll(p.key);
  if (Object.keys(all).length > 0) return all;
  throw new CliError(
    EXIT.failed,
    `no daily serial ${JSON.stringify(p.args.name)}: hash ${JSON.stringify(p.key)} does not ` +
      `exist (check the name: "kvid list" shows the daily serials)`,
  );
}

interface DailySerial {
  name: string;
  key: string;
  days: number;
  last: { day: string; value: string } | undefined;
}

/**
 * The daily serials (hashes `kvid:daily:<name>`, found with SCAN) when the hash listed is the
 * default one: a DailyId given its own `key` is listed with `--key`.
 */
async function dailySerials(p: Parsed, client: RedisClient & { hGetAll: HGetAll }) {
  if (p.key !== "kvid" || !client.sendCommand) return [];
  const keys = new Set<string>();
  let cursor = "0";
  do {
    const reply = await client.sendCommand("SCAN", [
      cursor,
      "MATCH",
      `${DAILY_PREFIX}*`,
      "COUNT",
      "1000",
    ]) as [unknown, unknown[]];
    cursor = String(reply[0]);
    for (const k of reply[1]) keys.add(String(k));
  } while (cursor !== "0");
  const serials: DailySerial[] = [];
  for (const key of [...keys].sort()) {
    let all: Record<string, string>;
    try {
      all = await client.hGetAll(key);
    } catch {
      continue; // not a hash: not a daily serial
    }
    const days = Object.keys(all).filter((f) => /^\d{8}$/.test(f)).sort();
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

/**
 * A command on a SQL store (`postgres://`, `postgresql://`, `mysql://`), through the store the
 * URL names: `next --create` for now (without a read of the table, the CLI cannot tell a new
 * counter from a typo there).
 */
async function onSqlStore(p: Parsed, io: Io): Promise<void> {
  const scheme = new URL(p.url).protocol;
  if (p.command !== "next") {
    throw new CliError(
      EXIT.usage,
      `${p.command} runs on redis:// and rediss:// URLs only for now; on ${scheme}// the CLI has next --create`,
    );
  }
  if (!p.create) {
    throw new CliError(
      EXIT.usage,
      `next on ${scheme}// needs --create for now (the CLI cannot check there that the counter exists)`,
    );
  }
  const opened = storeFromUrl(p.url, { timeout: p.timeout, what: "--url" });
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    const name = p.args.name;
    const { ranges } = await Promise.race([
      opened.store.reserve(p.key, name, p.count, {
        floor: 0n,
        raiseTo: 0n,
        guard: false,
        exact: true,
      }),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() =>
          reject(
            new CliError(
              EXIT.unreachable,
              `${redact(p.url)} did not answer within ${p.timeout} ms`,
            ),
          ), p.timeout);
      }),
    ]);
    const { first, last } = ranges[0];
    if (p.json) {
      io.out(
        JSON.stringify({ key: p.key, name, first: `${first}`, last: `${last}`, count: p.count }),
      );
    } else {
      for (let from = first; from <= last; from += 10_000n) {
        const lines = [];
        for (let x = from; x <= last && x < from + 10_000n; x++) lines.push(x);
        io.out(lines.join("\n"));
      }
    }
  } finally {
    clearTimeout(timer);
    await opened.close();
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
  if (args[0] === "encode" || args[0] === "decode") {
    // Public forms: no server; loaded here so the other commands do not load the cipher.
    const { codecCommand, processIo } = await import("./codec.ts");
    try {
      return await codecCommand(args[0], args.slice(1), processIo());
    } catch (err) {
      if (err instanceof CliError) return fail(err.exit, err.message);
      if (err instanceof Deno.errors.BrokenPipe) return EXIT.ok;
      throw err;
    }
  }
  let parsed;
  try {
    parsed = parse(args);
  } catch (err) {
    if (err instanceof CliError) return fail(err.exit, err.message);
    throw err;
  }
  if ("print" in parsed) {
    io.out(parsed.print);
    return EXIT.ok;
  }
  json = parsed.json;
  const p = parsed;
  const where = redact(p.url);
  if (storeKind(p.url, "--url") !== "redis") {
    try {
      await onSqlStore(p, io);
      return EXIT.ok;
    } catch (err) {
      if (err instanceof CliError) return fail(err.exit, err.message);
      if (!(err instanceof KvIdError)) throw err;
      const unreachable = err.code === "connection" || err.code === "timeout" ||
        err.code === "unavailable";
      return fail(unreachable ? EXIT.unreachable : EXIT.failed, err.message);
    }
  }
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
