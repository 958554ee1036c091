/**
 * `kvid get`, `list` and `floor`: reading and raising the counters of a hash, on any store.
 * Reading goes through `readCounters` (Redis: the hash itself; elsewhere `CounterListing.counters`).
 * `floor` on Redis is one script (it raises without reserving); elsewhere it reads the counter,
 * then raises it with one guarded reservation of the ID `<value>` itself (the guard's raise:
 * `floor: value, raiseTo: value - 1`), so the counter ends at `<value>`, as on Redis.
 *
 * @module
 */

import {
  checkDurability,
  DURABILITY_HELP,
  DURABILITY_OPTION,
  durabilityMode,
} from "../durability_check.ts";
import { MAX_ID } from "../../contract/store.ts";
import { LAYOUT_FIELD_PREFIX } from "../../stores/interleaved/layout.ts";
import { LUA_BELOW } from "../../stores/redis/redis_store.ts";
import {
  type Command,
  type CounterText,
  mustExist,
  plural,
  quoted,
  readCounters,
  type Target,
} from "../command.ts";
import { CliError, EXIT, usage } from "../exit.ts";
import { dailySerials } from "./daily.ts";

const INTEGER = /^(0|-?[1-9]\d*)$/;

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

/** `kvid get <name>`. */
export const get: Command = {
  name: "get",
  usage: "get <name>",
  what: "Print the last reserved value of a counter",
  help: `Usage: kvid get <name> [options]

Print the last reserved value of counter <name> (the next ID is above it), read exactly.
A missing counter is an error (exit 1). --json prints {"key", "name", "value"}.
Any store (Redis: HGET; elsewhere the store's counters()).`,
  options: {},
  args: ["name"],
  anyStore: "get",
  parse: ({ args: { name } }) => ({
    async run({ key, json, target, out }) {
      const found = (await readCounters(target, key, [name])).get(name);
      if (found?.layout !== undefined) throw interleaved(key, name, found.layout, found.value);
      if (found === undefined) {
        throw new CliError(
          EXIT.failed,
          `no counter ${JSON.stringify(name)} in hash ${JSON.stringify(key)}`,
        );
      }
      const { value } = found;
      if (!INTEGER.test(value)) {
        throw new CliError(
          EXIT.failed,
          `counter ${JSON.stringify(name)} of hash ${JSON.stringify(key)} holds ${
            JSON.stringify(value)
          }, not an integer`,
        );
      }
      out(json ? JSON.stringify({ key, name, value }) : value);
    },
  }),
};

/** `kvid list`. */
export const list: Command = {
  name: "list",
  usage: "list",
  what: "Print the counters of the hash, then the daily serials",
  help: `Usage: kvid list [options]

Print every counter of the hash and its value, sorted by name, as "name<TAB>value"
(names holding whitespace are JSON-quoted). --json prints {"key", "counters": {name: value}}.
A counter of interleaved servers (redis: [...]) is shown as "(interleaved, <layout>, next
cycle <m>)": its field on this server is a block cycle, not an ID (--json: under
"interleaved": {name: {layout, cycle}}); next, get and floor refuse such a counter.
Without --key, then the daily serials (DailyId, hashes kvid:daily:<name>) as
"name<TAB>(daily, <n> days, last <day> <seq>)" (--json: under "daily": {name: {key, days,
last: {day, value}}}); "kvid daily <name>" shows one's days. Any store (Redis: HGETALL;
elsewhere the store's counters()); the daily serials are found on Redis only (SCAN): on
another store, "kvid daily <name>" reads one.`,
  options: {},
  args: [],
  anyStore: "list",
  parse: () => ({
    async run({ key, json, target, out, note }) {
      const all = await readCounters(target, key);
      // An interleaved counter's field is a block cycle, shown apart.
      const names = [...all.keys()].sort();
      const valueOf = (n: string) => (all.get(n) as CounterText).value;
      const layoutOf = (n: string) => all.get(n)?.layout;
      // The daily serials when the hash listed is the default one: a DailyId given its own
      // `key` is listed with --key.
      const daily = key === "kvid" && target.redis !== undefined
        ? await dailySerials(target.redis)
        : [];
      if (json) {
        const counters: Record<string, string> = {};
        const inter: Record<string, { layout: string; cycle: string }> = {};
        for (const n of names) {
          const layout = layoutOf(n);
          if (layout === undefined) counters[n] = valueOf(n);
          else inter[n] = { layout, cycle: valueOf(n) };
        }
        out(JSON.stringify({
          key,
          counters,
          ...Object.keys(inter).length === 0 ? {} : { interleaved: inter },
          ...daily.length === 0 ? {} : {
            daily: Object.fromEntries(
              daily.map((d) => [d.name, { key: d.key, days: d.days, last: d.last }]),
            ),
          },
        }));
        return;
      }
      if (names.length === 0 && daily.length === 0) {
        note(`(no counters in hash ${JSON.stringify(key)})`);
      }
      for (const n of names) {
        const layout = layoutOf(n);
        out(
          layout === undefined
            ? `${quoted(n)}\t${valueOf(n)}`
            : `${quoted(n)}\t(interleaved, ${layout}, next cycle ${valueOf(n)})`,
        );
      }
      for (const d of daily) {
        const last = d.last ? `, last ${d.last.day} ${d.last.value}` : "";
        out(`${quoted(d.name)}\t(daily, ${plural(d.days, "day")}${last})`);
      }
    },
  }),
};

// Raises the field to ARGV[2] if below it (decimal strings compared exactly, a missing field
// counting as 0), never lowers it. Replies {outcome, old value or ''}.
const FLOOR_SCRIPT = LUA_BELOW + `local layout = redis.call('HGET', KEYS[1], ARGV[3])
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
return {'above', c}`;

/** What a floor found and did: `"raised"`, `"equal"`, `"above"`, `"nan"`; the old value. */
interface Floored {
  outcome: string;
  old: string | null;
}

/** `floor` on Redis: one script that raises the field without reserving. */
async function raiseOnRedis(
  target: Target,
  key: string,
  name: string,
  value: string,
): Promise<Floored> {
  const redis = target.redis!;
  const reply = await redis.eval(FLOOR_SCRIPT, [key], [name, value, LAYOUT_FIELD_PREFIX + name]);
  if (!Array.isArray(reply) || reply.length !== 2) {
    throw new CliError(EXIT.failed, `unexpected reply from the floor script: ${String(reply)}`);
  }
  const [outcome, oldText] = reply.map(String);
  if (outcome === "layout") {
    throw interleaved(key, name, oldText, await redis.hGet(key, name));
  }
  return { outcome, old: oldText === "" ? null : oldText };
}

/**
 * `floor` through the Store contract: read the counter; below `value`, one guarded reservation
 * of 1 with `floor: value, raiseTo: value - 1` (the guard raises it to `value - 1`, the
 * increment makes it `value`: the ID `value` is spent, never handed out). A counter raised by
 * others meanwhile is only incremented, never lowered. A member of interleaved servers is
 * refused (the read shows its layout; the reservation, without one, would refuse it too).
 */
async function raiseThroughStore(
  target: Target,
  key: string,
  name: string,
  value: string,
): Promise<Floored> {
  const found = (await readCounters(target, key, [name])).get(name);
  if (found?.layout !== undefined) throw interleaved(key, name, found.layout, found.value);
  const old = found?.value ?? null;
  const current = BigInt(old ?? "0");
  const wanted = BigInt(value);
  if (current > wanted) return { outcome: "above", old };
  if (current === wanted) return { outcome: "equal", old };
  await target.store.reserve(key, name, 1, {
    floor: wanted,
    raiseTo: wanted - 1n,
    guard: true,
    exact: true,
  });
  return { outcome: "raised", old };
}

/** `kvid floor <name> <value> [--create]`. */
export const floor: Command = {
  name: "floor",
  usage: "floor <name> <value> [--create]",
  what: "Raise a counter to at least <value>; never lower it",
  help: `Usage: kvid floor <name> <value> [options]

Raise counter <name> to at least <value> (0 to 2^63-1), atomically: the next ID handed out
is above <value>. Use it when moving from a database AUTO_INCREMENT: floor order <MAX(id)>.
A counter already at <value> is left as is; one above it is never lowered (exit 1).
Generators running meanwhile take their next segment above <value>. A counter that does
not exist is an error (exit 1) unless --create is given. --json prints
{"key", "name", "old", "new", "raised"}. Any store: on Redis one script on the hash; elsewhere
the counter is read, then raised by one guarded reservation of the ID <value> itself (never
handed out), which leaves the counter at <value>.

A store that can lose reservations is refused (exit 1), as a generator refuses it, unless
--durability best-effort is given.

  --create          Create the counter at <value> if it does not exist
${DURABILITY_HELP}`,
  options: { create: { type: "boolean" }, ...DURABILITY_OPTION },
  args: ["name", "value"],
  anyStore: "floor",
  parse({ args: { name, value: text }, values }) {
    if (!/^\d+$/.test(text) || BigInt(text) > MAX_ID) {
      throw usage(
        `floor: <value> must be an integer from 0 to 2^63-1, got ${JSON.stringify(text)}`,
      );
    }
    const value = BigInt(text).toString();
    const create = values.create === true;
    const mode = durabilityMode(values.durability);
    return {
      async run({ key, json, target, out }) {
        if (!create) await mustExist(target, key, name);
        await checkDurability(target, key, name, mode);
        const { outcome, old } = target.redis === undefined
          ? await raiseThroughStore(target, key, name, value)
          : await raiseOnRedis(target, key, name, value);
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
        if (json) out(JSON.stringify({ key, name, old, new: value, raised }));
        else out(raised ? `${name}: ${old ?? "(none)"} -> ${value}` : `${name}: already ${value}`);
      },
    };
  },
};
