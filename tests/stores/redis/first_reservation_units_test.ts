import "../../support/deadline.ts"; // a time limit on every test of this file
// A generator's first reservation on the Redis store (src/stores/redis/first_reservation.ts),
// function by function, against a redis-server (or `KVID_TEST_SERVER`) the test starts: the six
// arguments FIRST_RESERVE_SCRIPT is sent, the range and the durability read from its reply, the
// WAITAOF probe beside it, and each refusal ("no scripting", "apart", a rejection). A client
// wrapping the real one records what is sent and, where a server cannot be made to, changes one
// reply (a RESP3 client's false, an older reply's shape, a connection lost for the CONFIG GETs).
// The whole store's side is in tests/stores/redis/redis_first_reservation_test.ts.
import assert from "node:assert/strict";
import type { RedisClient } from "../../../src/contract/redis_client.ts";
import type { StoreDurability } from "../../../src/contract/store.ts";
import { KvIdError } from "../../../src/contract/errors.ts";
import { confirmedAs, firstReservation } from "../../../src/stores/redis/first_reservation.ts";
import type {
  RedisDurabilityOptions,
  RedisReserveOptions,
} from "../../../src/stores/redis/store_options.ts";
import { isFirstReservation, openClient } from "../../support/redis_clients.ts";
import {
  command,
  ownServers,
  redisOnly,
  startNoScriptingServer,
  startServer,
} from "../../support/redis_server.ts";

/** What a Recorder changes in a first reservation's reply (as the script returned it). */
type Change = (reply: unknown) => unknown;

/** A client passing every call to a real one, recording each; optionally changing replies. */
class Recorder implements RedisClient {
  /** `EVAL first <args>` (the first reservation's script), `EVAL other`, `<command> <args>`. */
  sent: string[] = [];
  /** The arguments of each first reservation sent. */
  firstArgs: string[][] = [];
  change: Change | undefined;
  /** When set, sendCommand rejects with it (a connection lost for those commands). */
  sendFails: Error | undefined;
  readonly #inner: RedisClient;
  constructor(inner: RedisClient) {
    this.#inner = inner;
  }
  hincrby(key: string, field: string, n: number): Promise<unknown> {
    this.sent.push(`HINCRBY ${field} ${n}`);
    return this.#inner.hincrby(key, field, n);
  }
  async eval(script: string, keys: string[], args: string[]): Promise<unknown> {
    if (!isFirstReservation(script)) {
      this.sent.push("EVAL other");
      return await this.#inner.eval(script, keys, args);
    }
    this.sent.push(`EVAL first`);
    this.firstArgs.push(args);
    const reply = await this.#inner.eval(script, keys, args);
    return this.change === undefined ? reply : this.change(reply);
  }
  evalsha(sha: string, keys: string[], args: string[]): Promise<unknown> {
    this.sent.push("EVALSHA");
    return this.#inner.evalsha(sha, keys, args);
  }
  sendCommand(name: string, args: string[] = []): Promise<unknown> {
    this.sent.push([name, ...args].join(" "));
    if (this.sendFails !== undefined) return Promise.reject(this.sendFails);
    return this.#inner.sendCommand!(name, args);
  }
}

function reserve(over: Partial<RedisReserveOptions> = {}): RedisReserveOptions {
  return { floor: 0n, raiseTo: 0n, guard: true, exact: false, ...over };
}

function asked(over: Partial<RedisDurabilityOptions> = {}): RedisDurabilityOptions {
  return { field: "f", mode: "strict", stated: {}, judge: () => undefined, ...over };
}

const durability = (settings: Record<string, string>): StoreDurability => ({
  durable: true,
  settings,
  problems: [],
});

Deno.test("firstReservation: six arguments, the flags saying the options", async (t) => {
  await using server = await startServer();
  await using client = await openClient("node-redis", server.url);
  const flags = async (
    options: Partial<RedisReserveOptions>,
    durability: Partial<RedisDurabilityOptions>,
  ) => {
    const r = new Recorder(client.redis);
    const call = await firstReservation(r, "fk", "f", 5, reserve(options), asked(durability));
    assert.equal(typeof call, "object", Deno.inspect(call));
    assert.equal(r.firstArgs.length, 1);
    assert.equal(r.firstArgs[0].length, 6);
    return r.firstArgs[0];
  };
  await t.step("field, count, floor, raiseTo, most", async () => {
    const args = await flags({ floor: 7n, raiseTo: 9n, maxCount: 40 }, {});
    assert.deepEqual(args.slice(0, 5), ["f", "5", "7", "9", "40"]);
  });
  await t.step("one flag at a time", async () => {
    assert.equal((await flags({}, {}))[5], "00000");
    assert.equal((await flags({ loadStep: true }, {}))[5], "10000");
    assert.equal((await flags({ pool: true }, {}))[5], "01000");
    assert.equal((await flags({ loadStep: false, pool: false }, {}))[5], "00000");
    assert.equal((await flags({}, { replicas: 2 }))[5], "00100");
    assert.equal((await flags({}, { replicas: 0 }))[5], "00000");
    assert.equal((await flags({}, { mode: "best-effort" }))[5], "00101");
    assert.equal((await flags({}, { stated: { appendonly: "yes" } }))[5], "00010");
    assert.equal((await flags({}, { stated: { appendonly: "no" } }))[5], "00000");
    assert.equal(
      (await flags({}, { stated: { maxmemory_policy: "noeviction" } }))[5],
      "00000noeviction",
    );
  });
  await t.step("every flag on", async () => {
    const all = await flags({ loadStep: true, pool: true }, {
      mode: "best-effort",
      replicas: 1,
      stated: { appendonly: "yes", maxmemory_policy: "volatile-lru" },
    });
    assert.equal(all[5], "11111volatile-lru");
    const ones = await flags({ loadStep: true, pool: true }, {
      mode: "best-effort",
      stated: { appendonly: "yes" },
    });
    assert.equal(ones[5], "11111");
  });
});

Deno.test("firstReservation: the range reserved and the durability read, in one call", async () => {
  await using server = await startServer();
  for (const kind of ["node-redis", "ioredis"] as const) {
    await using client = await openClient(kind, server.url);
    const r = new Recorder(client.redis);
    const field = `one-${kind}`;
    await command(server.url, "HSET", "fk", field, "10");
    const call = await firstReservation(r, "fk", field, 5, reserve(), asked());
    assert.ok(typeof call === "object", `${kind}: ${Deno.inspect(call)}`);
    assert.deepEqual(call.reservation?.ranges, [{ first: 11n, last: 15n }], kind);
    assert.equal(call.reservation?.raised, false, kind);
    assert.equal(typeof call.started, "number");
    assert.equal(call.durability.durable, true, `${kind}: ${Deno.inspect(call.durability)}`);
    assert.match(call.durability.settings.server, /^(redis|valkey|kvrocks) \d/, kind);
    assert.equal(call.durability.settings.ttl_ms, "none", kind);
    // The facts came with the reservation: no probe script besides it, no WAITAOF asked.
    assert.deepEqual(r.sent.filter((s) => s.startsWith("EVAL")), ["EVAL first"], kind);
    assert.ok(!r.sent.some((s) => s.startsWith("WAITAOF")), kind);
    assert.equal(await command(server.url, "HGET", "fk", field), "15", kind);
  }
});

Deno.test({
  ...redisOnly("firstReservation: a refused server's counter untouched, no range", "no AOF"),
}, async () => {
  await using server = await startServer({ persistence: "snapshots" });
  for (const kind of ["node-redis", "ioredis"] as const) {
    await using client = await openClient(kind, server.url);
    const field = `refused-${kind}`;
    await command(server.url, "HSET", "fk", field, "10");
    const call = await firstReservation(client.redis, "fk", field, 5, reserve(), asked());
    assert.ok(typeof call === "object", `${kind}: ${Deno.inspect(call)}`);
    assert.equal(call.reservation, undefined, kind);
    assert.equal(call.durability.durable, false, kind);
    assert.equal(call.durability.settings.appendonly, "no", kind);
    assert.equal(await command(server.url, "HGET", "fk", field), "10", kind);
  }
  // A RESP3 client reads the script's false as false, not null: no range either.
  await using client = await openClient("node-redis", server.url);
  const r = new Recorder(client.redis);
  r.change = (reply) => {
    assert.ok(Array.isArray(reply) && reply[0] === null);
    return [false, ...reply.slice(1)];
  };
  const call = await firstReservation(r, "fk", "resp3", 5, reserve(), asked());
  assert.ok(typeof call === "object", Deno.inspect(call));
  assert.equal(call.reservation, undefined);
  assert.equal(await command(server.url, "HGET", "fk", "resp3"), null);
});

Deno.test("firstReservation: a reply of another shape has its read made apart", async () => {
  await using server = await startServer();
  await using client = await openClient("node-redis", server.url);
  const r = new Recorder(client.redis);
  r.change = (reply) => (reply as unknown[]).slice(0, 6); // no facts, no PTTL
  const call = await firstReservation(r, "fk", "shape", 3, reserve(), asked());
  assert.ok(typeof call === "object", Deno.inspect(call));
  assert.deepEqual(call.reservation?.ranges, [{ first: 1n, last: 3n }]);
  assert.deepEqual(r.sent.filter((s) => s.startsWith("EVAL")), ["EVAL first", "EVAL other"]);
  assert.equal(call.durability.durable, true, Deno.inspect(call.durability));
  assert.match(call.durability.settings.server, /^(redis|valkey|kvrocks) \d/);
});

Deno.test({
  ...redisOnly("firstReservation: waitAof probes WAITAOF beside the call, only then", "WAITAOF"),
}, async () => {
  await using server = await startServer();
  await using client = await openClient("node-redis", server.url);
  for (const [waitAof, probed] of [[true, true], [false, false], [undefined, false]] as const) {
    const r = new Recorder(client.redis);
    const call = await firstReservation(r, "fk", "aof", 1, reserve({ waitAof }), asked());
    assert.equal(typeof call, "object");
    assert.equal(r.sent.includes("WAITAOF 0 0 0"), probed, `waitAof ${waitAof}: ${r.sent}`);
  }
});

Deno.test({ ...ownServers("firstReservation: no scripting said as such") }, async () => {
  await using server = await startNoScriptingServer();
  await using client = await openClient("node-redis", server.url);
  assert.equal(
    await firstReservation(client.redis, "fk", "f", 1, reserve(), asked()),
    "no scripting",
  );
});

Deno.test("firstReservation: a counter the script refuses: apart, nothing thrown", async () => {
  await using server = await startServer();
  await using client = await openClient("node-redis", server.url);
  await command(server.url, "HSET", "fk", "text", "abc");
  assert.equal(
    await firstReservation(client.redis, "fk", "text", 1, reserve(), asked()),
    "apart",
  );
  assert.equal(await command(server.url, "HGET", "fk", "text"), "abc");
});

Deno.test({
  ...redisOnly("firstReservation: a transient state rejects, unavailable", "REPLICAOF"),
}, async () => {
  await using server = await startServer();
  await using client = await openClient("node-redis", server.url);
  // A replica of a primary that is not there: it refuses the script's writes with READONLY.
  await command(server.url, "REPLICAOF", "127.0.0.1", "1");
  try {
    const err = await firstReservation(client.redis, "fk", "ro", 1, reserve(), asked()).then(
      (r) => r,
      (e: unknown) => e,
    );
    assert.ok(err instanceof KvIdError, Deno.inspect(err));
    assert.equal(err.code, "unavailable");
  } finally {
    await command(server.url, "REPLICAOF", "NO", "ONE");
  }
});

Deno.test("firstReservation: a lost connection rejects, not apart", async () => {
  await using server = await startServer();
  const client = await openClient("node-redis", server.url);
  await client.close();
  const err = await firstReservation(client.redis, "fk", "f", 1, reserve(), asked()).then(
    (r) => r,
    (e: unknown) => e,
  );
  assert.ok(err instanceof KvIdError, Deno.inspect(err));
  assert.equal(err.code, "connection");
});

Deno.test("firstReservation: the read failing after the script reserved rejects", async () => {
  await using server = await startServer();
  await using client = await openClient("node-redis", server.url);
  const r = new Recorder(client.redis);
  r.sendFails = new Error("connection lost"); // the CONFIG GETs beside the script
  const err = await firstReservation(r, "fk", "late", 1, reserve(), asked()).then(
    (x) => x,
    (e: unknown) => e,
  );
  assert.ok(err instanceof KvIdError, Deno.inspect(err));
  assert.equal(err.code, "connection");
  assert.match(err.message, /connection lost/);
  assert.equal(await command(server.url, "HGET", "fk", "late"), "1", "the range is spent");
});

Deno.test("confirmedAs: WAITAOF dropped only under best-effort on a server without AOF", () => {
  const options = reserve({ waitAof: true, replicas: 1 });
  const best = asked({ mode: "best-effort" });
  assert.deepEqual(confirmedAs(options, best, durability({ appendonly: "no" })), {
    ...options,
    waitAof: false,
  });
  assert.equal(options.waitAof, true, "the options given are not changed");
  for (
    const [a, d] of [
      [asked(), durability({ appendonly: "no" })],
      [best, durability({ appendonly: "yes" })],
      [best, durability({ appendonly: "unknown" })],
      [asked(), durability({ appendonly: "yes" })],
    ] as const
  ) {
    assert.equal(confirmedAs(options, a, d), options, `${a.mode} ${d.settings.appendonly}`);
  }
});
