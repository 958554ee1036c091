import "../../support/deadline.ts"; // a time limit on every test of this file
// The Redis store's durability read (src/stores/redis/durability_probe.ts): what it reads from
// a real redis-server and Kvrocks this test starts (INFO, PTTL and CONFIG GET as the servers
// answer them, with and without scripting), how each reply shape and refusal is read (scripted
// clients raising node-redis' reply class with the servers' words), what durabilityOf makes of
// each setting, and which reads are shared. The generator's side is in
// tests/stores/redis/redis_losses_test.ts and tests/engine/durability_shared_test.ts.
import assert from "node:assert/strict";
import { SimpleError } from "redis";
import { KvIdError } from "../../../src/contract/errors.ts";
import type { RedisClient } from "../../../src/contract/redis_client.ts";
import type { RedisDurabilityOptions } from "../../../src/stores/redis/store_options.ts";
import { waitForAof } from "../../../src/stores/redis/confirm.ts";
import {
  durabilityOf,
  forgetServerReads,
  info,
  infoFromFacts,
  type InfoRead,
  probeRedis,
  readConfigs,
  type ServerRead,
  sharedRead,
  shareRead,
} from "../../../src/stores/redis/durability_probe.ts";
import { openClient } from "../../support/redis_clients.ts";
import { command, kvrocksBinary, startServer } from "../../support/redis_server.ts";

const WAL = "rocksdb.write_options.disable_wal";

type Answer = (command: string, args: string[]) => unknown;

/**
 * A client whose commands `answer` answers (a thrown value is the client's rejection); `eval`
 * and `evalsha` go to `script`, absent: refused as by a server without scripting.
 */
function scripted(
  answer: Answer | undefined,
  script: (keys: string[]) => unknown = () => {
    throw new SimpleError("ERR unknown command 'EVAL', with args beginning with: ");
  },
): RedisClient & { sent: string[] } {
  const sent: string[] = [];
  const run = (f: () => unknown) => {
    try {
      return Promise.resolve(f());
    } catch (err) {
      return Promise.reject(err);
    }
  };
  const client: RedisClient & { sent: string[] } = {
    sent,
    hincrby: () => Promise.reject(new Error("not used")),
    eval: (_s, keys) => (sent.push("EVAL"), run(() => script(keys))),
    evalsha: (_s, keys) => (sent.push("EVALSHA"), run(() => script(keys))),
  };
  if (answer !== undefined) {
    client.sendCommand = (name: string, args: string[] = []) => {
      sent.push([name, ...args].join(" "));
      return run(() => answer(name, args));
    };
  }
  return client;
}

/** The error a promise rejects with. */
async function rejection(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (err) {
    return err;
  }
  assert.fail("did not reject");
}

/** An `InfoRead` of these `INFO` fields. */
function read(fields: Record<string, string>, ttl?: number, error?: string): InfoRead {
  const r: InfoRead = { info: new Map(Object.entries(fields)), ttl };
  if (error !== undefined) r.error = error;
  return r;
}

/** The durability options of a generator: these, and no stated settings unless given. */
function opts(o: Partial<RedisDurabilityOptions> = {}): RedisDurabilityOptions {
  return { field: "order", mode: "strict", judge: () => undefined, ...o } as RedisDurabilityOptions;
}

/** durabilityOf a Redis with these fields and CONFIG answers. */
function redis(
  fields: Record<string, string>,
  options: Partial<RedisDurabilityOptions> = {},
  configs: [string, string, string] = ["everysec", "3600 1", "unknown"],
  ttl: number | undefined = -2,
  error?: string,
) {
  return durabilityOf(
    [read({ redis_version: "7.2.4", role: "master", ...fields }, ttl, error), ...configs],
    "kvid",
    opts(options),
  );
}

const AOF = { aof_enabled: "1", maxmemory_policy: "noeviction", maxmemory: "0" };

Deno.test({
  name: "durability probe: a real redis-server, by script and without scripting",
  timeout: 60_000,
  fn: async () => {
    await using server = await startServer({ server: "redis-server" });
    await using c = await openClient("node-redis", server.url);
    forgetServerReads(c.redis);
    // Its INFO as the probe script reads it: the sections' fields, the TTL of a missing hash.
    const got = await info(c.redis, "kvid:probe");
    assert.equal(got.error, undefined);
    assert.equal(got.ttl, -2);
    assert.equal(got.info.get("redis_version"), server.version);
    assert.equal(got.info.get("aof_enabled"), "1");
    assert.equal(got.info.get("role"), "master");
    assert.equal(got.info.get("connected_slaves"), "0");
    assert.equal(got.info.get("maxmemory_policy"), "noeviction");
    assert.ok(got.info.has("redis_mode")); // a field after the first of its section
    assert.equal(got.info.has(""), false);
    assert.equal([...got.info.keys()].some((k) => k.startsWith("#")), false, "a section header");
    assert.equal(got.info.has(WAL), false); // not Kvrocks: not asked
    // Values are trimmed of the reply's \r.
    assert.equal([...got.info.values()].some((v) => /\s$/.test(v)), false);
    // The CONFIG GETs as the server answers them (an array of name, value).
    // (the harness starts it with no save schedule: an empty reply, said as "off" below)
    assert.deepEqual(await Promise.all(readConfigs(c.redis)), ["everysec", "", "unknown"]);

    const d = await probeRedis(c.redis, "kvid:probe", opts({}));
    assert.equal(d.durable, true, d.problems.join("; "));
    assert.deepEqual(d.problems, []);
    assert.equal(d.lossWithoutCrash, false);
    assert.equal(d.settings.server, `redis ${server.version}`);
    assert.equal(d.settings.appendonly, "yes");
    assert.equal(d.settings.appendfsync, "everysec");
    assert.equal(d.settings.save, "off");
    assert.equal(d.settings.maxmemory_policy, "noeviction");
    assert.equal(d.settings.connected_replicas, "0");
    assert.equal(d.settings.ttl_ms, "none");

    // A hash with a TTL, AOF off and no snapshots: read again (reuse false) and said.
    await command(server.url, "HSET", "kvid:probe", "order", "1");
    await command(server.url, "PEXPIRE", "kvid:probe", "600000");
    await command(server.url, "CONFIG", "SET", "appendonly", "no");
    await command(server.url, "CONFIG", "SET", "save", "900 1");
    await command(server.url, "CONFIG", "SET", "maxmemory-policy", "allkeys-lru");
    // Shared while nobody doubts it: the same answer, from the last read.
    assert.equal((await probeRedis(c.redis, "kvid:probe", opts({ reuse: true }))).durable, true);
    forgetServerReads(c.redis);
    const off = await probeRedis(c.redis, "kvid:probe", opts({ reuse: true }));
    assert.equal(off.durable, false);
    assert.equal(off.settings.appendonly, "no");
    assert.equal(off.settings.save, "900 1");
    assert.equal(off.settings.maxmemory_policy, "allkeys-lru");
    assert.equal(off.lossWithoutCrash, true);
    const ttl = Number(off.settings.ttl_ms);
    assert.ok(ttl > 0 && ttl <= 600_000, off.settings.ttl_ms);
    assert.equal(off.problems.length, 2, off.problems.join("; "));
    assert.match(off.problems[0], /^maxmemory-policy is allkeys-lru: .* the hash "kvid:probe"/);
    assert.match(off.problems[1], /^AOF is off \(appendonly no, snapshots only, save "900 1"\)/);

    // Redis 7.0 has no WAITAOF: a read of it says so for the client.
    if (/^7\.[01]\./.test(server.version)) {
      const counted = scripted(() => [1, 0]);
      const r = Promise.all(
        [
          Promise.resolve(got),
          Promise.resolve("everysec"),
          Promise.resolve("unknown"),
          Promise.resolve("unknown"),
        ] as const,
      );
      shareRead(counted, "k", r);
      await r;
      assert.equal(await waitForAof(counted, "k", "f", 100), false);
      assert.deepEqual(counted.sent, []);
    }
  },
});

Deno.test({
  name: "durability probe: without scripting, INFO and PTTL sent apart",
  timeout: 60_000,
  fn: async () => {
    await using server = await startServer({
      server: "redis-server",
      disable: ["EVAL", "EVALSHA"],
    });
    await using c = await openClient("node-redis", server.url);
    const got = await info(c.redis, "kvid:plain");
    assert.equal(got.error, undefined);
    assert.equal(got.ttl, -2);
    assert.equal(got.info.get("redis_version"), server.version);
    assert.equal(got.info.get("aof_enabled"), "1");
    assert.equal(got.info.has(WAL), false);
    // Without sendCommand there is nothing else to ask: unknown, why said.
    const { sendCommand: _, ...bare } = c.redis;
    const none = await info(bare as RedisClient, "kvid:plain");
    assert.equal(none.info.size, 0);
    assert.equal(none.ttl, undefined);
    assert.match(none.error ?? "", /unknown command/i);
  },
});

// The Kvrocks binary, when this checkout has one (beside it or on PATH; not in the copy
// `deno task mutate:all` runs in, where the scripted Kvrocks cases below stand for it).
const KVROCKS = await kvrocksBinary();

Deno.test({
  name: `durability probe: a real Kvrocks, its write-ahead log asked by script and apart${
    KVROCKS === undefined ? " (ignored: no kvrocks binary)" : ""
  }`,
  ignore: KVROCKS === undefined,
  timeout: 60_000,
  fn: async () => {
    for (const disable of [[], ["EVAL", "EVALSHA"]]) {
      await using server = await startServer({ server: "kvrocks", disable });
      await using c = await openClient("node-redis", server.url);
      const got = await info(c.redis, "kvid:probe");
      assert.equal(got.error, undefined, String(disable));
      assert.equal(got.info.get(WAL), "no", String(disable));
      assert.ok(got.info.has("kvrocks_version"));
      const d = await probeRedis(c.redis, "kvid:probe", opts({}));
      assert.equal(d.durable, true, d.problems.join("; "));
      assert.equal(d.settings.server, `kvrocks ${got.info.get("kvrocks_version")}`);
      assert.equal(d.settings[WAL], "no");
      assert.equal(d.settings.appendonly, undefined); // Redis' settings are not Kvrocks'
    }
  },
});

Deno.test("durability probe: INFO lines and facts are parsed as key:value", () => {
  const r = infoFromFacts(
    "# Server\r\nredis_version:7.2.4\r\n:nokey\r\nrun_id:a:b\r\n#comment:x\r\nplain\r\n",
    "1500",
  );
  assert.deepEqual([...r.info], [["redis_version", "7.2.4"], ["run_id", "a:b"]]);
  assert.equal(r.ttl, 1500);
  const bytes = infoFromFacts(
    new TextEncoder().encode("aof_enabled:1\n"),
    new TextEncoder().encode("-1"),
  );
  assert.equal(bytes.info.get("aof_enabled"), "1");
  assert.equal(bytes.ttl, -1);
});

Deno.test("durability probe: the probe script's reply, whatever its shape", async () => {
  const six = [
    "redis_version:7.2.4",
    "aof_enabled:1",
    "maxmemory_policy:noeviction",
    5000,
    "role:master",
    "",
  ];
  const ok = await info(scripted(undefined, () => six), "k");
  assert.equal(ok.error, undefined);
  assert.equal(ok.ttl, 5000);
  assert.deepEqual([...ok.info.keys()], [
    "redis_version",
    "aof_enabled",
    "maxmemory_policy",
    "role",
  ]);
  for (const bad of ["text", six.slice(0, 5), [...six, "x"]]) {
    const r = await info(scripted(undefined, () => bad), "k");
    assert.equal(r.error, "unexpected probe reply", JSON.stringify(bad));
    assert.equal(r.info.size, 0);
    assert.equal(r.ttl, undefined);
  }
});

Deno.test("durability probe: a refused script falls back to commands only when scripts are refused", async () => {
  const facts = "redis_version:7.2.4\r\naof_enabled:1\r\n";
  const answer: Answer = (name) => name === "INFO" ? facts : name === "PTTL" ? 42 : "x";
  // EVALSHA refused by the user's ACL: INFO and PTTL apart.
  const acl = scripted(answer, () => {
    throw new SimpleError("NOPERM User kvid has no permissions to run the 'evalsha' command");
  });
  const a = await info(acl, "k");
  assert.equal(a.error, undefined);
  assert.equal(a.info.get("aof_enabled"), "1");
  assert.equal(a.ttl, 42);
  assert.deepEqual(acl.sent, ["EVAL", "INFO", "PTTL k"]);
  // Another refusal (a key the ACL forbids): the script's words, no fallback.
  const keys = scripted(answer, () => {
    throw new SimpleError("NOPERM No permissions to access a key");
  });
  const k = await info(keys, "k");
  assert.match(k.error ?? "", /^the user may not run what kvid needs: NOPERM No permissions/);
  assert.equal(k.info.size, 0);
  assert.deepEqual(keys.sent, ["EVAL"]);
  // The fallback's own refusal: unknown, said.
  const noInfo = scripted(() => {
    throw new SimpleError("ERR unknown command 'INFO', with args beginning with: ");
  });
  const n = await info(noInfo, "k");
  assert.match(n.error ?? "", /does not know a command kvid needs.*'INFO'/);
  assert.equal(n.ttl, undefined);
});

Deno.test("durability probe: a lost connection, a transient state, refused credentials throw", async () => {
  const lost = new Error("Socket closed unexpectedly");
  assert.equal(
    await rejection(info(
      scripted(undefined, () => {
        throw lost;
      }),
      "k",
    )),
    lost,
  );
  const loading = new SimpleError("LOADING Redis is loading the dataset in memory");
  assert.equal(
    await rejection(info(
      scripted(undefined, () => {
        throw loading;
      }),
      "k",
    )),
    loading,
  );
  const noauth = new SimpleError("NOAUTH Authentication required.");
  const e = await rejection(info(
    scripted(undefined, () => {
      throw noauth;
    }),
    "k",
  ));
  assert.ok(e instanceof KvIdError && e.code === "config" && e.reason === "auth", String(e));
  const wrongpass = new SimpleError(
    "WRONGPASS invalid username-password pair or user is disabled.",
  );
  const w = await rejection(info(
    scripted(undefined, () => {
      throw wrongpass;
    }),
    "k",
  ));
  assert.ok(w instanceof KvIdError && w.code === "config", String(w));
  // Without scripting, the same from INFO.
  const plain = scripted(() => {
    throw loading;
  });
  assert.equal(await rejection(info(plain, "k")), loading);
  // A refusal of CONFIG that is only "auth" in its words is not refused credentials.
  const authWords = scripted(() => {
    throw new SimpleError("ERR AUTH not allowed here");
  });
  assert.equal(await readConfigs(authWords)[0], "unknown");
});

Deno.test("durability probe: CONFIG GET replies in each shape, and refusals", async () => {
  const shapes: [string, unknown][] = [
    ["array", ["appendfsync", "always"]],
    ["array, upper-case name", ["APPENDFSYNC", "always"]],
    ["array, bytes", [new TextEncoder().encode("appendfsync"), new TextEncoder().encode("always")]],
    ["array, other names first", ["appendonly", "yes", "appendfsync", "always"]],
    ["map", new Map([["appendfsync", "always"]])],
    ["object", { appendfsync: "always" }],
    ["object, bytes", { appendfsync: new TextEncoder().encode("always") }],
  ];
  for (const [what, reply] of shapes) {
    const c = scripted((_name, args) => args[1] === "appendfsync" ? reply : []);
    assert.equal(await readConfigs(c)[0], "always", what);
  }
  for (
    const [what, reply] of [
      ["empty array", []],
      ["a name alone", ["appendfsync"]],
      ["another name", ["save", "always"]],
      ["map without it", new Map([["save", "x"]])],
      ["object without it", { save: "x" }],
      ["null", null],
      ["text", "always"],
    ] as [string, unknown][]
  ) {
    const c = scripted(() => reply);
    assert.equal(await readConfigs(c)[0], "unknown", what);
  }
  // The three names asked, in order.
  const c = scripted(() => []);
  await Promise.all(readConfigs(c));
  assert.deepEqual(c.sent, [
    "CONFIG GET appendfsync",
    "CONFIG GET save",
    "CONFIG GET rocksdb.write_options.sync",
  ]);
  // No sendCommand: nothing asked.
  assert.deepEqual(await Promise.all(readConfigs(scripted(undefined))), [
    "unknown",
    "unknown",
    "unknown",
  ]);
  // CONFIG renamed away or forbidden: unknown; a lost connection or a transient state throws.
  const renamed = scripted(() => {
    throw new SimpleError("ERR unknown command 'CONFIG'");
  });
  assert.equal(await readConfigs(renamed)[1], "unknown");
  for (
    const err of [
      new Error("Socket closed unexpectedly"),
      new SimpleError("BUSY Redis is busy running a script."),
    ]
  ) {
    const all = await Promise.allSettled(readConfigs(scripted(() => {
      throw err;
    })));
    for (const r of all) assert.deepEqual(r, { status: "rejected", reason: err });
  }
});

Deno.test("durability probe: Kvrocks without scripting asks its write-ahead log apart", async () => {
  const facts = "kvrocks_version:2.9.0\r\nrole:master\r\nconnected_slaves:0\r\n";
  const on = scripted((name, args) =>
    name === "INFO" ? facts : name === "PTTL" ? -2 : args[1] === WAL ? [WAL, "no"] : []
  );
  const r = await info(on, "k");
  assert.equal(r.info.get(WAL), "no");
  assert.ok(on.sent.includes(`CONFIG GET ${WAL}`));
  const refused = scripted((name) => {
    if (name === "INFO") return facts;
    if (name === "PTTL") return -2;
    throw new SimpleError("ERR unknown command 'CONFIG'");
  });
  const u = await info(refused, "k");
  assert.equal(u.info.has(WAL), false);
  assert.equal(u.info.get("kvrocks_version"), "2.9.0");
});

Deno.test("durability probe: Redis settings, each said or refused", () => {
  const ok = redis(AOF);
  assert.equal(ok.durable, true);
  assert.deepEqual(ok.problems, []);
  assert.equal(ok.lossWithoutCrash, false);
  assert.equal(ok.settings.server, "redis 7.2.4");
  assert.equal(ok.settings.appendonly, "yes");
  assert.equal(ok.settings.appendfsync, "everysec");
  assert.equal(ok.settings.save, "3600 1");
  assert.equal(ok.settings.maxmemory, "0");
  assert.equal(ok.settings.stated, undefined);
  assert.equal(ok.settings.ttl_ms, "none");

  // AOF off: snapshots said as they are, unless replicas confirm each reservation.
  const snap = redis({ ...AOF, aof_enabled: "0" });
  assert.equal(snap.durable, false);
  assert.equal(snap.settings.appendonly, "no");
  assert.match(snap.problems[0], /^AOF is off \(appendonly no, snapshots only, save "3600 1"\)/);
  assert.equal(snap.lossWithoutCrash, false);
  const none = redis({ ...AOF, aof_enabled: "0" }, {}, ["everysec", "", "unknown"]);
  assert.equal(none.settings.save, "off");
  assert.match(none.problems[0], /^AOF is off \(appendonly no, no snapshots either\)/);
  const unknownSave = redis({ ...AOF, aof_enabled: "0" }, {}, ["everysec", "unknown", "unknown"]);
  assert.equal(unknownSave.settings.save, "unknown");
  assert.match(unknownSave.problems[0], /^AOF is off \(appendonly no, snapshots unknown\)/);
  assert.deepEqual(redis({ ...AOF, aof_enabled: "0" }, { replicas: 1 }).problems, []);

  // INFO without aof_enabled: unknown, and why.
  const { aof_enabled: _, ...noAof } = AOF;
  const unknown = redis(noAof);
  assert.equal(unknown.durable, false);
  assert.equal(unknown.settings.appendonly, "unknown");
  assert.match(
    unknown.problems[0],
    /will not say whether it keeps an AOF \(INFO persistence has no aof_enabled\)/,
  );
  const why = redis(noAof, {}, ["everysec", "x", "unknown"], -2, "unexpected probe reply");
  assert.match(why.problems[0], /will not say whether it keeps an AOF \(unexpected probe reply\)/);
  assert.deepEqual(redis(noAof, { replicas: 2 }).problems, []);
  // Stated by the user: taken, and said to be stated.
  const stated = redis(noAof, { stated: { appendonly: "yes" } });
  assert.equal(stated.durable, true);
  assert.equal(stated.settings.appendonly, "yes");
  assert.equal(stated.settings.stated, "appendonly");
  // A stated value never overrides what the server says.
  const told = redis({ ...AOF, aof_enabled: "0" }, { stated: { appendonly: "yes" } });
  assert.equal(told.settings.appendonly, "no");
  assert.equal(told.settings.stated, undefined);
  // Stated settings listed in order.
  const both = redis(noAof, { stated: { appendonly: "yes", appendfsync: "always" } }, [
    "unknown",
    "x",
    "unknown",
  ]);
  assert.equal(both.settings.stated, "appendonly,appendfsync");
  assert.equal(both.settings.appendfsync, "always");

  // appendfsync refused: the default assumed, and said; only with AOF on.
  const assumed = redis(AOF, {}, ["unknown", "x", "unknown"]);
  assert.equal(assumed.settings.appendfsync, "everysec (assumed: CONFIG GET refused)");
  assert.equal(assumed.durable, true);
  const offUnknown = redis({ ...AOF, aof_enabled: "0" }, {}, ["unknown", "x", "unknown"]);
  assert.equal(offUnknown.settings.appendfsync, "unknown");

  // An evicting policy: lost without a crash; another policy is not.
  const lru = redis({ ...AOF, maxmemory_policy: "allkeys-lru" });
  assert.equal(lru.durable, false);
  assert.equal(lru.lossWithoutCrash, true);
  assert.match(lru.problems[0], /^maxmemory-policy is allkeys-lru: .*the hash "kvid"/);
  const volatile = redis({ ...AOF, maxmemory_policy: "volatile-lru" });
  assert.equal(volatile.durable, true);
  assert.equal(volatile.lossWithoutCrash, false);
  assert.equal(redis(noAof, { replicas: 1 }).settings.maxmemory_policy, "noeviction");
  const { maxmemory_policy: _p, ...noPolicy } = AOF;
  assert.equal(redis(noPolicy).settings.maxmemory_policy, "unknown");
  assert.equal(redis(noPolicy).durable, true);
});

Deno.test("durability probe: the server named, Valkey and unknown", () => {
  assert.equal(redis({ ...AOF, valkey_version: "8.0.1" }).settings.server, "valkey 8.0.1");
  const none = durabilityOf([read(AOF), "everysec", "x", "unknown"], "kvid", opts());
  assert.equal(none.settings.server, "unknown");
});

Deno.test("durability probe: replicas listed by a primary, and those confirmed", () => {
  const one = redis({ ...AOF, connected_slaves: "1" });
  assert.equal(one.settings.connected_replicas, "1");
  assert.equal(one.durable, false);
  assert.match(
    one.problems[0],
    /^the primary has 1 replica and replicas: 0 confirms each reservation on none: /,
  );
  assert.match(one.problems[0], /set replicas: 1 /);
  const two = redis({ ...AOF, connected_slaves: "2" }, { replicas: 1 });
  assert.match(
    two.problems[0],
    /^the primary has 2 replicas and replicas: 1 confirms each reservation on 1 of them: /,
  );
  // All confirmed: durable; as many as listed, too.
  assert.equal(redis({ ...AOF, connected_slaves: "2" }, { replicas: 2 }).durable, true);
  assert.equal(redis({ ...AOF, connected_slaves: "0" }).durable, true);
  assert.equal(redis({ ...AOF, connected_slaves: "0" }).settings.connected_replicas, "0");
  // A replica (or a field missing) lists none.
  const replica = redis({ ...AOF, role: "slave", connected_slaves: "2" });
  assert.equal(replica.settings.connected_replicas, undefined);
  assert.equal(replica.durable, true);
  assert.equal(redis(AOF).settings.connected_replicas, undefined);
  assert.equal(redis({ ...AOF, connected_slaves: "x" }).settings.connected_replicas, undefined);
});

Deno.test("durability probe: the hash's TTL", () => {
  assert.equal(redis(AOF, {}, undefined, 1500).settings.ttl_ms, "1500");
  assert.equal(redis(AOF, {}, undefined, 1).settings.ttl_ms, "1");
  assert.equal(redis(AOF, {}, undefined, 0).settings.ttl_ms, "none");
  assert.equal(redis(AOF, {}, undefined, -1).settings.ttl_ms, "none");
  const unread = durabilityOf([read(AOF), "everysec", "x", "unknown"], "kvid", opts());
  assert.equal(unread.settings.ttl_ms, "unknown");
  assert.equal(redis(AOF, {}, undefined, NaN).settings.ttl_ms, "unknown");
});

Deno.test("durability probe: Kvrocks' write-ahead log, said, off, or refused", () => {
  const kv = (wal: string | undefined, options: Partial<RedisDurabilityOptions> = {}) => {
    const fields: Record<string, string> = { kvrocks_version: "2.9.0", role: "master" };
    if (wal !== undefined) fields[WAL] = wal;
    return durabilityOf([read(fields, -2), "unknown", "unknown", "yes"], "kvid", opts(options));
  };
  const on = kv("no");
  assert.equal(on.durable, true);
  assert.equal(on.settings.server, "kvrocks 2.9.0");
  assert.equal(on.settings[WAL], "no");
  assert.equal(on.settings["rocksdb.write_options.sync"], "yes");
  assert.equal(on.settings.appendonly, undefined);
  const off = kv("yes");
  assert.equal(off.durable, false);
  assert.equal(off.lossWithoutCrash, false);
  assert.match(
    off.problems[0],
    /^the write-ahead log is off \(rocksdb\.write_options\.disable_wal yes\)/,
  );
  const refused = kv(undefined);
  assert.equal(refused.durable, false);
  assert.equal(refused.settings[WAL], "unknown");
  assert.match(refused.problems[0], /^the server will not say whether its write-ahead log is on/);
  const stated = kv(undefined, { stated: { [WAL]: "no" } });
  assert.equal(stated.durable, true);
  assert.equal(stated.settings.stated, WAL);
});

/** A ServerRead settled (or not) by hand. */
function pending() {
  let resolve!: (v: Awaited<ServerRead>) => void;
  let reject!: (e: unknown) => void;
  const read: ServerRead = new Promise((a, b) => {
    resolve = a;
    reject = b;
  });
  return { read, resolve, reject };
}

const VALUE: Awaited<ServerRead> = [read({ redis_version: "7.2.4" }), "x", "x", "x"];

Deno.test("durability probe: reads shared while nobody doubts them", async () => {
  const client = scripted(() => []);
  assert.equal(sharedRead(client, "k", true), undefined);
  const p = pending();
  shareRead(client, "k", p.read);
  // In flight: shared for a re-read too; another hash or client is not.
  assert.equal(sharedRead(client, "k", true), p.read);
  assert.equal(sharedRead(client, "k", false), p.read);
  assert.equal(sharedRead(client, "other", true), undefined);
  assert.equal(sharedRead(scripted(() => []), "k", true), undefined);
  p.resolve(VALUE);
  await p.read;
  // Done: shared for reuse, not for a re-read.
  assert.equal(sharedRead(client, "k", true), p.read);
  assert.equal(sharedRead(client, "k", false), undefined);
  // A second hash of the same client kept beside the first.
  const q = pending();
  shareRead(client, "k2", q.read);
  assert.equal(sharedRead(client, "k", true), p.read);
  assert.equal(sharedRead(client, "k2", true), q.read);
  q.resolve(VALUE);
  await q.read;
  forgetServerReads(client);
  assert.equal(sharedRead(client, "k", true), undefined);
  assert.equal(sharedRead(client, "k2", true), undefined);
});

Deno.test("durability probe: a failed read is never shared, a newer one kept", async () => {
  const client = scripted(() => []);
  const failed = pending();
  shareRead(client, "k", failed.read);
  failed.reject(new Error("lost"));
  await failed.read.catch(() => {});
  await Promise.resolve();
  assert.equal(sharedRead(client, "k", true), undefined);
  // A read that fails after a newer one replaced it leaves the newer one shared.
  const old = pending();
  shareRead(client, "k", old.read);
  const newer = pending();
  shareRead(client, "k", newer.read);
  old.reject(new Error("lost"));
  await old.read.catch(() => {});
  await Promise.resolve();
  assert.equal(sharedRead(client, "k", true), newer.read);
  newer.resolve(VALUE);
  await newer.read;
});

Deno.test("durability probe: a read saying a server lacks WAITAOF tells the confirmation", async () => {
  const cases: [Record<string, string>, boolean][] = [
    [{ redis_version: "7.0.15" }, true],
    [{ redis_version: "6.2.14" }, true],
    [{ redis_version: "7.1.0" }, true],
    [{ redis_version: "7.2.0" }, false],
    [{ redis_version: "8.0.2" }, false],
    [{ redis_version: "10.0.0" }, false],
    [{ redis_version: "6.9.0" }, true],
    [{ valkey_version: "7.2.5", redis_version: "7.2.4" }, false],
    [{ valkey_version: "8.0.1", redis_version: "7.0.0" }, false],
    [{ kvrocks_version: "2.9.0", redis_version: "7.2.0" }, true],
    [{}, false],
    [{ redis_version: "unknown" }, false],
  ];
  for (const [fields, lacks] of cases) {
    const client = scripted((name) => name === "WAITAOF" ? [1, 0] : []);
    const value: Awaited<ServerRead> = [read(fields), "x", "x", "x"];
    const r = Promise.resolve(value);
    shareRead(client, "k", r);
    await r;
    await Promise.resolve();
    await waitForAof(client, "k", "f", 100);
    assert.deepEqual(client.sent.length === 0, lacks, JSON.stringify(fields));
  }
});
