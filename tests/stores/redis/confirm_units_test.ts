import "../../support/deadline.ts"; // a time limit on every test of this file
// The Redis store's confirmation (src/stores/redis/confirm.ts) on a scripted client, no server:
// what is sent, in which case, and how each reply is read. The real servers' side is in
// tests/faults/wait_aof_test.ts, tests/faults/crash_aof_test.ts and tests/stores/redis/redis_replicas_test.ts.
import assert from "node:assert/strict";
import { KvIdError } from "../../../src/contract/errors.ts";
import type { RedisClient } from "../../../src/contract/redis_client.ts";
import {
  confirmReservation,
  confirms,
  connectionOf,
  knownWithoutWaitAof,
  probeWaitAof,
  waitForAof,
  waitForReplicas,
} from "../../../src/stores/redis/confirm.ts";

/** An error a client raises for an error reply (named like node-redis' and ioredis'). */
class ReplyError extends Error {}

type Answer = (command: string, args: string[]) => unknown;

/** A client with only sendCommand, answering with `answer` (a thrown value is an error reply). */
function scripted(answer: Answer): RedisClient & { sent: string[] } {
  const sent: string[] = [];
  return {
    sent,
    sendCommand(command: string, args: string[] = []) {
      sent.push([command, ...args].join(" "));
      try {
        return Promise.resolve(answer(command, args));
      } catch (err) {
        return Promise.reject(err);
      }
    },
  } as unknown as RedisClient & { sent: string[] };
}

const INFO = "id=5 addr=127.0.0.1:50000 laddr=127.0.0.1:6379 fd=8 name= db=0";

/** A server that has WAITAOF (answering `aof`) and WAIT (answering `wait`). */
function server(aof: unknown = [1, 0], wait: unknown = 2) {
  return scripted((command) => {
    if (command === "WAITAOF") return aof;
    if (command === "WAIT") return wait;
    if (command === "CLIENT") return INFO;
    throw new ReplyError(`ERR unknown command '${command}'`);
  });
}

async function code(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof KvIdError, String(err));
    return err.code;
  }
  return "none";
}

Deno.test("confirm: nothing asked is nothing sent", async () => {
  const c = server();
  await confirmReservation(c, "k", "f", {}, 1_000);
  await confirmReservation(c, "k", "f", { replicas: 0, waitAof: false }, 1_000);
  assert.deepEqual(c.sent, []);
  assert.equal(confirms(c, {}), false);
  assert.equal(confirms(c, { replicas: 0, waitAof: true }), false, "WAITAOF not known yet");
  assert.equal(confirms(c, { replicas: 1 }), true);
});

Deno.test("confirm: WAITAOF 1 0 ms, then WAIT with the time left", async () => {
  const c = server([1, 0], 2);
  await confirmReservation(c, "k", "f", { waitAof: true, replicas: 2 }, 1_000);
  assert.equal(c.sent.length, 2);
  assert.match(c.sent[1], /^WAIT 2 (99\d|1000)$/);
  assert.equal(c.sent[0], "WAITAOF 1 0 1000");
  // A WAITAOF that took 50 ms leaves WAIT at most 950 ms, and never less than 1.
  const slow = scripted(async (command) => {
    if (command === "WAITAOF") {
      await new Promise((r) => setTimeout(r, 50));
      return [1, 0];
    }
    return 1;
  });
  await confirmReservation(slow, "k", "f", { waitAof: true, replicas: 1 }, 1_000);
  const left = Number(slow.sent[1].split(" ")[2]);
  assert.ok(left >= 1 && left <= 950, slow.sent[1]);
  const slower = scripted(async (command) => {
    if (command === "WAITAOF") {
      await new Promise((r) => setTimeout(r, 50));
      return [1, 0];
    }
    return 1;
  });
  await confirmReservation(slower, "k", "f", { waitAof: true, replicas: 1 }, 10);
  assert.equal(slower.sent[1], "WAIT 1 1");
  assert.equal(confirms(c, { waitAof: true }), true, "WAITAOF known after one answer");
});

Deno.test("confirm: WAITAOF replies", async () => {
  assert.equal(await waitForAof(server([1, 0]), "k", "f", 100), true);
  assert.equal(await waitForAof(server([2n, 0n]), "k", "f", 100), true);
  assert.equal(await code(waitForAof(server([0, 0]), "k", "f", 100)), "timeout");
  assert.equal(await code(waitForAof(server([1]), "k", "f", 100)), "reply");
  assert.equal(await code(waitForAof(server([1, 0, 0]), "k", "f", 100)), "reply");
  assert.equal(await code(waitForAof(server("OK"), "k", "f", 100)), "reply");
  assert.equal(await code(waitForAof(server(["x", 0]), "k", "f", 100)), "reply");
  const fail = (message: string) =>
    scripted(() => {
      throw new ReplyError(message);
    });
  assert.equal(await code(waitForAof(fail("NOPERM no"), "k", "f", 100)), "config");
  await assert.rejects(
    waitForAof(fail("NOPERM no"), "k", "f", 100),
    /may not run WAITAOF.*ACL \+waitaof/,
  );
  await assert.rejects(
    waitForAof(fail("ERR appendonly is disabled"), "k", "f", 100),
    /appendonly no/,
  );
  await assert.rejects(waitForAof(fail("UNBLOCKED force"), "k", "f", 100), /became a replica/);
  assert.equal(await code(waitForAof(fail("ERR appendonly is disabled"), "k", "f", 100)), "config");
  assert.equal(await code(waitForAof(fail("UNBLOCKED force"), "k", "f", 100)), "connection");
  assert.equal(
    await code(
      waitForAof(fail("READONLY You can't write against a read only replica."), "k", "f", 100),
    ),
    "unavailable",
  );
});

Deno.test("confirm: a server without WAITAOF is asked once, a client known without it never", async () => {
  const old = scripted(() => {
    throw new ReplyError("ERR unknown command 'WAITAOF'");
  });
  assert.equal(await waitForAof(old, "k", "f", 100), false);
  assert.equal(await waitForAof(old, "k", "f", 100), false);
  assert.equal(old.sent.length, 1);
  await confirmReservation(old, "k", "f", { waitAof: true }, 100);
  assert.equal(old.sent.length, 1);
  const known = server();
  knownWithoutWaitAof(known);
  assert.equal(await waitForAof(known, "k", "f", 100), false);
  assert.deepEqual(known.sent, []);
  // Concurrent first confirmations: one WAITAOF finds out, the others wait for it.
  const fresh = scripted(async () => {
    await new Promise((r) => setTimeout(r, 20));
    throw new ReplyError("ERR unknown command 'WAITAOF'");
  });
  const all = await Promise.all([1, 2, 3].map(() => waitForAof(fresh, "k", "f", 100)));
  assert.deepEqual(all, [false, false, false]);
  assert.equal(fresh.sent.length, 1);
  // A client with neither method sends nothing.
  assert.equal(await waitForAof({} as RedisClient, "k", "f", 100), false);
});

Deno.test("confirm: concurrent first WAITAOFs on a server that has it are each sent", async () => {
  const c = server([1, 0]);
  const all = await Promise.all([1, 2, 3].map(() => waitForAof(c, "k", "f", 100)));
  assert.deepEqual(all, [true, true, true]);
  assert.equal(c.sent.filter((s) => s.startsWith("WAITAOF 1 0")).length, 3);
});

Deno.test("confirm: waitAof() of the client is preferred to sendCommand", async () => {
  const calls: string[] = [];
  const c = {
    waitAof: (key: string, local: number, replicas: number, ms: number) => {
      calls.push(`${key} ${local} ${replicas} ${ms}`);
      return Promise.resolve([1, 0]);
    },
    waitReplicas: (key: string, replicas: number, ms: number) => {
      calls.push(`${key} ${replicas} ${ms}`);
      return Promise.resolve(3);
    },
    sendCommand: () => Promise.reject(new Error("not this")),
  } as unknown as RedisClient;
  assert.equal(await waitForAof(c, "k", "f", 100), true);
  await waitForReplicas(c, "k", "f", 3, 100);
  assert.deepEqual(calls, ["k 1 0 100", "k 3 100"]);
});

Deno.test("confirm: WAIT replies", async () => {
  await waitForReplicas(server(undefined, 2), "k", "f", 2, 100);
  await waitForReplicas(server(undefined, 3), "k", "f", 2, 100);
  assert.equal(await code(waitForReplicas(server(undefined, 1), "k", "f", 2, 100)), "timeout");
  assert.equal(await code(waitForReplicas(server(undefined, "x"), "k", "f", 2, 100)), "reply");
  assert.equal(await code(waitForReplicas({} as RedisClient, "k", "f", 1, 100)), "config");
  const fail = (message: string) =>
    scripted(() => {
      throw new ReplyError(message);
    });
  assert.equal(
    await code(waitForReplicas(fail("ERR unknown command 'WAIT'"), "k", "f", 1, 100)),
    "config",
  );
  assert.equal(
    await code(waitForReplicas(fail("UNBLOCKED force"), "k", "f", 1, 100)),
    "connection",
  );
  assert.equal(
    await code(
      waitForReplicas(
        fail("READONLY You can't write against a read only replica."),
        "k",
        "f",
        1,
        100,
      ),
    ),
    "unavailable",
  );
  assert.equal(
    await code(
      waitForReplicas(fail("ERR WAIT cannot be used with replica instances"), "k", "f", 1, 100),
    ),
    "connection",
  );
});

Deno.test("confirm: the connection is named by CLIENT INFO, else CLIENT ID", async () => {
  assert.equal(
    await connectionOf(server(), "k"),
    "id=5 addr=127.0.0.1:50000 laddr=127.0.0.1:6379",
  );
  assert.equal(
    await connectionOf(scripted(() => new TextEncoder().encode(INFO)), "k"),
    "id=5 addr=127.0.0.1:50000 laddr=127.0.0.1:6379",
  );
  const old = scripted((_c, args) => {
    if (args[0] === "INFO") throw new ReplyError("ERR unknown subcommand 'INFO'");
    return 7;
  });
  assert.equal(await connectionOf(old, "k"), "no CLIENT INFO");
  assert.equal(await connectionOf(old, "k"), "id=7");
  assert.deepEqual(old.sent, ["CLIENT INFO", "CLIENT ID"]);
  const info = { clientInfo: (key: string) => Promise.resolve(`id=9 addr=a laddr=${key}`) };
  assert.equal(await connectionOf(info as unknown as RedisClient, "b"), "id=9 addr=a laddr=b");
  assert.equal(await connectionOf({} as RedisClient, "k"), "unknown");
  const denied = scripted(() => {
    throw new ReplyError("NOPERM this user has no permissions");
  });
  assert.equal(await code(connectionOf(denied, "k")), "config");
  await assert.rejects(connectionOf(denied, "k"), /may not run CLIENT INFO,/);
  const oldDenied = scripted((_c, args) => {
    if (args[0] === "INFO") throw new ReplyError("ERR unknown subcommand 'INFO'");
    throw new ReplyError("NOPERM this user has no permissions");
  });
  assert.equal(await connectionOf(oldDenied, "k"), "no CLIENT INFO");
  await assert.rejects(connectionOf(oldDenied, "k"), /may not run CLIENT ID,/);
  const broken = scripted(() => {
    throw new Error("socket closed");
  });
  await assert.rejects(connectionOf(broken, "k"), /socket closed/);
  // Only an error reply to CLIENT INFO means the server has none; CLIENT ID failing is thrown.
  const notReply = scripted(() => {
    throw new Error("unknown command (a client's own error)");
  });
  await assert.rejects(connectionOf(notReply, "k"), /a client's own error/);
  const noId = scripted(() => {
    throw new ReplyError("ERR unknown subcommand");
  });
  assert.equal(await connectionOf(noId, "k"), "no CLIENT INFO");
  await assert.rejects(connectionOf(noId, "k"), /unknown subcommand/);
});

Deno.test("confirm: a confirmation answered on another connection is refused", async () => {
  let id = 5;
  const moved = scripted((command) => {
    if (command === "CLIENT") return `id=${id++} addr=a laddr=b`;
    return command === "WAIT" ? 1 : [1, 0];
  });
  const before = connectionOf(moved, "k");
  assert.equal(await code(waitForAof(moved, "k", "f", 100, before)), "connection");
  const before2 = connectionOf(moved, "k");
  assert.equal(await code(waitForReplicas(moved, "k", "f", 1, 100, before2)), "connection");
  const same = server([1, 0], 1);
  await confirmReservation(
    same,
    "k",
    "f",
    { waitAof: true, replicas: 1 },
    100,
    connectionOf(same, "k"),
  );
  assert.equal(same.sent.length, 5);
  assert.deepEqual(same.sent.filter((_, n) => n !== 3), [
    "CLIENT INFO",
    "WAITAOF 1 0 100",
    "CLIENT INFO",
    "CLIENT INFO",
  ]);
  assert.match(same.sent[3], /^WAIT 1 (9\d|100)$/);
  // Named only once (before unknown, after named): not the same connection.
  assert.equal(
    await code(waitForAof(server(), "k", "f", 100, Promise.resolve("unknown"))),
    "connection",
  );
  const unnamed = { waitAof: () => Promise.resolve([1, 0]) } as unknown as RedisClient;
  assert.equal(
    await code(waitForAof(unnamed, "k", "f", 100, Promise.resolve("id=1 addr=a laddr=b"))),
    "connection",
  );
  // A client that cannot name its connection either time: as without the check.
  const blind = { waitAof: () => Promise.resolve([1, 0]) } as unknown as RedisClient;
  assert.equal(await waitForAof(blind, "k", "f", 100, connectionOf(blind, "k")), true);
});

Deno.test("confirm: the WAITAOF probe is sent once and remembered", async () => {
  const c = server();
  probeWaitAof(c, "k");
  probeWaitAof(c, "k"); // in flight: not sent again
  assert.deepEqual(c.sent, ["WAITAOF 0 0 0"]);
  await waitForAof(c, "k", "f", 100); // waits for the probe, then confirms
  assert.equal(confirms(c, { waitAof: true }), true);
  probeWaitAof(c, "k"); // known: not sent again
  assert.deepEqual(c.sent, ["WAITAOF 0 0 0", "WAITAOF 1 0 100"]);
  const old = scripted(() => {
    throw new ReplyError("ERR unknown command 'WAITAOF'");
  });
  probeWaitAof(old, "k");
  assert.equal(await waitForAof(old, "k", "f", 100), false);
  probeWaitAof(old, "k");
  assert.deepEqual(old.sent, ["WAITAOF 0 0 0"]);
  assert.equal(confirms(old, { waitAof: true }), false);
  // Any other answer to the probe: the confirmation asks again and says it.
  let n = 0;
  const denied = scripted(() => {
    if (n++ === 0) throw new ReplyError("NOPERM no");
    return [1, 0];
  });
  probeWaitAof(denied, "k");
  assert.equal(await waitForAof(denied, "k", "f", 100), true);
  assert.equal(denied.sent.length, 2);
  const viaMethod: string[] = [];
  const m = {
    waitAof: (key: string, l: number, r: number, ms: number) => {
      viaMethod.push(`${key} ${l} ${r} ${ms}`);
      return Promise.resolve([1, 0]);
    },
  } as unknown as RedisClient;
  probeWaitAof(m, "k");
  assert.deepEqual(viaMethod, ["k 0 0 0"]);
  probeWaitAof({} as RedisClient, "k"); // neither: nothing, no error
});

/** A client whose WAITAOF replies wait until `release()`; the first `fails` throw NOPERM. */
function held(fails = 0) {
  const waiting: (() => void)[] = [];
  let n = 0;
  const c = scripted((command) => {
    if (command !== "WAITAOF") return 1;
    if (n++ < fails) throw new ReplyError("NOPERM no");
    return new Promise((resolve) => waiting.push(() => resolve([1, 0])));
  });
  const release = () => waiting.splice(0).forEach((f) => f());
  return { c, release };
}

const turns = async (n = 10) => {
  for (let i = 0; i < n; i++) await Promise.resolve();
};

Deno.test("confirm: once WAITAOF is known, confirmations go out together, none waits for another", async () => {
  const { c, release } = held();
  const first = waitForAof(c, "k", "f", 100);
  await turns();
  release();
  assert.equal(await first, true);
  const two = Promise.all([waitForAof(c, "k", "f", 100), waitForAof(c, "k", "f", 100)]);
  await turns();
  assert.equal(c.sent.length, 3, "both sent before either is answered");
  release();
  assert.deepEqual(await two, [true, true]);
});

Deno.test("confirm: after a first WAITAOF that failed, the next one finds out again for the others", async () => {
  const { c, release } = held(1);
  assert.equal(await code(waitForAof(c, "k", "f", 100)), "config");
  const three = Promise.all([1, 2, 3].map(() => waitForAof(c, "k", "f", 100)));
  await turns();
  assert.equal(c.sent.length, 2, "one probe in flight, the others wait for it");
  release();
  await turns();
  release();
  assert.deepEqual(await three, [true, true, true]);
  assert.equal(c.sent.length, 4);
});
