import "../../support/deadline.ts"; // a time limit on every test of this file
// RedisStore (src/stores/redis/redis_store.ts) method by method against a redis-server (or
// `KVID_TEST_SERVER`) the test starts: release, the remembered step, give-backs, the plain
// HINCRBY path and its layout check, a member's layout reservation, and each one's answer on a
// server without scripting. A client wrapping the real one records what is sent.
import assert from "node:assert/strict";
import { KvIdError } from "../../../src/contract/errors.ts";
import type { RedisClient } from "../../../src/contract/redis_client.ts";
import {
  type AnyReserveOptions,
  MAX_ID,
  poolField,
  stepField,
  type StoreDurability,
} from "../../../src/contract/store.ts";
import { RedisStore } from "../../../src/stores/redis/redis_store.ts";
import { openClient } from "../../support/redis_clients.ts";
import {
  command,
  ownServers,
  redisOnly,
  startNoScriptingServer,
  startServer,
} from "../../support/redis_server.ts";

/** A client passing every call to a real one, recording each command sent. */
class Recorder implements RedisClient {
  sent: string[] = [];
  readonly #inner: RedisClient;
  constructor(inner: RedisClient) {
    this.#inner = inner;
  }
  hincrby(key: string, field: string, n: number): Promise<unknown> {
    this.sent.push(`HINCRBY ${field} ${n}`);
    return this.#inner.hincrby(key, field, n);
  }
  eval(script: string, keys: string[], args: string[]): Promise<unknown> {
    this.sent.push("EVAL");
    return this.#inner.eval(script, keys, args);
  }
  evalsha(sha: string, keys: string[], args: string[]): Promise<unknown> {
    this.sent.push("EVALSHA");
    return this.#inner.evalsha(sha, keys, args);
  }
  // A field, not a method: the durability read calls it unbound.
  sendCommand = (name: string, args: string[] = []): Promise<unknown> => {
    this.sent.push([name, ...args].join(" "));
    return this.#inner.sendCommand!(name, args);
  };
}

function plain(over: Partial<AnyReserveOptions> = {}): AnyReserveOptions {
  return { floor: 0n, raiseTo: 0n, guard: false, exact: false, ...over };
}

function guarded(over: Partial<AnyReserveOptions> = {}): AnyReserveOptions {
  return plain({ guard: true, ...over });
}

async function rejection(p: Promise<unknown>): Promise<KvIdError> {
  const err = await p.then((r) => r, (e: unknown) => e);
  assert.ok(err instanceof KvIdError, Deno.inspect(err));
  return err;
}

const hget = async (url: string, key: string, field: string) =>
  await command(url, "HGET", key, field);

Deno.test("RedisStore.release: the tail given back only for a valid range still at the top", async () => {
  await using server = await startServer();
  await using client = await openClient("node-redis", server.url);
  const store = new RedisStore(client.redis);
  const url = server.url;
  assert.deepEqual((await store.reserve("rk", "a", 5, guarded())).ranges, [
    { first: 1n, last: 5n },
  ]);
  assert.equal(await store.release("rk", "a", { first: 0n, last: 5n }), false, "first 0");
  assert.equal(await store.release("rk", "a", { first: 5n, last: 4n }), false, "empty");
  assert.equal(await hget(url, "rk", "a"), "5");
  assert.equal(await store.release("rk", "a", { first: 5n, last: 5n }), true, "one ID");
  assert.equal(await hget(url, "rk", "a"), "4");
  assert.equal(await store.release("rk", "a", { first: 2n, last: 3n }), false, "not the top");
  assert.equal(await hget(url, "rk", "a"), "4");
  assert.equal(await store.release("rk", "a", { first: 1n, last: 4n }), true, "from the first");
  assert.equal(await hget(url, "rk", "a"), "0");
  await command(url, "SET", "str", "x");
  const err = await rejection(store.release("str", "a", { first: 1n, last: 2n }));
  assert.match(err.message, /not a hash/);
  assert.equal(store.scripting, true);
});

Deno.test("RedisStore.giveBack: valid ranges only, the top one lowering the counter", async () => {
  await using server = await startServer();
  await using client = await openClient("node-redis", server.url);
  const store = new RedisStore(client.redis);
  const url = server.url;
  await store.reserve("gk", "g", 20, guarded());
  assert.equal(await store.giveBack("gk", "g", []), 0);
  assert.equal(await store.giveBack("gk", "g", [{ first: 0n, last: 3n }]), 0, "first 0");
  assert.equal(await store.giveBack("gk", "g", [{ first: 5n, last: 4n }]), 0, "empty");
  assert.equal(await hget(url, "gk", "g"), "20");
  assert.equal(await hget(url, "gk", poolField("g")), null);
  const given = await store.giveBack("gk", "g", [
    { first: 3n, last: 3n },
    { first: 0n, last: 1n },
    { first: 7n, last: 9n },
    { first: 20n, last: 20n },
  ]);
  assert.equal(given, 3);
  assert.equal(await hget(url, "gk", "g"), "19");
  assert.equal(await hget(url, "gk", poolField("g")), "3-3 7-9");
  await command(url, "SET", "str", "x");
  const err = await rejection(store.giveBack("str", "g", [{ first: 1n, last: 2n }]));
  assert.match(err.message, /not a hash/);
  assert.equal(store.scripting, true);
});

Deno.test("RedisStore.loadStep: only a positive safe integer; saveStep writes it", async () => {
  await using server = await startServer();
  await using client = await openClient("node-redis", server.url);
  const store = new RedisStore(client.redis);
  assert.equal(await store.loadStep("sk", "s"), undefined, "none");
  await store.saveStep("sk", "s", 300);
  assert.equal(await hget(server.url, "sk", stepField("s")), "300");
  assert.equal(await store.loadStep("sk", "s"), 300);
  const read = async (value: string) => {
    await command(server.url, "HSET", "sk", stepField("s"), value);
    return await store.loadStep("sk", "s");
  };
  assert.equal(await read("1"), 1);
  assert.equal(await read(String(Number.MAX_SAFE_INTEGER)), Number.MAX_SAFE_INTEGER);
  assert.equal(await read("9007199254740992"), undefined);
  assert.equal(await read("0"), undefined);
  assert.equal(await read("-4"), undefined);
  assert.equal(await read("x"), undefined);
  await command(server.url, "SET", "str", "x");
  const err = await rejection(store.loadStep("str", "s"));
  assert.match(err.message, /not a hash/);
  assert.equal(store.scripting, true);
});

Deno.test({
  ...ownServers("RedisStore without scripting: release, give-back, steps say none, once"),
}, async () => {
  await using server = await startNoScriptingServer();
  for (
    const [name, call] of [
      ["release", (s: RedisStore) => s.release("nk", "n", { first: 1n, last: 2n }), false],
      ["giveBack", (s: RedisStore) => s.giveBack("nk", "n", [{ first: 1n, last: 2n }]), 0],
      ["loadStep", (s: RedisStore) => s.loadStep("nk", "n"), undefined],
      ["saveStep", (s: RedisStore) => s.saveStep("nk", "n", 5), undefined],
    ] as const
  ) {
    await using client = await openClient("node-redis", server.url);
    const r = new Recorder(client.redis);
    const store = new RedisStore(r);
    await command(server.url, "HSET", "nk", "n", "2");
    assert.equal(
      await call(store),
      name === "release" ? false : name === "giveBack" ? 0 : undefined,
      name,
    );
    assert.equal(store.scripting, false, name);
    const sent = r.sent.length;
    assert.equal(
      await call(store),
      name === "release" ? false : name === "giveBack" ? 0 : undefined,
      name,
    );
    assert.equal(r.sent.length, sent, `${name}: no script sent once refused`);
    assert.equal(await hget(server.url, "nk", "n"), "2", name);
  }
});

Deno.test("RedisStore.reserve without the guard: HINCRBY and PERSIST, the TTL removed said", async () => {
  await using server = await startServer();
  await using client = await openClient("node-redis", server.url);
  const r = new Recorder(client.redis);
  const store = new RedisStore(r);
  await command(server.url, "HSET", "pk", "p", "10");
  const one = await store.reserve("pk", "p", 5, plain());
  assert.deepEqual(one.ranges, [{ first: 11n, last: 15n }]);
  assert.equal(one.raised, false);
  assert.equal(one.ttlRemovedMs, 0);
  assert.ok(r.sent.includes("HINCRBY p 5"), `${r.sent}`);
  assert.ok(!r.sent.some((s) => s.startsWith("EVAL")), `${r.sent}`);
  await command(server.url, "PEXPIRE", "pk", "100000");
  const two = await store.reserve("pk", "p", 1, plain());
  assert.deepEqual(two.ranges, [{ first: 16n, last: 16n }]);
  assert.equal(two.ttlRemovedMs, -1, "a TTL removed, its length unknown");
  assert.equal(await command(server.url, "PTTL", "pk"), -1);
});

Deno.test("RedisStore.reserve without the guard: a counter with a layout refused, checked once", async () => {
  await using server = await startServer();
  await using client = await openClient("node-redis", server.url);
  const r = new Recorder(client.redis);
  const store = new RedisStore(r);
  await command(server.url, "HSET", "lk", "\u0000layout:owned", "v1 servers=2 block=10 index=0");
  const err = await rejection(store.reserve("lk", "owned", 1, plain()));
  assert.equal(err.code, "config");
  assert.match(err.message, /interleaved servers/);
  assert.equal(await hget(server.url, "lk", "owned"), null);
  await store.reserve("lk", "free", 1, plain());
  await store.reserve("lk", "free", 1, plain());
  assert.equal(r.sent.filter((s) => s.startsWith("HEXISTS lk")).length, 2, `${r.sent}`);
  assert.equal(await hget(server.url, "lk", "free"), "2");
});

Deno.test("RedisStore.reserve: a field not an integer refused as not a counter", async () => {
  await using server = await startServer();
  await using client = await openClient("node-redis", server.url);
  const store = new RedisStore(client.redis);
  await command(server.url, "HSET", "tk", "t", "abc");
  for (const options of [plain(), guarded()]) {
    const err = await rejection(store.reserve("tk", "t", 1, options));
    assert.equal(err.reason, "not-a-counter", Deno.inspect(err));
    assert.equal(store.scripting, true, "a refused counter is not a server without scripting");
  }
});

Deno.test("RedisStore.reserve as a member: the layout recorded, raised, refusals named", async () => {
  await using server = await startServer();
  await using client = await openClient("node-redis", server.url);
  const store = new RedisStore(client.redis);
  const url = server.url;
  const layout = "v1 servers=2 block=10 index=0";
  const first = await store.reserve("mk", "m", 1, guarded({ layout }));
  assert.deepEqual(first, {
    ranges: [{ first: 1n, last: 1n }],
    raised: false,
    layout,
    ttlRemovedMs: 0,
  });
  assert.equal(await hget(url, "mk", "\u0000layout:m"), layout);
  const raised = await store.reserve("mk", "m", 2, guarded({ layout, floor: 5n, raiseTo: 7n }));
  assert.deepEqual(raised.ranges, [{ first: 8n, last: 9n }]);
  assert.equal(raised.raised, true);
  const unguarded = await store.reserve("mk", "m", 1, plain({ layout, floor: 50n, raiseTo: 70n }));
  assert.deepEqual(unguarded.ranges, [{ first: 10n, last: 10n }], "no guard: no floor");
  assert.equal(unguarded.raised, false);
  const capped = await rejection(
    store.reserve("mk", "c", 1, guarded({ layout, floor: MAX_ID, raiseTo: MAX_ID + 10n })),
  );
  assert.equal(capped.code, "overflow", "raised to 2^63-1, then the increment overflows");
  assert.equal(await hget(url, "mk", "c"), String(MAX_ID));
  await command(url, "PEXPIRE", "mk", "100000");
  const ttl = await store.reserve("mk", "m", 1, guarded({ layout }));
  assert.ok(ttl.ttlRemovedMs! > 0 && ttl.ttlRemovedMs! <= 100000, `${ttl.ttlRemovedMs}`);
  const other = await rejection(
    store.reserve("mk", "m", 1, guarded({ layout: "v1 servers=3 block=10 index=0" })),
  );
  assert.equal(other.code, "config");
  assert.match(other.message, /servers=2/);
  await command(url, "HSET", "mk", "single", "4");
  const single = await rejection(store.reserve("mk", "single", 1, guarded({ layout })));
  assert.equal(single.code, "config");
  await command(url, "HSET", "mk", "text", "abc");
  const text = await rejection(store.reserve("mk", "text", 1, guarded({ layout })));
  assert.equal(text.code, "reply");
  assert.equal(text.reason, "not-a-counter");
  assert.match(String((text.cause as Error).message), /"abc"/);
});

Deno.test({
  ...ownServers("RedisStore as a member without scripting: a config error, every time"),
}, async () => {
  await using server = await startNoScriptingServer();
  await using client = await openClient("node-redis", server.url);
  const r = new Recorder(client.redis);
  const store = new RedisStore(r);
  const layout = "v1 servers=2 block=10 index=0";
  for (let i = 0; i < 2; i++) {
    const err = await rejection(store.reserve("mk", "m", 1, guarded({ layout })));
    assert.equal(err.code, "config");
    assert.match(err.message, /interleaving needs Lua scripting/);
    assert.equal(store.scripting, false);
  }
  assert.equal(r.sent.filter((s) => s.startsWith("EVAL")).length, 1, `${r.sent}`);
  assert.equal(await hget(server.url, "mk", "m"), null);
});

Deno.test({
  ...ownServers("RedisStore.reserve without scripting: the guard falls back to HINCRBY"),
}, async () => {
  await using server = await startNoScriptingServer();
  await using client = await openClient("node-redis", server.url);
  const r = new Recorder(client.redis);
  const store = new RedisStore(r);
  const one = await store.reserve("fk", "f", 3, guarded({ floor: 10n, raiseTo: 20n }));
  assert.deepEqual(one.ranges, [{ first: 1n, last: 3n }]);
  assert.equal(store.scripting, false);
  const two = await store.reserve("fk", "f", 2, guarded());
  assert.deepEqual(two.ranges, [{ first: 4n, last: 5n }]);
  assert.equal(r.sent.filter((s) => s.startsWith("EVAL")).length, 1, `${r.sent}`);
});

Deno.test("RedisStore: the server's clock, counters and old days, through the client", async () => {
  await using server = await startServer();
  await using client = await openClient("node-redis", server.url);
  const store = new RedisStore(client.redis);
  const now = await store.now();
  assert.equal(typeof now, "number");
  assert.ok(Math.abs(now - Date.now()) < 600_000, `${now}`);
  await command(server.url, "HSET", "dk", "20200101", "3", "20990101", "4", "name", "5");
  assert.equal(await store.deleteDaysBefore("dk", "20250101"), 1);
  assert.deepEqual(
    await store.counters("dk"),
    new Map([["20990101", { value: 4n }], ["name", { value: 5n }]]),
  );
});

Deno.test("RedisStore: the clock of a closed client rejects as a connection error", async () => {
  await using server = await startServer();
  const client = await openClient("node-redis", server.url);
  await client.close();
  const err = await rejection(new RedisStore(client.redis).now());
  assert.equal(err.code, "connection");
});

Deno.test("RedisStore: a failing client factory said as such, retried, config when permanent", async () => {
  let calls = 0;
  const store = new RedisStore(() => {
    calls++;
    return Promise.reject(new Error("boom"));
  });
  for (const call of [() => store.reserve("k", "f", 1, guarded()), () => store.now()]) {
    const err = await rejection(call());
    assert.equal(err.code, "connection");
    assert.match(err.message, /^the Redis client factory failed: .*boom/);
  }
  assert.equal(calls, 2);
  const permanent = new RedisStore(() => {
    throw Object.assign(new Error("getaddrinfo ENOTFOUND nohost"), { code: "ENOTFOUND" });
  });
  const err = await rejection(permanent.reserve("k", "f", 1, guarded()));
  assert.equal(err.code, "config");
  assert.match(err.message, /factory failed/);
});

Deno.test("RedisStore: a client replying rounded numbers: bigint reads through the script", async () => {
  await using server = await startServer();
  await using io = await openClient("ioredis", server.url);
  const r = new Recorder(io.redis);
  const store = new RedisStore(r);
  const start = 2n ** 60n;
  await command(server.url, "HSET", "xk", "x", String(start));
  const one = await store.reserve("xk", "x", 3, plain({ exact: true, floor: 5n, raiseTo: 9n }));
  // The HINCRBY's rounded reply is spent: the script's exact one stands for the range.
  assert.deepEqual(one.ranges, [{ first: start + 4n, last: start + 6n }]);
  assert.equal(one.raised, false);
  assert.deepEqual(r.sent.filter((s) => !/^(HEXISTS|PERSIST)/.test(s)), ["HINCRBY x 3", "EVAL"]);
  r.sent = [];
  const two = await store.reserve("xk", "x", 2, plain({ exact: true, floor: 5n, raiseTo: 9n }));
  assert.deepEqual(two.ranges, [{ first: start + 7n, last: start + 8n }]);
  assert.deepEqual(r.sent, ["EVALSHA"], "rounding known: the script at once");
  await command(server.url, "HSET", "xk", "n", String(start));
  const unsafe = await rejection(store.reserve("xk", "n", 1, plain({ exact: false })));
  assert.equal(unsafe.code, "unsafe");
  assert.match(unsafe.message, /MAX_SAFE_INTEGER/);
});

/** Durability options judging as `judge` does. */
function reading(judge: (d: StoreDurability) => Error | undefined = () => undefined) {
  return { field: "d", mode: "strict" as const, stated: {}, judge, reuse: true };
}

Deno.test("RedisStore.reserve reading the durability: one call, then the shared read", async () => {
  await using server = await startServer();
  await using client = await openClient("node-redis", server.url);
  const r = new Recorder(client.redis);
  const first = await new RedisStore(r).reserve("ek", "d", 5, guarded({ durability: reading() }));
  assert.deepEqual(first.ranges, [{ first: 1n, last: 5n }]);
  assert.equal(first.durability?.durable, true, Deno.inspect(first.durability));
  assert.deepEqual(r.sent.filter((s) => s.startsWith("EVAL")), ["EVAL"], `${r.sent}`);
  r.sent = [];
  // Another generator of this client: the read it shares, then the reservation.
  const store = new RedisStore(r);
  const second = await store.reserve("ek", "d", 2, guarded({ durability: reading() }));
  assert.deepEqual(second.ranges, [{ first: 6n, last: 7n }]);
  assert.deepEqual(second.durability, first.durability);
  assert.deepEqual(r.sent.filter((s) => s.startsWith("EVAL")), ["EVAL"], `${r.sent}`);
  assert.ok(!r.sent.some((s) => s.startsWith("CONFIG")), `${r.sent}`);
  // Without the guard: the read, then a plain HINCRBY.
  r.sent = [];
  store.forgetReads(); // the next read reads the server
  const plainRead = await store.reserve("ek", "d", 1, plain({ durability: reading() }));
  assert.deepEqual(plainRead.ranges, [{ first: 8n, last: 8n }]);
  assert.ok(r.sent.includes("HINCRBY d 1"), `${r.sent}`);
  assert.ok(r.sent.some((s) => s.startsWith("CONFIG GET")), `a read of its own: ${r.sent}`);
});

Deno.test("RedisStore.reserve reading the durability: a refusal hands out no range", async () => {
  await using server = await startServer();
  await using client = await openClient("node-redis", server.url);
  const refuse = reading(() => new Error("refused"));
  const first = await new RedisStore(client.redis).reserve(
    "ek",
    "d",
    5,
    guarded({ durability: refuse }),
  );
  assert.deepEqual(first.ranges, [], "the script reserved, the judgement refused: spent");
  assert.equal(first.durability?.durable, true);
  const spent = await command(server.url, "HGET", "ek", "d");
  const again = await new RedisStore(client.redis).reserve(
    "ek",
    "d",
    5,
    guarded({ durability: refuse }),
  );
  assert.deepEqual(again.ranges, []);
  assert.equal(again.raised, false);
  assert.equal(await command(server.url, "HGET", "ek", "d"), spent, "a shared read: untouched");
});

Deno.test("RedisStore: says it reads the step and the durability in its reservation", () => {
  const store = new RedisStore(() => Promise.reject(new Error("never called")));
  assert.equal(store.reservesStep, true);
  assert.equal(store.readsDurability, true);
  assert.equal(store.scripting, true);
});

Deno.test({
  ...ownServers("RedisStore reading the durability without scripting: plain from then on"),
}, async () => {
  await using server = await startNoScriptingServer();
  await using client = await openClient("node-redis", server.url);
  const r = new Recorder(client.redis);
  const store = new RedisStore(r);
  const one = await store.reserve("ek", "d", 2, guarded({ durability: reading() }));
  assert.deepEqual(one.ranges, [{ first: 1n, last: 2n }]);
  assert.equal(store.scripting, false, "the first call's refusal remembered");
  // The first call's script and the read's: no reserve script tried after them.
  assert.equal(r.sent.filter((s) => s.startsWith("EVAL")).length, 2, `${r.sent}`);
  r.sent = [];
  const two = await store.reserve("ek", "d", 1, guarded());
  assert.deepEqual(two.ranges, [{ first: 3n, last: 3n }]);
  assert.ok(!r.sent.some((s) => s.startsWith("EVAL")), `${r.sent}`);
});

/** A Recorder whose HINCRBY replies `delayMs` late (a slow round trip). */
class Slow extends Recorder {
  delayMs = 150;
  override async hincrby(key: string, field: string, n: number): Promise<unknown> {
    const reply = await super.hincrby(key, field, n);
    await new Promise((resolve) => setTimeout(resolve, this.delayMs));
    return reply;
  }
}

Deno.test({
  ...redisOnly(
    "RedisStore: WAITAOF's budget is the wait less the reservation's round trip",
    "WAITAOF",
  ),
}, async () => {
  await using server = await startServer({ server: "valkey-server" });
  await using client = await openClient("node-redis", server.url);
  const waited = async (store: RedisStore, options: AnyReserveOptions, r: Slow) => {
    r.sent = [];
    const started = performance.now();
    await store.reserve("wk", "w", 1, options);
    const took = performance.now() - started;
    const sent = r.sent.filter((s) => s.startsWith("WAITAOF 1 0 "));
    assert.equal(sent.length, 1, `${r.sent}`);
    return { ms: Number(sent[0].split(" ")[3]), took };
  };
  const r = new Slow(client.redis);
  const store = new RedisStore(r, { waitAof: true, waitMs: 5_000 });
  const own = await waited(store, plain(), r);
  assert.ok(own.ms <= 5_000 - 150 && own.ms >= 5_000 - own.took - 1, Deno.inspect(own));
  const budget = await waited(store, plain({ budgetMs: 3_000 }), r);
  assert.ok(budget.ms <= 3_000 - 150 && budget.ms >= 3_000 - budget.took - 1, Deno.inspect(budget));
  // Bounded by two round trips: max(200 ms, 2 x rtt) less the rtt spent, rtt >= 150 ms.
  const trips = await waited(store, plain({ budgetRoundTrips: 2 }), r);
  assert.ok(trips.ms >= 150 && trips.ms <= trips.took, Deno.inspect(trips));
});

Deno.test("RedisStore.reserve: the guard's floor raises; the pool only when asked", async () => {
  await using server = await startServer();
  await using client = await openClient("node-redis", server.url);
  const store = new RedisStore(client.redis);
  const url = server.url;
  const raised = await store.reserve("ok", "o", 3, guarded({ floor: 10n, raiseTo: 20n }));
  assert.deepEqual(raised.ranges, [{ first: 21n, last: 23n }]);
  assert.equal(raised.raised, true);
  await command(url, "HSET", "ok", poolField("o"), "5-6");
  const counter = await store.reserve("ok", "o", 2, guarded());
  assert.deepEqual(counter.ranges, [{ first: 24n, last: 25n }], "no pool option: the counter");
  const pooled = await store.reserve("ok", "o", 2, guarded({ pool: true }));
  assert.deepEqual(pooled.ranges, [{ first: 5n, last: 6n }]);
  assert.equal(await hget(url, "ok", poolField("o")), null);
  await command(url, "HSET", "ok", poolField("o"), "7-8");
  const unguarded = await store.reserve("ok", "o", 1, plain({ pool: true }));
  assert.deepEqual(unguarded.ranges, [{ first: 26n, last: 26n }], "no guard: no pool");
});

Deno.test({
  ...redisOnly(
    "RedisStore.reserve reading the durability: refused by the script, judged apart",
    "no AOF",
  ),
}, async () => {
  await using server = await startServer({ persistence: "snapshots" });
  await using client = await openClient("node-redis", server.url);
  const store = new RedisStore(client.redis);
  // The script refuses a server without AOF; this judgement accepts it: a second call reserves.
  const got = await store.reserve("ak", "a", 5, guarded({ durability: reading() }));
  assert.deepEqual(got.ranges, [{ first: 1n, last: 5n }]);
  assert.equal(got.durability?.settings.appendonly, "no");
  const read = await store.durability("ak", reading());
  assert.equal(read.settings.appendonly, "no");
  assert.equal(read.durable, false);
});

Deno.test("RedisStore.durability of a closed client rejects as a connection error", async () => {
  await using server = await startServer();
  const client = await openClient("node-redis", server.url);
  await client.close();
  const err = await rejection(new RedisStore(client.redis).durability("k", reading()));
  assert.equal(err.code, "connection");
});

/** A Recorder whose HINCRBY replies `reply` (a client that misreads it). */
class Misread extends Recorder {
  reply: unknown = "abc";
  override async hincrby(key: string, field: string, n: number): Promise<unknown> {
    await super.hincrby(key, field, n);
    return this.reply;
  }
}

Deno.test("RedisStore.reserve: a HINCRBY reply not an integer refused, said so", async () => {
  await using server = await startServer();
  await using client = await openClient("node-redis", server.url);
  const store = new RedisStore(new Misread(client.redis));
  const err = await rejection(store.reserve("bk", "b", 1, plain()));
  assert.match(err.message, /HINCRBY did not reply with an integer/);
});

Deno.test("RedisStore: rounded replies read exactly take neither the pool nor the step", async () => {
  await using server = await startServer();
  await using io = await openClient("ioredis", server.url);
  const store = new RedisStore(io.redis);
  const start = 2n ** 60n;
  await command(server.url, "HSET", "qk", "q", String(start), poolField("q"), "5-6");
  await command(server.url, "HSET", "qk", stepField("q"), "300");
  const opts = plain({ exact: true, pool: true, loadStep: true, floor: 2n ** 61n });
  const one = await store.reserve("qk", "q", 2, { ...opts, raiseTo: 2n ** 61n + 10n });
  assert.deepEqual(one.ranges, [{ first: start + 3n, last: start + 4n }]);
  assert.equal(one.step, undefined);
  assert.equal(one.raised, false);
  assert.equal(await hget(server.url, "qk", poolField("q")), "5-6");
  const two = await store.reserve("qk", "q", 2, { ...opts, raiseTo: 2n ** 61n + 10n });
  assert.deepEqual(two.ranges, [{ first: start + 5n, last: start + 6n }], "no guard: no floor");
  assert.equal(two.raised, false);
});

Deno.test({
  ...ownServers("RedisStore: rounded replies without scripting: a config error, EVAL once"),
}, async () => {
  await using server = await startNoScriptingServer();
  await using io = await openClient("ioredis", server.url);
  const r = new Recorder(io.redis);
  const store = new RedisStore(r);
  await command(server.url, "HSET", "zk", "z", String(2n ** 60n));
  for (let i = 0; i < 2; i++) {
    const err = await rejection(store.reserve("zk", "z", 1, plain({ exact: true })));
    assert.equal(err.code, "config", Deno.inspect(err));
    assert.match(err.message, /no scripting/);
  }
  assert.equal(r.sent.filter((s) => s.startsWith("EVAL")).length, 1, `${r.sent}`);
});

Deno.test("RedisStore.reserve without the guard: each counter checked once, among others", async () => {
  await using server = await startServer();
  await using client = await openClient("node-redis", server.url);
  const r = new Recorder(client.redis);
  const store = new RedisStore(r);
  for (const field of ["c1", "c2", "c1", "c2"]) await store.reserve("ck", field, 1, plain());
  assert.equal(r.sent.filter((s) => s.startsWith("HEXISTS")).length, 2, `${r.sent}`);
});

/** A fake client in memory: HINCRBY, and HEXISTS/PERSIST through sendCommand, counted. */
class Counters implements RedisClient {
  values = new Map<string, number>();
  hexists = 0;
  hincrby(_key: string, field: string, n: number): Promise<unknown> {
    this.values.set(field, (this.values.get(field) ?? 0) + n);
    return Promise.resolve(this.values.get(field));
  }
  eval(): Promise<unknown> {
    return Promise.reject(new Error("no scripts here"));
  }
  evalsha(): Promise<unknown> {
    return Promise.reject(new Error("no scripts here"));
  }
  sendCommand(name: string): Promise<unknown> {
    if (name === "HEXISTS") this.hexists++;
    return Promise.resolve(0);
  }
}

Deno.test("RedisStore: the counters checked for a layout are remembered up to 10,000", async () => {
  const fake = new Counters();
  const store = new RedisStore(fake);
  for (let i = 0; i < 10_000; i++) await store.reserve("k", `n${i}`, 1, plain());
  assert.equal(fake.hexists, 10_000);
  await store.reserve("k", "n0", 1, plain());
  assert.equal(fake.hexists, 10_000, "all 10,000 remembered");
  await store.reserve("k", "n10000", 1, plain()); // the 10,001st: the memory starts over
  assert.equal(fake.hexists, 10_001);
  await store.reserve("k", "n0", 1, plain());
  assert.equal(fake.hexists, 10_002, "forgotten");
  await store.reserve("k", "n10000", 1, plain());
  assert.equal(fake.hexists, 10_002, "the last one checked is remembered");
});

/** A Recorder whose script replies pass through `change`. */
class Changed extends Recorder {
  change: (reply: unknown) => unknown = (r) => r;
  override async eval(script: string, keys: string[], args: string[]): Promise<unknown> {
    return this.change(await super.eval(script, keys, args));
  }
  override async evalsha(sha: string, keys: string[], args: string[]): Promise<unknown> {
    return this.change(await super.evalsha(sha, keys, args));
  }
}

Deno.test("RedisStore as a member: a layout reply of another shape refused", async () => {
  await using server = await startServer();
  await using client = await openClient("node-redis", server.url);
  const c = new Changed(client.redis);
  const store = new RedisStore(c);
  const layout = "v1 servers=2 block=10 index=0";
  for (
    const reply of [
      "ok",
      null,
      ["weird", "5", "0", "0"],
      ["ok", "abc", "0", "0"],
      ["ok"],
    ]
  ) {
    c.change = () => reply;
    const err = await rejection(store.reserve("sk", "m", 1, guarded({ layout })));
    assert.match(err.message, /unexpected script reply/, Deno.inspect(reply));
  }
  c.change = () => ["ok", "5", "1"];
  assert.deepEqual(await store.reserve("sk", "m", 2, guarded({ layout })), {
    ranges: [{ first: 4n, last: 5n }],
    raised: true,
    layout,
    ttlRemovedMs: 0,
  });
});

/** Best-effort durability options and the generator's own, as a generator sends them. */
const bestEffort = { ...reading(), mode: "best-effort" as const };
const generator = { durability: "best-effort" };

Deno.test({
  ...redisOnly("RedisStore: a hash read as keeping no AOF is confirmed without WAITAOF", "WAITAOF"),
}, async () => {
  await using server = await startServer({ server: "valkey-server", persistence: "snapshots" });
  await using client = await openClient("node-redis", server.url);
  const r = new Recorder(client.redis);
  const store = new RedisStore(r, { waitAof: true });
  for (const key of ["n1", "n2"]) {
    const first = await store.reserve(key, "a", 1, guarded({ durability: bestEffort, generator }));
    assert.deepEqual(first.ranges, [{ first: 1n, last: 1n }], key);
    assert.equal(first.durability?.settings.appendonly, "no");
  }
  r.sent = [];
  for (const key of ["n1", "n2"]) {
    const later = await store.reserve(key, "a", 1, guarded({ generator }));
    assert.deepEqual(later.ranges, [{ first: 2n, last: 2n }], key);
  }
  assert.ok(!r.sent.some((s) => s.startsWith("WAITAOF 1")), `${r.sent}`);
});

Deno.test({
  ...redisOnly("RedisStore: WAITAOF confirms on an AOF server, on the connection asked", "WAITAOF"),
}, async () => {
  await using server = await startServer({ server: "valkey-server" });
  await using client = await openClient("node-redis", server.url);
  const r = new Recorder(client.redis);
  const store = new RedisStore(r, { waitAof: true });
  const infos = () => r.sent.filter((s) => s === "CLIENT INFO").length;
  // The first call: WAITAOF not yet known to work, so no connection asked before it.
  const first = await store.reserve("ak", "a", 1, guarded({ durability: bestEffort, generator }));
  assert.deepEqual(first.ranges, [{ first: 1n, last: 1n }]);
  assert.equal(first.durability?.settings.appendonly, "yes");
  assert.ok(r.sent.includes("WAITAOF 0 0 0"), `${r.sent}`);
  assert.equal(infos(), 0, `${r.sent}`);
  // Known now: the connection asked before the reservation and right behind its WAITAOF.
  r.sent = [];
  const later = await store.reserve("ak", "a", 1, guarded({ generator }));
  assert.deepEqual(later.ranges, [{ first: 2n, last: 2n }]);
  assert.equal(r.sent.filter((s) => s.startsWith("WAITAOF 1 0 ")).length, 1, `${r.sent}`);
  assert.equal(infos(), 2, `${r.sent}`);
  // Another generator's first call, in one call again (no read in flight to share).
  r.sent = [];
  const again = await new RedisStore(r, { waitAof: true }).reserve(
    "ak",
    "a",
    1,
    guarded({ durability: { ...bestEffort, reuse: false }, generator }),
  );
  assert.deepEqual(again.ranges, [{ first: 3n, last: 3n }]);
  assert.equal(r.sent.filter((s) => s.startsWith("EVAL")).length, 1, `${r.sent}`);
  assert.equal(infos(), 2, `${r.sent}`);
  // Apart (a read to share): the reservation's own connection check, once.
  r.sent = [];
  const apart = await new RedisStore(r, { waitAof: true }).reserve(
    "ak",
    "a",
    1,
    guarded({ durability: bestEffort, generator }),
  );
  assert.deepEqual(apart.ranges, [{ first: 4n, last: 4n }]);
  assert.equal(infos(), 2, `${r.sent}`);
});

/**
 * A fake server in memory keeping no AOF: the probe script's reply, CONFIG GET unknown, plain
 * HINCRBY, WAITAOF confirmed (counted).
 */
class NoAof implements RedisClient {
  waitAofs = 0;
  #values = new Map<string, number>();
  hincrby(key: string, field: string, n: number): Promise<unknown> {
    const at = `${key}\u0000${field}`;
    this.#values.set(at, (this.#values.get(at) ?? 0) + n);
    return Promise.resolve(this.#values.get(at));
  }
  eval(): Promise<unknown> {
    return Promise.resolve([
      "# Server\r\nredis_version:7.2.4\r\n",
      "# Persistence\r\naof_enabled:0\r\n",
      "# Memory\r\nmaxmemory_policy:noeviction\r\n",
      -1,
      "# Replication\r\nrole:master\r\nconnected_slaves:0\r\n",
      "",
    ]);
  }
  evalsha(): Promise<unknown> {
    return this.eval();
  }
  sendCommand(name: string): Promise<unknown> {
    if (name === "WAITAOF") {
      this.waitAofs++;
      return Promise.resolve([1, 0]);
    }
    if (name === "CLIENT") return Promise.resolve("id=1 addr=127.0.0.1:1 laddr=127.0.0.1:2\n");
    if (name === "CONFIG") return Promise.resolve([]);
    return Promise.resolve(0);
  }
}

Deno.test("RedisStore: the hashes read as keeping no AOF are remembered up to 10,000", async () => {
  const fake = new NoAof();
  const store = new RedisStore(fake, { waitAof: true });
  const read = (key: string) => store.durability(key, { ...bestEffort, reuse: false });
  const reserve = (key: string) => store.reserve(key, "a", 1, plain({ generator }));
  for (let i = 0; i < 10_000; i++) assert.equal((await read(`h${i}`)).settings.appendonly, "no");
  await reserve("h0");
  assert.equal(fake.waitAofs, 0, "all 10,000 remembered");
  await read("h10000"); // the 10,001st: the memory starts over
  await reserve("h10000");
  assert.equal(fake.waitAofs, 0, "the last one read is remembered");
  await reserve("h0");
  assert.equal(fake.waitAofs, 1, "forgotten: confirmed with WAITAOF");
});
