/**
 * Unit tests of the durability gate (src/engine/durability_gate.ts) on scripted stores: the
 * verdict (`durabilityRefusal`), when the store is read and with what, where the read goes (in
 * the reservation, before it, beside it), what is refused, and when a store is told to forget
 * its shared reads. The gate against real servers is in tests/engine/edge_cases_audit_test.ts,
 * tests/stores/redis/redis_first_reservation_test.ts and tests/faults/states_test.ts. Starts no
 * server.
 */

import "../support/deadline.ts"; // a time limit on every test of this file
import assert from "node:assert/strict";
import { LIBRARY_OPT_OUT } from "../../src/contract/durability.ts";
import { KvIdError } from "../../src/contract/errors.ts";
import type {
  DurabilityOptions,
  Reservation,
  Store,
  StoreDurability,
} from "../../src/contract/store.ts";
import {
  DurabilityGate,
  durabilityRefusal,
  type GateSettings,
} from "../../src/engine/durability_gate.ts";

const GOOD: StoreDurability = { durable: true, settings: { appendonly: "yes" }, problems: [] };
const BAD: StoreDurability = {
  durable: false,
  settings: { appendonly: "no" },
  problems: ["no AOF", "no fsync"],
};
const LOSSY: StoreDurability = { ...BAD, lossWithoutCrash: true };
const NO_REPLY = { ranges: [], raised: false } as Reservation;

function settings(durability: GateSettings["durability"] = "strict"): GateSettings {
  return { durability, serverSettings: { appendfsync: "always" }, key: "kvid" };
}

interface Scripted extends Store {
  asked: DurabilityOptions[];
  forgot: number;
}

/**
 * A store whose durability() answers `answers` in turn (the last one again; a function: a
 * promise made per read), recording what it was asked and each forgetReads().
 */
function store(
  answers: (StoreDurability | (() => Promise<StoreDurability>))[],
  readsDurability = false,
): Scripted {
  const s = {
    asked: [] as DurabilityOptions[],
    forgot: 0,
    readsDurability,
    reserve: () => Promise.reject(new Error("not called")),
    durability(key: string, options?: DurabilityOptions): Promise<StoreDurability> {
      assert.equal(key, "kvid");
      s.asked.push(options!);
      const a = answers[Math.min(s.asked.length - 1, answers.length - 1)];
      return typeof a === "function" ? a() : Promise.resolve(a);
    },
    forgetReads() {
      s.forgot++;
    },
  };
  return s as Scripted;
}

async function refusal(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof KvIdError, String(err));
    return `${err.code} ${err.reason}`;
  }
  return "none";
}

/** A promise and its resolver. */
function later<T>(): { promise: Promise<T>; resolve: (v: T) => void } {
  let resolve: (v: T) => void = () => {};
  const promise = new Promise<T>((r) => resolve = r);
  return { promise, resolve };
}

/** Whether `p` settles within a few turns of the microtask queue. */
async function settles(p: Promise<unknown>): Promise<boolean> {
  let done = false;
  p.then(() => done = true, () => done = true);
  for (let i = 0; i < 20; i++) await Promise.resolve();
  return done;
}

Deno.test("durabilityRefusal: no problem serves, in either mode, lossWithoutCrash or not", () => {
  for (const mode of ["strict", "best-effort"] as const) {
    assert.equal(durabilityRefusal(GOOD, mode, "kvid", "order"), undefined);
    const odd = { ...GOOD, durable: false, lossWithoutCrash: true };
    assert.equal(durabilityRefusal(odd, mode, "kvid", "order"), undefined, mode);
  }
});

Deno.test("durabilityRefusal: problems refused under strict, naming them and the opt-out", () => {
  const err = durabilityRefusal(BAD, "strict", "kvid", "order");
  assert.ok(err instanceof KvIdError);
  assert.equal(err.code, "config");
  assert.equal(err.reason, "not-durable");
  assert.equal(err.key, "kvid");
  assert.equal(err.field, "order");
  assert.match(err.message, /^the store can lose reservations, so IDs could be issued twice/);
  assert.ok(err.message.includes("no AOF; no fsync"), err.message);
  assert.ok(err.message.includes(`accept the loss with ${LIBRARY_OPT_OUT}`), err.message);
  const cli = durabilityRefusal(BAD, "strict", "k", "f", "--durability best-effort")!;
  assert.ok(cli.message.includes("accept the loss with --durability best-effort"), cli.message);
  assert.equal(cli.key, "k");
  assert.equal(cli.field, "f");
  const noLoss = durabilityRefusal({ ...BAD, lossWithoutCrash: false }, "strict", "kvid", "o");
  assert.match(noLoss!.message, /can lose reservations/);
});

Deno.test("durabilityRefusal: best-effort serves problems, never a loss without a crash", () => {
  assert.equal(durabilityRefusal(BAD, "best-effort", "kvid", "order"), undefined);
  assert.equal(
    durabilityRefusal({ ...BAD, lossWithoutCrash: false }, "best-effort", "kvid", "order"),
    undefined,
  );
  for (const mode of ["strict", "best-effort"] as const) {
    const err = durabilityRefusal(LOSSY, mode, "kvid", "order");
    assert.ok(err instanceof KvIdError, mode);
    assert.equal(err.code, "config");
    assert.equal(err.reason, "not-durable");
    assert.equal(err.key, "kvid");
    assert.equal(err.field, "order");
    assert.match(err.message, /^the store loses counters in ordinary operation, refused/);
    assert.ok(err.message.includes("no AOF; no fsync"), err.message);
  }
});

Deno.test("durability gate: read once, with the settings, and again only when due", async () => {
  const s = store([GOOD]);
  const st = settings();
  const gate = new DurabilityGate(st, "order");
  await gate.check(s);
  await gate.check(s);
  assert.equal(s.asked.length, 1);
  const { judge, ...rest } = s.asked[0];
  assert.deepEqual(rest, {
    field: "order",
    mode: "strict",
    stated: { appendfsync: "always" },
    reuse: true,
    generator: st,
  });
  assert.equal(rest.generator, st, "the settings themselves");
  assert.equal(judge(GOOD), undefined);
  const refused = judge(BAD);
  assert.ok(refused instanceof KvIdError && refused.reason === "not-durable");
  assert.equal(refused.field, "order");
  assert.equal(refused.key, "kvid");
  assert.equal(s.forgot, 0, "an accepted read is shared");

  gate.markDue(s);
  assert.equal(s.forgot, 1, "markDue: the store forgets its reads");
  gate.markDue(undefined); // no store yet: nothing to tell
  await gate.check(s);
  assert.equal(s.asked.length, 2);
  assert.equal(s.asked[1].reuse, false, "a read after the first is not another generator's");
  const report = gate.report();
  assert.deepEqual(report, {
    mode: "strict",
    durable: true,
    problems: [],
    settings: { appendonly: "yes" },
  });
  report.settings.appendonly = "no";
  report.problems.push("x");
  assert.deepEqual(gate.report().settings, { appendonly: "yes" }, "the report is a copy");
  assert.deepEqual(gate.report().problems, []);
});

Deno.test("durability gate: best-effort's judge and report, the mode the settings say", async () => {
  const s = store([BAD]);
  const gate = new DurabilityGate(settings("best-effort"), "order");
  await gate.check(s);
  assert.equal(s.asked[0].mode, "best-effort");
  assert.equal(s.asked[0].judge(BAD), undefined);
  assert.ok(s.asked[0].judge(LOSSY) instanceof KvIdError);
  assert.deepEqual(gate.report(), {
    mode: "best-effort",
    durable: false,
    problems: ["no AOF", "no fsync"],
    settings: { appendonly: "no" },
  });
  assert.equal(s.forgot, 0);
  await gate.check(s);
  assert.equal(s.asked.length, 1, "accepted: not read again");
});

Deno.test("durability gate: a store that can lose IDs is refused, forgets, is read again", async () => {
  const s = store([BAD, BAD, GOOD]);
  const gate = new DurabilityGate(settings(), "order");
  assert.equal(await refusal(gate.check(s)), "config not-durable");
  assert.equal(s.forgot, 1, "a refusal makes shared reads stale");
  assert.deepEqual(gate.report().problems, ["no AOF", "no fsync"]);
  assert.equal(gate.report().durable, false);
  assert.equal(await refusal(gate.beforeReserve(s)), "config not-durable", "waited for");
  assert.equal(s.forgot, 2);
  assert.equal(s.asked[1].reuse, false);
  const read = await gate.beforeReserve(s);
  await read.settle(NO_REPLY);
  assert.equal(s.asked.length, 3);
  assert.equal(s.forgot, 2);
  await gate.check(s);
  assert.equal(s.asked.length, 3, "accepted: not due any more");
  assert.equal(gate.report().durable, true);
});

Deno.test("durability gate: a lossy store is refused under best-effort too", async () => {
  for (const mode of ["strict", "best-effort"] as const) {
    const s = store([LOSSY]);
    const gate = new DurabilityGate(settings(mode), "order");
    assert.equal(await refusal(gate.check(s)), "config not-durable", mode);
    assert.equal(s.forgot, 1);
    assert.equal(await refusal(gate.check(s)), "config not-durable", "still due");
    assert.equal(s.asked.length, 2);
  }
});

Deno.test("durability gate: a store without durability() is trusted, never read", async () => {
  const gate = new DurabilityGate(settings(), "order");
  let forgot = 0;
  const s = {
    reserve: () => Promise.reject(new Error("not called")),
    readsDurability: true,
    forgetReads: () => forgot++,
  } as unknown as Store;
  const first = gate.firstRead(s);
  assert.ok(first instanceof Promise);
  await first;
  const read = await gate.beforeReserve(s);
  assert.equal(read.asked, undefined);
  await read.settle(NO_REPLY);
  assert.deepEqual(gate.report(), {
    mode: "strict",
    durable: undefined,
    problems: [],
    settings: {},
  });
  gate.markDue(s);
  assert.equal(forgot, 1);
});

Deno.test("durability gate: a store that reads durability in the reservation is asked there, first only", async () => {
  const s = store([GOOD], true);
  const st = settings();
  const gate = new DurabilityGate(st, "order");
  assert.equal(gate.firstRead(s), undefined);
  const read = await gate.beforeReserve(s);
  assert.ok(read.asked !== undefined);
  const { judge, ...rest } = read.asked;
  assert.deepEqual(rest, {
    field: "order",
    mode: "strict",
    stated: { appendfsync: "always" },
    reuse: true,
    generator: st,
  });
  assert.equal(judge(GOOD), undefined);
  assert.ok(judge(BAD) instanceof KvIdError);
  assert.equal(s.asked.length, 0, "not read beside it");
  await read.settle({ ...NO_REPLY, durability: GOOD });
  assert.equal(s.asked.length, 0);
  assert.equal(gate.report().durable, true);
  assert.equal(s.forgot, 0);
  // Accepted and not due: no read at all.
  const idle = await gate.beforeReserve(s);
  assert.equal(idle.asked, undefined);
  await idle.settle(NO_REPLY);
  assert.equal(s.asked.length, 0);
  assert.equal(gate.firstRead(s) instanceof Promise, true, "read once already");
  assert.equal(s.asked.length, 0);

  gate.markDue(s);
  // Read once already: later reads go beside the reservation.
  const first = gate.firstRead(s);
  assert.ok(first instanceof Promise);
  const again = await gate.beforeReserve(s, first);
  assert.equal(again.asked, undefined);
  await again.settle(NO_REPLY);
  assert.equal(s.asked.length, 1);
  assert.equal(s.asked[0].reuse, false);
  gate.markDue(s);
  const third = await gate.beforeReserve(s);
  assert.equal(third.asked, undefined, "a re-read is never in the reservation");
  await third.settle(NO_REPLY);
  assert.equal(s.asked.length, 2);
});

Deno.test("durability gate: a reservation's reply without a read, or with a refused one", async () => {
  // The reply carried no read: read now, before the range is used.
  const s2 = store([BAD], true);
  const gate2 = new DurabilityGate(settings(), "order");
  const read2 = await gate2.beforeReserve(s2);
  assert.ok(read2.asked !== undefined);
  assert.equal(await refusal(read2.settle(NO_REPLY)), "config not-durable");
  assert.equal(s2.asked.length, 1);
  assert.equal(s2.forgot, 1);
  // Refused: the read stays due, and goes before the next reservation.
  const retry = gate2.beforeReserve(s2);
  assert.equal(await refusal(retry), "config not-durable");
  assert.equal(s2.asked.length, 2);

  // The reply carried an accepted read: kept, nothing else read.
  const s1 = store([BAD], true);
  const gate1 = new DurabilityGate(settings(), "order");
  await (await gate1.beforeReserve(s1)).settle({ ...NO_REPLY, durability: GOOD });
  assert.equal(s1.asked.length, 0);
  await gate1.check(s1);
  assert.equal(s1.asked.length, 0, "not due after an accepted read in the reply");

  // The reply carried a refused read.
  const s3 = store([GOOD], true);
  const gate3 = new DurabilityGate(settings(), "order");
  const read3 = await gate3.beforeReserve(s3);
  assert.equal(
    await refusal(read3.settle({ ...NO_REPLY, durability: BAD })),
    "config not-durable",
  );
  assert.equal(s3.asked.length, 0);
  assert.equal(s3.forgot, 1);
  assert.deepEqual(gate3.report().problems, ["no AOF", "no fsync"]);
  // Refused once: read before the next reservation, and not in it.
  const next = await gate3.beforeReserve(s3);
  assert.equal(next.asked, undefined);
  assert.equal(s3.asked.length, 1);
  await next.settle(NO_REPLY);
  assert.equal(gate3.report().durable, true);

  // A read already started (first use) is the one used.
  const s4 = store([GOOD], true);
  const gate4 = new DurabilityGate(settings(), "order");
  const read4 = await gate4.beforeReserve(s4, Promise.resolve());
  assert.equal(read4.asked, undefined);
  await read4.settle(NO_REPLY);
  assert.equal(s4.asked.length, 0);
});

Deno.test("durability gate: a first read's failure is the reservation's, not unhandled", async () => {
  const s = store([() => Promise.reject(new Error("connection refused"))]);
  const gate = new DurabilityGate(settings(), "order");
  const first = gate.firstRead(s);
  assert.ok(first instanceof Promise);
  // Not awaited yet: a rejection left unhandled here would fail the test (Deno's sanitizer).
  await new Promise((r) => setTimeout(r, 0));
  await assert.rejects(gate.beforeReserve(s, first), /connection refused/);
  assert.equal(s.asked.length, 1);
});

Deno.test("durability gate: first use waits for the read before reserving", async () => {
  const answer = later<StoreDurability>();
  const s = store([() => answer.promise]);
  const gate = new DurabilityGate(settings(), "order");
  const started = gate.firstRead(s)!;
  const before = gate.beforeReserve(s, started);
  assert.equal(await settles(before), false, "nothing reserved before the first read");
  answer.resolve(GOOD);
  await (await before).settle(NO_REPLY);
  assert.equal(s.asked.length, 1);
});

Deno.test("durability gate: once accepted, a re-read goes beside the reservation, not before it", async () => {
  let answer = later<StoreDurability>();
  const s = store([GOOD, () => answer.promise]);
  const gate = new DurabilityGate(settings(), "order");
  await (await gate.beforeReserve(s)).settle(NO_REPLY);
  gate.markDue(s);
  const read = await gate.beforeReserve(s); // resolves while the read is still out
  assert.equal(s.asked.length, 2);
  const done = read.settle(NO_REPLY);
  assert.equal(await settles(done), false, "the range waits for the read");
  answer.resolve(BAD);
  assert.equal(await refusal(done), "config not-durable");
  // Refused: the next one waits for its read before reserving.
  answer = later<StoreDurability>();
  const next = gate.beforeReserve(s);
  assert.equal(await settles(next), false);
  answer.resolve(GOOD);
  await (await next).settle(NO_REPLY);
  assert.equal(s.asked.length, 3);
});

Deno.test("durability gate: a re-read beside the reservation that fails is not unhandled", async () => {
  const s = store([GOOD, () => Promise.reject(new Error("reset"))]);
  const gate = new DurabilityGate(settings(), "order");
  await gate.check(s);
  gate.markDue(s);
  const read = await gate.beforeReserve(s);
  await new Promise((r) => setTimeout(r, 0)); // a rejection unhandled by now fails the test
  await assert.rejects(read.settle(NO_REPLY), /reset/);
});

Deno.test("durability gate: a store without forgetReads() is refused and marked due all the same", async () => {
  const plain = {
    reserve: () => Promise.reject(new Error("not called")),
    durability: () => Promise.resolve(BAD),
  } as unknown as Store;
  const gate = new DurabilityGate(settings(), "order");
  assert.equal(await refusal(gate.check(plain)), "config not-durable", "not a TypeError");
  gate.markDue(plain);
  assert.equal(await refusal(gate.check(plain)), "config not-durable");
});
