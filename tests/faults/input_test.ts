/**
 * Fault suite, scenario 8: bad input and hostile data. Hostile names are stored verbatim as
 * hash fields (never spliced into the script); hostile stored values and keys of the wrong type
 * give the documented errors and leave every other counter untouched; options of every wrong
 * type are refused at construction.
 */

import "../support/deadline.ts"; // a time limit on every test of this file
import assert from "node:assert/strict";
import { KvId, KvIdError } from "../../mod.ts";
import { CLIENTS, openClient } from "../support/redis_clients.ts";
import { command, startServer, type TestServer } from "../support/redis_server.ts";
import { Recorder, rejectsWith, tick } from "../support/faults.ts";

const HOSTILE_NAMES = [
  "with spaces",
  "订单 🚀 é",
  "]]..redis.call('FLUSHALL')..[[",
  "'); redis.call('DEL', KEYS[1]) --",
  '" .. ARGV[1] .. "',
  "*1 $8 FLUSHALL",
  "%d+ %s $1 \\ \\0 ${x}",
  "x".repeat(1024),
  "é".repeat(2048), // 4,096 UTF-8 bytes: the longest allowed
];

/** Names with control characters: refused at construction by the one name rule (issue 33). */
const CONTROL_NAMES = ["\r\n*1\r\n$8\r\nFLUSHALL\r\n", "nul\u0000byte", "\u0000step:order"];

/** Counters that must survive everything the tests do. */
const SENTINELS: Record<string, string> = { order: "41", "user id": "7", "订单": "12345" };

async function plant(server: TestServer): Promise<void> {
  for (const [f, v] of Object.entries(SENTINELS)) {
    await command(server.url, "HSET", "sentinel", f, v);
  }
}

async function assertSentinelsUntouched(server: TestServer): Promise<void> {
  const all = await command(server.url, "HGETALL", "sentinel") as string[];
  const got: Record<string, string> = {};
  for (let i = 0; i < all.length; i += 2) got[all[i]] = all[i + 1];
  assert.deepEqual(got, SENTINELS, "other counters untouched");
}

for (const kind of CLIENTS) {
  Deno.test({
    name: `faults: hostile names and data (${kind})`,
    timeout: 60_000,
    fn: async (t) => {
      await using server = await startServer();
      await using client = await openClient(kind, server.url);
      await plant(server);

      await t.step("names with control characters are refused before any command", () => {
        const rec = new Recorder(client.redis);
        for (const name of CONTROL_NAMES) {
          assert.throws(() => new KvId(name, { redis: rec }), TypeError, JSON.stringify(name));
        }
        assert.equal(rec.calls.length, 0);
      });

      for (const guard of [true, false]) {
        await t.step(`hostile names are stored verbatim as fields (guard ${guard})`, async () => {
          const rec = new Recorder(client.redis);
          const key = `names-${guard}`;
          for (const name of HOSTILE_NAMES) {
            await using id = new KvId(name, { redis: rec, key, guard, prefetchAt: 0 });
            assert.equal(await id.next(), 1);
            assert.equal(await id.next(), 2);
          }
          // Exactly one field per name, byte for byte, each at 2 (two steps of 1).
          const all = await command(server.url, "HGETALL", key) as string[];
          const fields = new Map<string, string>();
          for (let i = 0; i < all.length; i += 2) {
            // "\0step:<name>": the remembered step, next to the counter.
            if (!all[i].startsWith("\0step:")) fields.set(all[i], all[i + 1]);
          }
          assert.equal(fields.size, HOSTILE_NAMES.length);
          for (const name of HOSTILE_NAMES) assert.equal(fields.get(name), "2", name.slice(0, 20));
          // The name only ever travels as an argument; the script is one constant text.
          for (const c of rec.calls) {
            assert.equal(c.key, key);
            assert.ok(HOSTILE_NAMES.includes(c.args[0]), "the field is the first argument");
          }
          const scripts = new Set(rec.calls.map((c) => c.script).filter((s) => s !== undefined));
          // The reserve script (its text and its sha) and a client's first reservation, which
          // reads the durability in the same script (issue 27): constant texts.
          assert.ok(scripts.size <= (guard ? 3 : 0), "two scripts (texts and a sha)");
          for (const s of scripts) {
            for (const name of HOSTILE_NAMES) assert.ok(!s!.includes(name));
          }
          await assertSentinelsUntouched(server);
        });
      }

      await t.step("hostile keys are used verbatim too", async () => {
        for (const key of ["key with spaces", "ключ]]'\"", "\r\nDEL sentinel\r\n"]) {
          await using id = new KvId("n", { redis: client.redis, key, prefetchAt: 0 });
          assert.equal(await id.next(), 1);
          assert.equal(await command(server.url, "HGET", key, "n"), "1");
        }
        await assertSentinelsUntouched(server);
      });

      // What a field may hold, what a generator makes of it, in number and bigint mode.
      const values: [string, string, RegExp][] = [
        ["abc", "reply", /does not hold an integer/],
        ["1.5", "reply", /does not hold an integer/],
        ["1e3", "reply", /does not hold an integer/],
        [" 12", "reply", /does not hold an integer/],
        ["", "reply", /does not hold an integer/],
        ["99999999999999999999", "reply", /does not hold an integer/],
        ["9223372036854775807", "overflow", /2\^63-1/],
      ];
      for (const guard of [true, false]) {
        for (const bigint of [false, true]) {
          await t.step(`hostile stored values (guard ${guard}, bigint ${bigint})`, async () => {
            const key = `values-${guard}-${bigint}`;
            for (const [value, code, message] of values) {
              const field = `f:${value}`;
              await command(server.url, "HSET", key, field, value);
              await using id = new KvId(field, { redis: client.redis, key, guard, bigint } as {
                redis: typeof client.redis;
              });
              const err = await rejectsWith(id.next(), code, message);
              assert.equal(err.key, key);
              assert.equal(err.field, field);
              // Refusals fail fast: the next caller does not wait out the timeout.
              const started = performance.now();
              await rejectsWith(id.next(), code);
              // Well under the 5 s timeout it would otherwise wait out.
              assert.ok(performance.now() - started < 2_500);
              assert.equal(await command(server.url, "HGET", key, field), value, "left as is");
            }
            await assertSentinelsUntouched(server);
          });
        }
      }

      await t.step("just below 2^63-1: bigint reaches it exactly, number mode stops", async () => {
        for (const guard of [true, false]) {
          const name = `top-${guard}`;
          await command(server.url, "HSET", "kvid", name, "9223372036854775805");
          // One ID a reservation: the step rule would ask a new name for 8 at once, more than
          // the two IDs left below 2^63-1 (such a reservation fails with "overflow").
          await using big = new KvId(name, {
            redis: client.redis,
            bigint: true,
            guard,
            minStep: 1,
            maxStep: 1,
          });
          // ioredis reads a plain HINCRBY reply as a rounded number: that range is spent and
          // the next is read exactly by script (see kvid_test.ts).
          const rounded = kind === "ioredis" && !guard;
          if (!rounded) assert.equal(await big.next(), 9223372036854775806n);
          assert.equal(await big.next(), 9223372036854775807n);
          await rejectsWith(big.next(), "overflow");
          assert.equal(await command(server.url, "HGET", "kvid", name), "9223372036854775807");

          await command(server.url, "HSET", "kvid", `${name}-n`, "9223372036854775000");
          await using num = new KvId(`${name}-n`, { redis: client.redis, guard });
          await rejectsWith(num.next(), "unsafe", /bigint: true/);
        }
        await assertSentinelsUntouched(server);
      });

      await t.step("a negative stored value: refused, never an ID below 1", async () => {
        for (const guard of [true, false]) {
          const name = `negative-${guard}`;
          await command(server.url, "HSET", "kvid", name, "-5");
          await using id = new KvId(name, { redis: client.redis, guard, prefetchAt: 0 });
          // Each try spends a range at or below 0 and is refused; the counter climbs.
          const err = await id.next().catch((e) => e);
          assert.ok(err instanceof KvIdError, `issued ${err}`);
          assert.equal(err.code, "reply");
          assert.match(err.message, /negative value/);
          assert.equal(id.stats().rollbacks, 0, "not reported as a rollback");
          for (let tries = 0; id.high === 0n; tries++) {
            assert.ok(tries < 200, "never climbed above 0");
            const got = await id.next().catch(() => undefined);
            if (got !== undefined) assert.ok(got >= 1, `issued ${got}`);
            else await tick(5);
          }
        }
        await assertSentinelsUntouched(server);
      });

      await t.step("a key holding a string, a list, a set", async () => {
        await command(server.url, "SET", "k-string", "v");
        await command(server.url, "RPUSH", "k-list", "a", "b");
        await command(server.url, "SADD", "k-set", "a");
        for (const guard of [true, false]) {
          for (const key of ["k-string", "k-list", "k-set"]) {
            await using id = new KvId("n", { redis: client.redis, key, guard });
            const err = await rejectsWith(id.next(), "reply", /not a hash/);
            assert.equal(err.key, key);
          }
        }
        assert.equal(await command(server.url, "GET", "k-string"), "v");
        assert.deepEqual(await command(server.url, "LRANGE", "k-list", "0", "-1"), ["a", "b"]);
        assert.deepEqual(await command(server.url, "SMEMBERS", "k-set"), ["a"]);
        await assertSentinelsUntouched(server);
      });

      await t.step("a live generator whose field is overwritten with garbage", async () => {
        await using id = new KvId("corrupt", { redis: client.redis, minStep: 10, maxStep: 10 });
        const ids = [await id.next()];
        await command(server.url, "HSET", "kvid", "corrupt", "garbage");
        while (id.stats().remaining > 0) ids.push(await id.next()); // buffered IDs still flow
        await rejectsWith(id.next(), "reply", /does not hold an integer/);
        assert.equal(await command(server.url, "HGET", "kvid", "corrupt"), "garbage");
        // Repaired by hand, below what the generator issued: the guard lifts it.
        await command(server.url, "HSET", "kvid", "corrupt", "3");
        let next: number | undefined;
        for (let tries = 0; next === undefined; tries++) {
          assert.ok(tries < 200, "never recovered");
          next = await id.next().catch(() => undefined);
          if (next === undefined) await tick(5); // the refusal is retried after its backoff
        }
        assert.ok(next > ids.at(-1)!, `${next} after ${ids.at(-1)}`);
        await assertSentinelsUntouched(server);
      });
    },
  });
}

Deno.test("faults: options of every wrong type are refused at construction, no I/O", () => {
  const redis = {
    hincrby: () => assert.fail("no I/O"),
    eval: () => assert.fail("no I/O"),
    evalsha: () => assert.fail("no I/O"),
  };
  const wrong: [string, unknown][] = [
    ["a string", "1"],
    ["a boolean", true],
    ["null", null],
    ["an object", {}],
    ["an array", []],
    ["a function", () => 1],
    ["a symbol", Symbol("s")],
    ["a bigint", 1n],
  ];
  // For each option, the values of the right type, which the loop skips.
  const accepts: Record<string, (v: unknown) => boolean> = {
    key: (v) => typeof v === "string",
    minStep: (v) => typeof v === "number",
    maxStep: (v) => typeof v === "number",
    segmentDuration: (v) => typeof v === "number",
    prefetchAt: (v) => typeof v === "number",
    timeout: (v) => typeof v === "number",
    rollbackMargin: (v) => typeof v === "number",
    bigint: (v) => typeof v === "boolean",
    guard: (v) => typeof v === "boolean",
    clock: (v) => typeof v === "function",
    redis: (v) => typeof v === "function" || Array.isArray(v), // arrays: several servers
    store: () => false,
  };
  for (const [option, ok] of Object.entries(accepts)) {
    for (const [label, value] of wrong) {
      if (ok(value)) continue;
      const options = option === "store" ? { store: value } : { redis, [option]: value };
      assert.throws(
        () => new KvId("x", options as never),
        (e: unknown) => {
          assert.ok(e instanceof TypeError, `${option} = ${label}: ${e}`);
          assert.match((e as Error).message, new RegExp(option), `${option} = ${label}`);
          return true;
        },
        `${option} = ${label} was accepted`,
      );
    }
  }
  // Numbers out of range or not integers are RangeErrors naming the option.
  const ranges: [string, number][] = [
    ["minStep", 0],
    ["minStep", -1],
    ["minStep", 1.5],
    ["minStep", Infinity],
    ["maxStep", 2 ** 53],
    ["segmentDuration", -1],
    ["segmentDuration", Infinity],
    ["prefetchAt", 1.01],
    ["timeout", 0],
    ["timeout", 2 ** 31],
    ["rollbackMargin", -1],
    ["rollbackMargin", 0.5],
    ["rollbackMargin", 2 ** 53],
  ];
  for (const [option, value] of ranges) {
    assert.throws(
      () => new KvId("x", { redis, [option]: value }),
      (e: unknown) => e instanceof RangeError && e.message.includes(option),
      `${option} = ${value}`,
    );
  }
  for (const name of ["", "a\uDC00", "x".repeat(4097), 5, null, undefined]) {
    assert.throws(() => new KvId(name as string, { redis }), TypeError);
  }
});
