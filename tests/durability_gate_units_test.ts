import "./deadline.ts"; // a time limit on every test of this file
// The durability gate (src/engine/durability_gate.ts) on an in-memory store, no server: when the
// store is read, with what, where the read goes, and what is refused.
import assert from "node:assert/strict";
import { KvIdError } from "../src/contract/errors.ts";
import type {
  DurabilityOptions,
  Reservation,
  Store,
  StoreDurability,
} from "../src/contract/store.ts";
import { DurabilityGate, type GateSettings } from "../src/engine/durability_gate.ts";
import { serverReadsEpoch } from "../src/runtime/server_reads.ts";

const GOOD: StoreDurability = { durable: true, settings: { appendonly: "yes" }, problems: [] };
const BAD: StoreDurability = {
  durable: false,
  settings: { appendonly: "no" },
  problems: ["no AOF"],
};

function settings(durability: GateSettings["durability"] = "strict"): GateSettings {
  return { durability, replicas: 1, serverSettings: { appendfsync: "always" }, key: "kvid" };
}

/** A store whose durability() answers `answers` in turn (the last one again), recording asks. */
function store(answers: StoreDurability[], readsDurability = false) {
  const asked: DurabilityOptions[] = [];
  const s: Store & { asked: DurabilityOptions[] } = {
    asked,
    readsDurability,
    reserve: () => Promise.reject(new Error("not called")),
    durability: (key: string, options?: DurabilityOptions) => {
      assert.equal(key, "kvid");
      asked.push(options!);
      return Promise.resolve(answers[Math.min(asked.length - 1, answers.length - 1)]);
    },
  } as Store & { asked: DurabilityOptions[] };
  return s;
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

Deno.test("durability gate: read once, with the settings, and again only when due", async () => {
  const s = store([GOOD]);
  const gate = new DurabilityGate(settings(), "order");
  await gate.check(s);
  await gate.check(s);
  assert.equal(s.asked.length, 1);
  assert.deepEqual(s.asked[0], {
    field: "order",
    mode: "strict",
    replicas: 1,
    stated: { appendfsync: "always" },
    reuse: true,
  });
  const epoch = serverReadsEpoch();
  gate.markDue();
  assert.equal(serverReadsEpoch(), epoch + 1);
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

Deno.test("durability gate: a store that can lose IDs is refused, and read again after", async () => {
  const s = store([BAD, BAD, GOOD]);
  const gate = new DurabilityGate(settings(), "order");
  const epoch = serverReadsEpoch();
  assert.equal(await refusal(gate.check(s)), "config not-durable");
  assert.equal(serverReadsEpoch(), epoch + 1, "a refusal makes shared reads stale");
  assert.deepEqual(gate.report().problems, ["no AOF"]);
  assert.equal(gate.report().durable, false);
  assert.equal(await refusal(gate.beforeReserve(s)), "config not-durable", "waited for");
  const read = await gate.beforeReserve(s);
  await read.settle({ start: 1n, end: 1n } as unknown as Reservation);
  assert.equal(s.asked.length, 3);
  await gate.check(s);
  assert.equal(s.asked.length, 3, "accepted: not due any more");
});

Deno.test("durability gate: best-effort accepts problems, never a loss without a crash", async () => {
  const s = store([BAD]);
  const gate = new DurabilityGate(settings("best-effort"), "order");
  await gate.check(s);
  assert.equal(gate.acceptedNoAof(), true);
  const lossy = store([{ ...BAD, lossWithoutCrash: true }]);
  const gate2 = new DurabilityGate(settings("best-effort"), "order");
  assert.equal(await refusal(gate2.check(lossy)), "config not-durable");
  const gate3 = new DurabilityGate(settings("strict"), "order");
  assert.equal(await refusal(gate3.check(lossy)), "config not-durable");
});

Deno.test("durability gate: acceptedNoAof only in best-effort, for an appendonly no", async () => {
  const cases: [GateSettings["durability"], Record<string, string>, boolean][] = [
    ["best-effort", { appendonly: "no" }, true],
    ["best-effort", { "member1.appendonly": "no" }, true],
    ["best-effort", { appendonly: "yes" }, false],
    ["best-effort", { "member1.appendonly": "yes", appendfsync: "no" }, false],
    ["best-effort", { noappendonly: "no" }, false],
    ["best-effort", {}, false],
    ["strict", { appendonly: "no" }, false],
  ];
  for (const [mode, st, want] of cases) {
    const gate = new DurabilityGate(settings(mode), "order");
    await gate.check(store([{ durable: true, settings: st, problems: [] }]));
    assert.equal(gate.acceptedNoAof(), want, `${mode} ${JSON.stringify(st)}`);
  }
  assert.equal(
    new DurabilityGate(settings("best-effort"), "order").acceptedNoAof(),
    false,
    "unread",
  );
});

Deno.test("durability gate: a store without durability() is trusted, never read", async () => {
  const gate = new DurabilityGate(settings(), "order");
  const s: Store = {
    reserve: () => Promise.reject(new Error("not called")),
    readsDurability: true,
  };
  assert.ok(gate.firstRead(s) instanceof Promise);
  const read = await gate.beforeReserve(s);
  assert.equal(read.asked, undefined);
  await read.settle({} as Reservation);
  assert.deepEqual(gate.report(), {
    mode: "strict",
    durable: undefined,
    problems: [],
    settings: {},
  });
});

Deno.test("durability gate: a store that reads durability in the reservation is asked there, first only", async () => {
  const s = store([GOOD], true);
  const gate = new DurabilityGate(settings(), "order");
  assert.equal(gate.firstRead(s), undefined);
  const read = await gate.beforeReserve(s);
  assert.deepEqual(read.asked, {
    field: "order",
    mode: "strict",
    replicas: 1,
    stated: { appendfsync: "always" },
    reuse: true,
  });
  assert.equal(s.asked.length, 0, "not read beside it");
  await read.settle({ durability: GOOD } as unknown as Reservation);
  assert.equal(s.asked.length, 0);
  assert.equal(gate.report().durable, true);
  gate.markDue();
  // Read once already: later reads go beside the reservation.
  const first = gate.firstRead(s);
  assert.ok(first instanceof Promise);
  const again = await gate.beforeReserve(s, first);
  assert.equal(again.asked, undefined);
  await again.settle({} as Reservation);
  assert.equal(s.asked.length, 1);

  // The reply carried no read: read now, before the range is used.
  const s2 = store([BAD], true);
  const gate2 = new DurabilityGate(settings(), "order");
  const read2 = await gate2.beforeReserve(s2);
  assert.equal(await refusal(read2.settle({} as Reservation)), "config not-durable");
  assert.equal(s2.asked.length, 1);
  // The reply carried a refused read.
  const s3 = store([GOOD], true);
  const gate3 = new DurabilityGate(settings(), "order");
  const read3 = await gate3.beforeReserve(s3);
  assert.equal(
    await refusal(read3.settle({ durability: BAD } as unknown as Reservation)),
    "config not-durable",
  );
  assert.equal(s3.asked.length, 0);
  // A read already started (first use) is the one used.
  const s4 = store([GOOD], true);
  const gate4 = new DurabilityGate(settings(), "order");
  const read4 = await gate4.beforeReserve(s4, Promise.resolve());
  assert.equal(read4.asked, undefined);
  await read4.settle({} as Reservation);
  assert.equal(s4.asked.length, 0);
});

Deno.test("durability gate: once accepted, a re-read goes beside the reservation, not before it", async () => {
  let answer: (d: StoreDurability) => void = () => {};
  let reads = 0;
  const s: Store = {
    reserve: () => Promise.reject(new Error("not called")),
    durability: () => {
      reads++;
      return reads === 1 ? Promise.resolve(GOOD) : new Promise((r) => answer = r);
    },
  };
  const gate = new DurabilityGate(settings(), "order");
  await (await gate.beforeReserve(s)).settle({} as Reservation);
  gate.markDue();
  const read = await gate.beforeReserve(s); // resolves while the read is still out
  assert.equal(reads, 2);
  let settled = false;
  const done = read.settle({} as Reservation).then(() => settled = true);
  await Promise.resolve();
  assert.equal(settled, false, "the range waits for the read");
  answer(BAD);
  assert.equal(await refusal(done), "config not-durable");
  // Refused: the next one waits for its read before reserving.
  let waited = false;
  const next = gate.beforeReserve(s).then(() => waited = true);
  await Promise.resolve();
  await Promise.resolve();
  assert.equal(waited, false);
  answer(GOOD);
  await next;
});
