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
 * It owns its connection: on `redis://` a node-redis client (`npm:redis`), on the other schemes
 * of `--url` the store's driver (`npm:pg`, `npm:mysql2`). Exit codes: 0 done, 1 the command
 * failed (no such counter or daily serial, refused to lower, wrong type, ...), 2 bad arguments,
 * 3 the server could not be reached or used (network, authentication, timeout).
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
 * | command                                                    | what it does                                                                       | stores                   |
 * | ---------------------------------------------------------- | ---------------------------------------------------------------------------------- | ------------------------ |
 * | `next <name> [-n N] [--create]`                            | reserves N IDs (one `HINCRBY`) and prints them                                     | any                      |
 * | `get <name>`                                               | prints the last reserved value, exactly                                            | any                      |
 * | `list`                                                     | prints each counter of the hash and its value (no internals), then daily serials   | any (daily serials: Redis) |
 * | `floor <name> <value> [--create]`                          | raises a counter to at least `value`, atomically; never lowers                     | any                      |
 * | `daily <name> [--time-zone Z]`                             | prints the day counters of `kvid:daily:<name>`, oldest first, today marked         | any                      |
 * | `cleanup <name> --keep-days N [--time-zone Z] [--dry-run]` | deletes day fields of `kvid:daily:<name>` more than N days old                     | any                      |
 * | `durability`                                               | prints what the server can lose and the fix; exit 1 if a generator would refuse it | any                      |
 * | `encode [ID ...] [--form F] [--width N] [--encrypt]`       | writes IDs in a public form (`@kvid/core/codec`)                                   | none                     |
 * | `decode [TEXT ...] [--form F] [--width N] [--encrypt]`     | reads public forms back into IDs                                                   | none                     |
 *
 * Every command takes `--help` (the list above is the one `kvid --help` prints). `--url` defaults
 * to `$KVID_STORE_URL`, then `$KVID_REDIS_URL`, then `redis://127.0.0.1:6379`; its scheme picks the
 * store (`redis://`, `rediss://`, `postgres://`, `postgresql://`,
 * `mysql://`); another scheme exits 2. Every command marked "any" above runs through the Store
 * contract (`reserve`, `counters`, `deleteDaysBefore` dated by `now`, `durability`), so on every
 * store whose URL the CLI opens. On Redis the CLI reads the hash itself (`HGET`, `HGETALL`: a
 * field another tool wrote text into is shown, and refused by `get` and `floor`), `floor` is one
 * script that raises without reserving, and `list` also finds the daily serials (`SCAN`: the
 * contract has no call listing hashes, so elsewhere `kvid daily <name>` reads one). Elsewhere
 * `floor` reads the counter, then raises it with one guarded reservation of the ID `<value>`
 * itself (never handed out): the counter ends at `<value>`, as on Redis.
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
 * each problem with its fix, e.g. `problem: AOF is off (appendonly no, ...): ...; turn AOF on (CONFIG SET appendonly yes, ...)`.
 * `next` and `floor` make the same check first and refuse (exit 1) what a generator refuses,
 * unless `--durability best-effort` is given (the library's `durability: "best-effort"`).
 *
 * @module
 */

import { isTransient, KvIdError } from "../contract/errors.ts";
import { withDeadline } from "../runtime/deadline_timer.ts";
import { redactStoreUrl } from "../stores/store_url.ts";
import { parse, type Parsed } from "./args.ts";
import type { Context } from "./command.ts";
import { CliError, EXIT } from "./exit.ts";
import { errorText, openTarget } from "./target.ts";

export { EXIT };

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
 *
 * @param args The arguments, without the program's name.
 * @returns The exit code.
 */
export async function main(args: string[]): Promise<number> {
  let json = args.includes("--json");
  const fail = (exit: number, message: string) => {
    if (json) console.error(JSON.stringify({ error: { message, exit } }));
    else console.error(`kvid: ${message}`);
    return exit;
  };
  try {
    const parsed = parse(args);
    if ("print" in parsed) {
      console.log(parsed.print);
      return EXIT.ok;
    }
    if ("alone" in parsed) return await parsed.alone.runAlone(parsed.args);
    json = parsed.json;
    await runOnStore(parsed);
    return EXIT.ok;
  } catch (err) {
    if (err instanceof CliError) return fail(err.exit, err.message);
    if (err instanceof Deno.errors.BrokenPipe) return EXIT.ok; // e.g. piped into head
    if (err instanceof KvIdError) {
      // The store could not be reached or used (down, slow, refusing the credentials): 3.
      const unreachable = isTransient(err.code) || err.reason === "auth";
      return fail(unreachable ? EXIT.unreachable : EXIT.failed, err.message);
    }
    return fail(EXIT.failed, `unexpected error: ${errorText(err)}`);
  }
}

/** Open the store of `--url`, run the job on it within `--timeout`, and close it. */
async function runOnStore(p: Parsed): Promise<void> {
  const { job, url, timeout } = p;
  const opened = await openTarget(url, timeout);
  try {
    const work = (async () => {
      const context: Context = {
        key: p.key,
        json: p.json,
        target: await opened.connect(),
        out: (line) => console.log(line),
        note: (line) => console.error(line),
      };
      await job.run(context);
    })();
    await withDeadline(
      work,
      timeout,
      () =>
        new CliError(
          EXIT.unreachable,
          `${redactStoreUrl(url)} did not answer within ${timeout} ms`,
        ),
    );
  } finally {
    await opened.close();
  }
}

if (import.meta.main) Deno.exit(await main(Deno.args));
