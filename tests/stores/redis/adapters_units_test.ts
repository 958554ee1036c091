/**
 * The client adapters, on stand-in clients that record what they are sent: how each command is
 * spelled for node-redis, ioredis and Bun, where `WAIT`, `WAITAOF` and `CLIENT INFO` go (the
 * connection of the counter's key on a cluster), the exact-integer reply mapping, how errors are
 * passed on, and Bun's reconnect. The same adapters on real servers: redis_exact_replies_test,
 * redis_replicas_test, redis_cluster_test, listener_test.
 */

import "../../support/deadline.ts"; // a time limit on every test of this file
import assert from "node:assert/strict";
import {
  type BunRedisLike,
  fromBunRedis,
  fromIoredis,
  fromNodeRedis,
  type IoredisLike,
  type NodeRedisLike,
} from "../../../mod.ts";

type Sent = unknown[][];

/** A node-redis stand-in whose every call is recorded in `sent` as `[name, ...args]`. */
function nodeRedis(sent: Sent, extra: Record<string, unknown> = {}): NodeRedisLike {
  const record = (name: string) => (...args: unknown[]) => {
    sent.push([name, ...args]);
    return Promise.resolve("OK");
  };
  return {
    hIncrBy: record("hIncrBy"),
    eval: record("eval"),
    evalSha: record("evalSha"),
    close: record("close"),
    ...extra,
  };
}

Deno.test("fromNodeRedis: refuses what is not a client, naming the missing method", () => {
  for (const missing of ["hIncrBy", "eval", "evalSha"]) {
    const client = { ...nodeRedis([]), [missing]: undefined };
    assert.throws(
      () => fromNodeRedis(client as never),
      (e: unknown) =>
        e instanceof TypeError &&
        e.message === `fromNodeRedis(client): the client has no ${missing}() method`,
    );
  }
  assert.throws(() => fromNodeRedis(null as never), /the client has no hIncrBy\(\) method/);
});

Deno.test("fromNodeRedis: commands spelled for node-redis, integers read as exact strings", async () => {
  const original: Sent = [];
  const mapped: Sent = [];
  const mappings: unknown[] = [];
  const client = nodeRedis(original, {
    withTypeMapping(mapping: unknown) {
      mappings.push(mapping);
      return nodeRedis(mapped, { sendCommand: (argv: unknown) => mapped.push(["send", argv]) });
    },
  });
  const redis = fromNodeRedis(client);
  assert.deepEqual(mappings, [{ 58: String }], "integer replies (RESP ':') as strings");
  await redis.hincrby("kvid", "order", 10);
  await redis.eval("return 1", ["kvid"], ["order", 5 as never]);
  await redis.evalsha("f00d", ["kvid"], ["order", "10"]);
  await redis.sendCommand!("HGET", ["kvid", "order"]);
  await redis.waitReplicas!("kvid", 2, 100);
  await redis.waitAof!("kvid", 1, 0, 100);
  await redis.clientInfo!("kvid");
  assert.deepEqual(mapped, [
    ["hIncrBy", "kvid", "order", 10],
    ["eval", "return 1", { keys: ["kvid"], arguments: ["order", "5"] }],
    ["evalSha", "f00d", { keys: ["kvid"], arguments: ["order", "10"] }],
    ["send", ["HGET", "kvid", "order"]],
    ["send", ["WAIT", "2", "100"]],
    ["send", ["WAITAOF", "1", "0", "100"]],
    ["send", ["CLIENT", "INFO"]],
  ]);
  // close() is the caller's client's own, not the mapped proxy's.
  await redis.close!();
  assert.deepEqual(original, [["close"]]);
  assert.equal(mapped.length, 7);
});

Deno.test("fromNodeRedis: a client without a type mapping is used as it is", async () => {
  const sent: Sent = [];
  const redis = fromNodeRedis(nodeRedis(sent));
  assert.equal(await redis.hincrby("kvid", "order", 1), "OK");
  assert.deepEqual(sent, [["hIncrBy", "kvid", "order", 1]]);
  // No sendCommand: the commands that need it reject, naming why; nothing is sent.
  for (const call of [() => redis.waitReplicas!("kvid", 1, 10), () => redis.clientInfo!("kvid")]) {
    await assert.rejects(
      call(),
      (e: unknown) =>
        e instanceof TypeError && e.message === "this node-redis client has no sendCommand",
    );
  }
  assert.equal(sent.length, 1);
});

Deno.test("fromNodeRedis: a cluster routes by the counter's key, a sentinel client as it asks", async () => {
  const sent: Sent = [];
  // A cluster's sendCommand(firstKey, isReadonly, args).
  const cluster = fromNodeRedis(nodeRedis([], {
    sendCommand(firstKey: unknown, isReadonly: unknown, args: unknown) {
      sent.push(["cluster", firstKey, isReadonly, args]);
      return Promise.resolve(1);
    },
  }));
  await cluster.waitReplicas!("kvid", 1, 50);
  await cluster.waitAof!("kvid", 1, 0, 50);
  await cluster.clientInfo!("kvid");
  await cluster.sendCommand!("HGET", ["other", "order"]);
  // A sentinel client's sendCommand(isReadonly, args), told apart by getSentinelNode.
  const sentinel = fromNodeRedis(nodeRedis([], {
    getSentinelNode: () => undefined,
    sendCommand(isReadonly: unknown, args: unknown, more?: unknown) {
      sent.push(["sentinel", isReadonly, args, more]);
      return Promise.resolve(1);
    },
  }));
  await sentinel.waitReplicas!("kvid", 1, 50);
  assert.deepEqual(sent, [
    ["cluster", "kvid", false, ["WAIT", "1", "50"]],
    ["cluster", "kvid", false, ["WAITAOF", "1", "0", "50"]],
    ["cluster", "kvid", false, ["CLIENT", "INFO"]],
    ["cluster", "other", false, ["HGET", "other", "order"]],
    ["sentinel", false, ["WAIT", "1", "50"], undefined],
  ]);
});

/** An emitter-shaped node-redis stand-in whose hIncrBy fails with what `fail` holds. */
function emitting(listeners: number) {
  const heard: ((err: unknown) => void)[] = [];
  let fail: unknown;
  const client = {
    ...nodeRedis([]),
    hIncrBy: () => fail === undefined ? Promise.resolve(1) : Promise.reject(fail),
    on(event: string, listener: (err: unknown) => void) {
      if (event === "error") heard.push(listener);
      return client;
    },
    listenerCount: (event: string) => event === "error" ? listeners + heard.length : 0,
  };
  return {
    client,
    heard,
    emit: (err: unknown) => heard.forEach((l) => l(err)),
    failWith: (err: unknown) => fail = err,
  };
}

class ReplyError extends Error {}

Deno.test("fromNodeRedis: with no error listener, it listens and says what the client reported", async () => {
  const c = emitting(0);
  const redis = fromNodeRedis(c.client);
  assert.equal(c.heard.length, 1, "the adapter listens: an unheard error kills node-redis");
  const lost = new Error("The client is closed");
  c.emit(new Error("connect ECONNREFUSED 127.0.0.1:6379"));
  c.failWith(lost);
  await assert.rejects(
    redis.hincrby("kvid", "order", 1),
    (e: unknown) =>
      e instanceof Error && e.cause === lost &&
      e.message ===
        "The client is closed (the client reported: connect ECONNREFUSED 127.0.0.1:6379)",
  );
  // The same error emitted and rejected: said once, as it is.
  c.emit(lost);
  await assert.rejects(redis.hincrby("kvid", "order", 1), (e: unknown) => e === lost);
  // A server's reply is kept as it is (its class tells a refusal from a lost connection).
  const refused = new ReplyError("WRONGTYPE Operation against a key");
  c.failWith(refused);
  await assert.rejects(redis.hincrby("kvid", "order", 1), (e: unknown) => e === refused);
  // A success forgets what was reported: a later failure is passed on as it is.
  c.failWith(undefined);
  assert.equal(await redis.hincrby("kvid", "order", 1), 1);
  c.failWith(lost);
  await assert.rejects(redis.hincrby("kvid", "order", 1), (e: unknown) => e === lost);
});

Deno.test("fromNodeRedis: a client with its own error listener is left alone", async () => {
  const c = emitting(1);
  const redis = fromNodeRedis(c.client);
  assert.equal(c.heard.length, 0, "no listener added");
  const lost = new Error("The client is closed");
  c.failWith(lost);
  await assert.rejects(redis.hincrby("kvid", "order", 1), (e: unknown) => e === lost);
});

/** An ioredis stand-in recording `[name, ...args]`; `pipeline` when `cluster` is given. */
function ioredis(sent: Sent, cluster?: { replies: unknown }): IoredisLike {
  const record = (name: string) => (...args: unknown[]) => {
    sent.push([name, ...args]);
    return Promise.resolve("OK");
  };
  const client: IoredisLike = {
    hincrby: record("hincrby"),
    eval: record("eval"),
    evalsha: record("evalsha"),
    call: record("call"),
    quit: record("quit"),
  };
  if (cluster !== undefined) {
    client.isCluster = true;
    client.pipeline = (commands) => {
      sent.push(["pipeline", commands]);
      return { exec: () => Promise.resolve(cluster.replies) };
    };
  }
  return client;
}

Deno.test("fromIoredis: commands spelled for ioredis; refuses what is not a client", async () => {
  for (const missing of ["hincrby", "eval", "evalsha", "call"]) {
    assert.throws(
      () => fromIoredis({ ...ioredis([]), [missing]: undefined } as never),
      (e: unknown) =>
        e instanceof TypeError &&
        e.message === `fromIoredis(client): the client has no ${missing}() method`,
    );
  }
  const sent: Sent = [];
  const redis = fromIoredis(ioredis(sent));
  await redis.hincrby("kvid", "order", 10);
  await redis.eval("return 1", ["kvid"], ["order", 5 as never]);
  await redis.evalsha("f00d", ["kvid", "k2"], ["order"]);
  await redis.sendCommand!("HGET", ["kvid", "order"]);
  await redis.waitReplicas!("kvid", 2, 100);
  await redis.waitAof!("kvid", 1, 0, 100);
  await redis.clientInfo!("kvid");
  await redis.close!();
  assert.deepEqual(sent, [
    ["hincrby", "kvid", "order", 10],
    ["eval", "return 1", 1, "kvid", "order", "5"],
    ["evalsha", "f00d", 2, "kvid", "k2", "order"],
    ["call", "HGET", "kvid", "order"],
    ["call", "wait", "2", "100"],
    ["call", "waitaof", "1", "0", "100"],
    ["call", "client", "info"],
    ["quit"],
  ]);
});

Deno.test("fromIoredis: on a Cluster, WAIT goes in a pipeline with the counter's key", async () => {
  const sent: Sent = [];
  const replies = { replies: [[null, 0], [null, 1]] as unknown };
  const redis = fromIoredis(ioredis(sent, replies));
  assert.equal(await redis.waitReplicas!("kvid", 1, 50), 1, "the second reply: WAIT's");
  assert.equal(await redis.waitAof!("kvid", 1, 0, 50), 1);
  assert.equal(await redis.clientInfo!("kvid"), 1);
  assert.deepEqual(sent, [
    ["pipeline", [["exists", "kvid"], ["call", "wait", "1", "50"]]],
    ["pipeline", [["exists", "kvid"], ["call", "waitaof", "1", "0", "50"]]],
    ["pipeline", [["exists", "kvid"], ["call", "client", "info"]]],
  ]);
  // WAIT's own error is thrown; a pipeline with no replies is an error naming the command.
  const noReplicas = new Error("NOREPLICAS Not enough good replicas");
  replies.replies = [[null, 0], [noReplicas, undefined]];
  await assert.rejects(redis.waitReplicas!("kvid", 1, 50), (e: unknown) => e === noReplicas);
  replies.replies = null;
  await assert.rejects(redis.waitReplicas!("kvid", 1, 50), /^Error: wait got no reply$/);
  // A Cluster without pipeline(): refused, not sent to a random node.
  const bare = ioredis(sent);
  bare.isCluster = true;
  await assert.rejects(
    fromIoredis(bare).waitReplicas!("kvid", 1, 50),
    (e: unknown) =>
      e instanceof TypeError &&
      e.message === "fromIoredis(client): this Cluster has no pipeline() method",
  );
  assert.equal(sent.length, 5, "nothing sent without a pipeline");
});

/** A Bun stand-in: `send` answers from `answer`; `connect` counted. */
function bun(answer: (command: string, args: string[]) => Promise<unknown>) {
  const calls = { connect: 0, close: 0 };
  let connected: () => void = () => {};
  const client: BunRedisLike = {
    send: answer,
    connect: () => {
      calls.connect++;
      return new Promise<void>((resolve) => connected = resolve);
    },
    close: () => void calls.close++,
  };
  return { client, calls, connected: () => connected() };
}

Deno.test("fromBunRedis: commands spelled for Bun; refuses what is not a client", async () => {
  assert.throws(
    () => fromBunRedis({} as never),
    (e: unknown) =>
      e instanceof TypeError &&
      e.message === "fromBunRedis(client): the client has no send() method",
  );
  const sent: Sent = [];
  const b = bun((command, args) => Promise.resolve(sent.push([command, args])));
  const redis = fromBunRedis(b.client);
  await redis.hincrby("kvid", "order", 10);
  await redis.eval("return 1", ["kvid"], ["order", 5 as never]);
  await redis.evalsha("f00d", ["kvid"], ["order"]);
  await redis.sendCommand!("WAIT", ["1", 100 as never]);
  await redis.sendCommand!("PING");
  await redis.clientInfo!("kvid");
  assert.deepEqual(sent, [
    ["HINCRBY", ["kvid", "order", "10"]],
    ["EVAL", ["return 1", "1", "kvid", "order", "5"]],
    ["EVALSHA", ["f00d", "1", "kvid", "order"]],
    ["WAIT", ["1", "100"]],
    ["PING", []],
    ["CLIENT", ["INFO"]],
  ]);
  await redis.close!();
  assert.equal(b.calls.close, 1);
});

/** Bun's error: a plain Error with a code. */
function bunError(message: string, code: string): Error {
  return Object.assign(new Error(message), { code });
}

Deno.test("fromBunRedis: a server's error is a reply error; other errors pass as they are", async () => {
  let fail = bunError("WRONGTYPE Operation against a key", "ERR_REDIS_SERVER_ERROR");
  const b = bun(() => Promise.reject(fail));
  const redis = fromBunRedis(b.client);
  const refused = await redis.hincrby("kvid", "order", 1).then(() => undefined, (e) => e);
  assert.ok(refused instanceof Error);
  assert.equal(refused.name, "BunRedisReplyError", "a name with Reply in it: a refusal");
  assert.equal(refused.message, "WRONGTYPE Operation against a key");
  assert.equal(refused.cause, fail);
  // A server error without Bun's code is not mistaken for a reply.
  fail = bunError("WRONGTYPE Operation against a key", "ERR_SOMETHING_ELSE");
  await assert.rejects(redis.hincrby("kvid", "order", 1), (e: unknown) => e === fail);
  assert.equal(b.calls.connect, 0);
});

Deno.test("fromBunRedis: a client whose reconnects ran out is connected again, once at a time", async () => {
  let fail = bunError("Connection has failed", "ERR_REDIS_CONNECTION_CLOSED");
  const b = bun(() => Promise.reject(fail));
  const redis = fromBunRedis(b.client);
  // Two commands fail at once: each error as it is, one connect() between them.
  const [one, two] = await Promise.allSettled([
    redis.hincrby("kvid", "order", 1),
    redis.hincrby("kvid", "order", 1),
  ]);
  assert.deepEqual([one, two].map((r) => r.status === "rejected" && r.reason === fail), [
    true,
    true,
  ]);
  await Promise.resolve(); // connect() is called from a microtask
  assert.equal(b.calls.connect, 1);
  await assert.rejects(redis.hincrby("kvid", "order", 1), (e: unknown) => e === fail);
  await Promise.resolve();
  assert.equal(b.calls.connect, 1, "not again while the first connect() is pending");
  // Once it settled, a later failure connects again.
  b.connected();
  for (let i = 0; i < 5; i++) await Promise.resolve();
  fail = bunError("Max reconnection attempts reached", "ERR_REDIS_CONNECTION_CLOSED");
  await assert.rejects(redis.hincrby("kvid", "order", 1), (e: unknown) => e === fail);
  await Promise.resolve();
  assert.equal(b.calls.connect, 2);
  b.connected();
  for (let i = 0; i < 5; i++) await Promise.resolve();
  // Another closed-connection error (a reconnect still under way): no connect().
  fail = bunError("Connection closed", "ERR_REDIS_CONNECTION_CLOSED");
  await assert.rejects(redis.hincrby("kvid", "order", 1), (e: unknown) => e === fail);
  // The failed-state message with another code: no connect() either.
  fail = bunError("Connection has failed", "ERR_REDIS_OTHER");
  await assert.rejects(redis.hincrby("kvid", "order", 1), (e: unknown) => e === fail);
  await Promise.resolve();
  assert.equal(b.calls.connect, 2);
  // Closed on purpose: left closed.
  await redis.close!();
  fail = bunError("Connection has failed", "ERR_REDIS_CONNECTION_CLOSED");
  await assert.rejects(redis.hincrby("kvid", "order", 1), (e: unknown) => e === fail);
  await Promise.resolve();
  assert.equal(b.calls.connect, 2, "a client closed on purpose is not reconnected");
});

Deno.test("fromBunRedis: a client without connect() passes the error on", async () => {
  const fail = bunError("Connection has failed", "ERR_REDIS_CONNECTION_CLOSED");
  const redis = fromBunRedis({ send: () => Promise.reject(fail) });
  await assert.rejects(redis.hincrby("kvid", "order", 1), (e: unknown) => e === fail);
  await redis.close!(); // no close() of its own: nothing to call
});

Deno.test("fromNodeRedis: what the client reported, said when it is not an Error", async () => {
  const c = emitting(0);
  const redis = fromNodeRedis(c.client);
  c.emit("socket hang up");
  c.failWith("The client is closed");
  await assert.rejects(
    redis.hincrby("kvid", "order", 1),
    (e: unknown) =>
      e instanceof Error && e.cause === "The client is closed" &&
      e.message === "The client is closed (the client reported: socket hang up)",
  );
});

Deno.test("fromNodeRedis: a client that is not an event emitter is not listened to", async () => {
  const lost = new Error("The client is closed");
  // `on` without `listenerCount`, and the other way round: neither is called.
  const halves = [
    { on: () => assert.fail("on() called without listenerCount()") },
    { listenerCount: () => assert.fail("listenerCount() called without on()") },
  ];
  for (const half of halves) {
    const redis = fromNodeRedis({ ...nodeRedis([]), hIncrBy: () => Promise.reject(lost), ...half });
    await assert.rejects(redis.hincrby("kvid", "order", 1), (e: unknown) => e === lost);
  }
});
