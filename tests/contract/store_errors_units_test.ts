import "../support/deadline.ts"; // a time limit on every test of this file
// How a store's failure becomes a KvIdError (src/contract/store_errors.ts), on the error classes
// the clients raise (node-redis' ErrorReply/SimpleError/BlobError, ioredis' ReplyError) with the
// servers' own words (Redis 7 and Kvrocks replies, as the comments of store_errors.ts quote
// them). The same words from running servers are in tests/faults/states_test.ts,
// tests/faults/setup_test.ts and tests/engine/error_reasons_test.ts.
import assert from "node:assert/strict";
import { BlobError, ErrorReply, SimpleError } from "redis";
import { ReplyError } from "ioredis";
import { KvIdError } from "../../src/contract/errors.ts";
import {
  errorMessage,
  isReplyError,
  toKvIdError,
  unusableAddress,
} from "../../src/contract/store_errors.ts";

/** A reply error as node-redis v5 raises it for a RESP simple error. */
const reply = (message: string) => new SimpleError(message);

/** toKvIdError's code, reason and message for `err`, the counter named. */
function mapped(err: unknown) {
  const e = toKvIdError(err, "kvid:ids", "order");
  assert.ok(e instanceof KvIdError);
  assert.equal(e.key, "kvid:ids");
  assert.equal(e.field, "order");
  return { code: e.code, reason: e.reason, message: e.message, cause: e.cause };
}

Deno.test("store errors: errorMessage is an Error's message, else the value as text", () => {
  assert.equal(errorMessage(new Error("boom")), "boom");
  assert.equal(errorMessage(new SimpleError("ERR x")), "ERR x");
  assert.equal(errorMessage("plain text"), "plain text");
  assert.equal(errorMessage(42), "42");
  assert.equal(errorMessage(undefined), "undefined");
});

Deno.test("store errors: isReplyError knows each client's reply classes, through subclasses", () => {
  assert.equal(isReplyError(new ErrorReply("ERR x")), true);
  assert.equal(isReplyError(new SimpleError("ERR x")), true); // a subclass of ErrorReply
  assert.equal(isReplyError(new BlobError("ERR x")), true);
  assert.equal(isReplyError(new ReplyError("ERR x")), true); // ioredis
  class MyReply extends SimpleError {}
  assert.equal(isReplyError(new MyReply("ERR x")), true); // the name is found up the chain
  // Not a reply: the walk ends at null without throwing.
  assert.equal(isReplyError(new Error("connect ECONNREFUSED 127.0.0.1:6379")), false);
  assert.equal(isReplyError(new TypeError("x")), false);
  assert.equal(isReplyError(Object.create(null)), false);
  assert.equal(isReplyError({}), false);
  assert.equal(isReplyError("ERR x"), false);
  assert.equal(isReplyError(null), false);
  assert.equal(isReplyError(undefined), false);
  assert.equal(isReplyError(0), false);
});

Deno.test("store errors: unusableAddress by code or by message, each alone", () => {
  // Node's getaddrinfo error: the code, a message that would say it too.
  const coded = Object.assign(new Error("lookup failed"), { code: "ENOTFOUND" });
  assert.equal(unusableAddress(coded), true);
  assert.equal(unusableAddress(new Error("getaddrinfo ENOTFOUND nohost.invalid")), true);
  assert.equal(
    unusableAddress(new Error("failed to lookup address information: Name or service not known")),
    true,
  );
  assert.equal(unusableAddress(new TypeError("Invalid URL: 'redis//x'")), true);
  assert.equal(unusableAddress(new TypeError("Invalid protocol")), true);
  // A refused connection waits for the server: not a permanent address problem.
  const refused = Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:1"), {
    code: "ECONNREFUSED",
  });
  assert.equal(unusableAddress(refused), false);
  assert.equal(unusableAddress(null), false);
  assert.equal(unusableAddress("ECONNRESET"), false);
});

Deno.test("store errors: a KvIdError passes through as it is", () => {
  const original = new KvIdError("overflow", "already mapped", { key: "k", field: "f" });
  assert.equal(toKvIdError(original, "other", "name"), original);
});

Deno.test("store errors: a client's failure is a connection error, an unusable address config", () => {
  const refused = Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:1"), {
    code: "ECONNREFUSED",
  });
  const r = mapped(refused);
  assert.equal(r.code, "connection");
  assert.match(r.message, /^the store could not be reached: connect ECONNREFUSED/);
  assert.equal(r.cause, refused);
  const a = mapped(new Error("getaddrinfo ENOTFOUND nohost.invalid"));
  assert.equal(a.code, "config");
  assert.match(a.message, /^the store's address is not usable: getaddrinfo ENOTFOUND/);
  // A client's error whose words would be a server state is still the client's: not a reply.
  assert.equal(mapped(new Error("LOADING in the client's words")).code, "connection");
  assert.equal(mapped(new Error("WRONGTYPE in the client's words")).code, "connection");
});

Deno.test("store errors: transient server states are unavailable, retried", () => {
  for (
    const words of [
      "LOADING Redis is loading the dataset in memory",
      "ERR LOADING kvrocks is restoring the db from backup",
      "READONLY You can't write against a read only replica.",
      "MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.",
      "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.",
      "TRYAGAIN Can't write to slot being migrated",
      "CLUSTERDOWN Hash slot not served",
      "NOREPLICAS Not enough good replicas to write.",
      "OOM command not allowed when used memory > 'maxmemory'.",
      "MISCONF Redis is configured to save RDB snapshots, but it's currently unable to persist to disk.",
      "ERR Error running script (call to f_0): @user_script:1: LOADING x",
    ]
  ) {
    const m = mapped(reply(words));
    assert.equal(m.code, "unavailable", words);
    assert.equal(m.message.startsWith(`the server cannot serve for now: ${words}`), true, words);
  }
  // ioredis' ReplyError, with RESP's leading "-" some clients keep: dropped from the message.
  const m = mapped(new ReplyError("-LOADING Redis is loading the dataset in memory"));
  assert.equal(m.code, "unavailable");
  assert.match(m.message, /^the server cannot serve for now: LOADING Redis/);
  // Not states: BUSYKEY, and a word inside a sentence.
  assert.equal(mapped(reply("BUSYKEY Target key name already exists.")).code, "reply");
});

Deno.test("store errors: overflow, not a hash, not a counter", () => {
  const o = mapped(reply("ERR increment or decrement would overflow"));
  assert.equal(o.code, "overflow");
  assert.match(o.message, /^the counter would pass 2\^63-1/);
  for (
    const words of [
      "WRONGTYPE Operation against a key holding the wrong kind of value",
      "ERR Error running script: @user_script:1: Invalid argument: WRONGTYPE Operation against a key holding the wrong kind of value",
    ]
  ) {
    const w = mapped(reply(words));
    assert.equal(w.code, "reply", words);
    assert.equal(w.reason, "not-a-hash", words);
    assert.match(w.message, /^the key holds a value that is not a hash/);
  }
  for (
    const words of [
      "ERR hash value is not an integer",
      "ERR Invalid argument: value is not an integer or out of range",
      "ERR Invalid argument: not started as an integer",
      "ERR Invalid argument: encounter non-integer characters",
    ]
  ) {
    const n = mapped(reply(words));
    assert.equal(n.code, "reply", words);
    assert.equal(n.reason, "not-a-counter", words);
    assert.match(n.message, /^the counter field does not hold an integer/);
  }
});

Deno.test("store errors: a layout refusal is config, in the script's words", () => {
  const l = mapped(
    reply("KVID_LAYOUT the hash kvid:ids is daily, not a counter script: @user_script:12"),
  );
  assert.equal(l.code, "config");
  assert.equal(l.reason, "");
  assert.match(l.message, /^the hash kvid:ids is daily, not a counter \(/);
});

Deno.test("store errors: credentials, permissions and missing commands are config", () => {
  for (
    const words of [
      "NOAUTH Authentication required.",
      "WRONGPASS invalid username-password pair or user is disabled.",
      "ERR invalid password",
      "ERR AUTH <password> called without any password configured for the default user.",
    ]
  ) {
    const a = mapped(reply(words));
    assert.equal(a.code, "config", words);
    assert.equal(a.reason, "auth", words);
    assert.match(a.message, /^authentication failed: /, words);
  }
  for (
    const words of [
      "NOPERM User kvid has no permissions to run the 'evalsha' command",
      "ERR Error running script: @user_script:1: NOPERM this user has no permissions to access one of the keys used as arguments",
    ]
  ) {
    const p = mapped(reply(words));
    assert.equal(p.code, "config", words);
    assert.equal(p.reason, "auth", words);
    assert.match(p.message, /^the user may not run what kvid needs: /, words);
  }
  for (
    const words of [
      "ERR unknown command 'EVALSHA', with args beginning with: ",
      "ERR Unknown Redis command called from script",
    ]
  ) {
    const c = mapped(reply(words));
    assert.equal(c.code, "config", words);
    assert.equal(c.reason, "", words);
    assert.match(c.message, /^the server does not know a command kvid needs/, words);
  }
});

Deno.test("store errors: any other reply is a refused reservation", () => {
  const r = mapped(new BlobError("ERR something else entirely"));
  assert.equal(r.code, "reply");
  assert.equal(r.reason, "");
  assert.match(r.message, /^the server refused the reservation: ERR something else entirely/);
});
