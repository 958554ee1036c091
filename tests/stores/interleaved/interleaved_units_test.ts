/**
 * Unit tests of `InterleavedStore` (src/stores/interleaved/interleaved_store.ts) and the layout
 * check (src/stores/interleaved/layout.ts): the constructor's refusals, the blocks a reservation
 * takes, the first block above a floor for every member, what a member is asked, which member is
 * tried when, how failures and refusals are told apart, a member's reply checked, and the
 * members' durability merged. Members are Deno KV stores in memory (real stores that record a
 * layout), some behind a wrapper that records what they are asked or fails on purpose; the same
 * paths on real servers are in the other files of this folder. Starts no server.
 */

import "../../support/deadline.ts"; // a time limit on every test of this file
import assert from "node:assert/strict";
import { KvIdError } from "../../../src/contract/errors.ts";
import { MAX_ID } from "../../../src/contract/store.ts";
import type {
  AnyReserveOptions,
  DurabilityOptions,
  Reservation,
  Store,
  StoreDurability,
} from "../../../src/contract/store.ts";
import { DenoKvStore } from "../../../src/stores/deno_kv/deno_kv_store.ts";
import {
  InterleavedStore,
  MAX_MEMBERS,
} from "../../../src/stores/interleaved/interleaved_store.ts";
import {
  checkLayout,
  LAYOUT_FIELD_PREFIX,
  layoutOf,
} from "../../../src/stores/interleaved/layout.ts";

const FLOOR_0: AnyReserveOptions = { floor: 0n, raiseTo: 0n, guard: true, exact: true };

/** `n` Deno KV stores in memory, closed at the end of the scope. */
async function kvMembers(n: number) {
  const kvs = await Promise.all(Array.from({ length: n }, () => Deno.openKv(":memory:")));
  return {
    stores: kvs.map((kv) => new DenoKvStore(kv)),
    [Symbol.dispose]() {
      for (const kv of kvs) kv.close();
    },
  };
}

/** A member that records what it is asked, then lets `inner` answer (or `script` fail). */
class Recorder implements Store {
  readonly asked: { count: number; options: AnyReserveOptions }[] = [];
  /** Run before `inner`: throw to fail this call. */
  script: (() => void) | undefined;
  constructor(readonly inner: Store) {}
  reserve(key: string, field: string, count: number, options: AnyReserveOptions) {
    this.asked.push({ count, options });
    try {
      this.script?.();
    } catch (err) {
      return Promise.reject(err);
    }
    return this.inner.reserve(key, field, count, options);
  }
}

/** A member that answers `reply(options)` as is (the layout echoed unless it says otherwise). */
function replying(reply: (options: AnyReserveOptions) => Partial<Reservation>): Store & {
  calls: number;
} {
  const member = {
    calls: 0,
    reserve(_key: string, _field: string, _count: number, options: AnyReserveOptions) {
      member.calls++;
      return Promise.resolve({
        ranges: [],
        raised: false,
        layout: options.layout,
        ...reply(options),
      } as Reservation);
    },
  };
  return member;
}

/** A member that fails every reservation with `error`. */
function failing(error: unknown): Store & { calls: number } {
  const member = {
    calls: 0,
    reserve() {
      member.calls++;
      return Promise.reject(error);
    },
  };
  return member;
}

/** Which member of `n` with blocks of `block` issued the block holding `id`. */
function memberOf(id: bigint, n: number, block: number): number {
  return Number(((id - 1n) / BigInt(block)) % BigInt(n));
}

Deno.test("InterleavedStore: the constructor refuses what would break the residue rule", () => {
  const store = (): Store => ({ reserve: () => Promise.reject(new Error("unused")) });
  assert.throws(() => new InterleavedStore([]), RangeError);
  assert.throws(
    () => new InterleavedStore("ab" as unknown as Store[]),
    /takes 1 to 1024 stores/,
  );
  const many = Array.from({ length: MAX_MEMBERS + 1 }, store);
  assert.throws(() => new InterleavedStore(many), /takes 1 to 1024 stores/);
  assert.equal(new InterleavedStore(many.slice(1)).members, MAX_MEMBERS, "1,024 is allowed");
  assert.throws(
    () => new InterleavedStore([store(), {} as Store]),
    { name: "TypeError", message: "InterleavedStore: member 1 is not a store (no reserve method)" },
  );
  assert.throws(() => new InterleavedStore([null as unknown as Store]), /member 0 is not a store/);
  const a = store();
  assert.throws(() => new InterleavedStore([a, store(), a]), /the same store is given twice/);
  for (const block of [0, -1, 1.5, Number.NaN, 2 ** 53]) {
    assert.throws(() => new InterleavedStore([a], { block }), RangeError, `block ${block}`);
  }
  assert.equal(new InterleavedStore([a], { block: 1 }).block, 1);
  assert.equal(new InterleavedStore([a]).block, 1000, "the default block");
  for (const timeout of [0, -1, Number.NaN]) {
    assert.throws(() => new InterleavedStore([a], { timeout }), /timeout must be positive/);
  }
  const two = new InterleavedStore([a, store()], { block: 7 });
  assert.equal(two.members, 2);
  assert.equal(two.layout(1), "v1 servers=2 block=7 index=1");
});

Deno.test("InterleavedStore: whole blocks, at least one and at most 1,024, adjacent ones merged", async () => {
  using one = await kvMembers(1);
  const single = new InterleavedStore(one.stores, { block: 10 });
  const sizes = async (count: number) =>
    (await single.reserve("kvid", `c${count}`, count, FLOOR_0)).ranges;
  assert.deepEqual(await sizes(1), [{ first: 1n, last: 10n }]);
  assert.deepEqual(await sizes(10), [{ first: 1n, last: 10n }]);
  assert.deepEqual(await sizes(11), [{ first: 1n, last: 20n }], "2 blocks, one range");
  assert.deepEqual(await sizes(0), [{ first: 1n, last: 10n }], "at least one block");
  assert.deepEqual(await sizes(10 * 5000), [{ first: 1n, last: 10_240n }], "1,024 blocks");
  // Two members: member i's blocks are i, i + 2, i + 4, ...; never adjacent.
  using two = await kvMembers(2);
  const pair = new InterleavedStore(two.stores, { block: 10 });
  const r = await pair.reserve("kvid", "pair", 25, FLOOR_0);
  assert.equal(r.ranges.length, 3);
  const i = memberOf(r.ranges[0].first, 2, 10);
  assert.deepEqual(
    r.ranges,
    [0n, 2n, 4n].map((c) => {
      const first = (c + BigInt(i)) * 10n + 1n;
      return { first, last: first + 9n };
    }),
  );
  assert.equal(r.raised, false);
});

Deno.test("InterleavedStore: each member starts at its least block above the floor", async () => {
  // Brute force: the least block c * n + i (c >= 0) whose first ID is above the floor.
  const expected = (floor: bigint, n: number, block: number, i: number) => {
    for (let c = 0n;; c++) {
      const first = (c * BigInt(n) + BigInt(i)) * BigInt(block) + 1n;
      if (first > floor) return first;
    }
  };
  for (const n of [1, 2, 3]) {
    for (const block of [1, 4, 10]) {
      const b = BigInt(block);
      const floors = new Set([0n, 1n, b - 1n, b, b + 1n, 2n * b, 3n * b - 1n, 3n * b, 3n * b + 1n]);
      for (const floor of floors) {
        if (floor < 0n) continue;
        using m = await kvMembers(n);
        const store = new InterleavedStore(m.stores, { block });
        const got = new Map<number, bigint>();
        for (let k = 0; k < n; k++) {
          const r = await store.reserve("kvid", "f", block, {
            floor,
            raiseTo: floor,
            guard: true,
            exact: true,
          });
          got.set(memberOf(r.ranges[0].first, n, block), r.ranges[0].first);
        }
        for (let i = 0; i < n; i++) {
          assert.equal(
            got.get(i),
            expected(floor, n, block, i),
            `n ${n}, block ${block}, floor ${floor}, member ${i}`,
          );
        }
      }
    }
  }
});

Deno.test("InterleavedStore: what a member is asked: cycles, exact, guarded, no pool, its layout", async () => {
  using m = await kvMembers(1);
  const member = new Recorder(m.stores[0]);
  const store = new InterleavedStore([member], { block: 10 });
  const generator = { timeout: 1000 };
  const durability = { field: "x" } as DurabilityOptions;
  await store.reserve("kvid", "asked", 30, {
    floor: 25n,
    raiseTo: 45n,
    guard: false,
    exact: false,
    loadStep: true,
    maxCount: 7,
    pool: true,
    generator,
    durability,
  });
  assert.equal(member.asked.length, 1);
  const { count, options } = member.asked[0];
  assert.equal(count, 3, "3 blocks");
  // Floor 25: the first block above it is block 3 (31..40), cycle 3; raise to 45: cycle 5.
  assert.deepEqual(
    { ...options, budgetMs: undefined },
    {
      floor: 3n,
      raiseTo: 5n,
      guard: true,
      exact: true,
      loadStep: false,
      maxCount: undefined,
      pool: false,
      generator,
      durability,
      budgetMs: undefined,
      budgetRoundTrips: 8,
      layout: "v1 servers=1 block=10 index=0",
    },
  );
  // 90% of the generator's timeout, within 90% of the attempt's limit (the whole 5 s here).
  assert.equal(options.budgetMs, 900);
  // Its round trip known now: a few of them (at least 200 ms), not the whole 5 s.
  await store.reserve("kvid", "asked", 1, { ...FLOOR_0, generator: { timeout: 100_000 } });
  const known = member.asked[1].options.budgetMs!;
  assert.ok(known >= 180 && known < 4000, `90% of a few round trips, got ${known}`);
  for (const generator of [{ timeout: 100_000 }, undefined]) {
    using fresh = await kvMembers(1);
    const recorder = new Recorder(fresh.stores[0]);
    await new InterleavedStore([recorder], { block: 10 }).reserve("kvid", "a", 1, {
      ...FLOOR_0,
      generator,
    });
    const budget = recorder.asked[0].options.budgetMs!;
    assert.ok(budget > 4000 && budget <= 4500, `90% of 5 s (${generator}), got ${budget}`);
  }
  // A raise below the floor: the floor's cycle.
  await store.reserve("kvid", "asked", 1, { ...FLOOR_0, floor: 95n, raiseTo: 20n });
  assert.equal(member.asked[2].options.floor, 10n);
  assert.equal(member.asked[2].options.raiseTo, 10n);
});

Deno.test("InterleavedStore: a member that fails is skipped and left to back off", async () => {
  using m = await kvMembers(2);
  const down = new Recorder(m.stores[0]);
  const up = new Recorder(m.stores[1]);
  down.script = () => {
    throw new Error("ECONNRESET");
  };
  const store = new InterleavedStore([down, up], { block: 10 });
  const served: number[] = [];
  for (let k = 0; k < 4; k++) {
    const r = await store.reserve("kvid", "skip", 10, FLOOR_0);
    served.push(memberOf(r.ranges[0].first, 2, 10));
  }
  assert.deepEqual(served, [1, 1, 1, 1], "only the member that answers serves");
  assert.ok(
    down.asked.length <= 1,
    `a member backing off is not tried first: ${down.asked.length}`,
  );
  assert.equal(up.asked.length, 4);
});

Deno.test("InterleavedStore: every member failing: one error naming each, its code by theirs", async () => {
  const reset = new Error("ECONNRESET");
  const one = new InterleavedStore([failing(reset)], { block: 10 });
  await assert.rejects(one.reserve("kvid", "all", 1, FLOOR_0), (err: KvIdError) => {
    assert.equal(err.code, "connection");
    assert.equal(
      err.message,
      'none of the 1 members could reserve: the store could not be reached: ECONNRESET (hash "kvid", field "all")',
    );
    assert.ok(err.cause instanceof KvIdError, "one member: its own error");
    assert.equal((err.cause as KvIdError).cause, reset);
    assert.equal(err.key, "kvid");
    assert.equal(err.field, "all");
    return true;
  });
  const busy = () => new KvIdError("reply", "ERR a statement this member refuses");
  const replies = new InterleavedStore([failing(busy()), failing(busy())], { block: 10 });
  await assert.rejects(replies.reserve("kvid", "all", 1, FLOOR_0), (err: KvIdError) => {
    assert.equal(err.code, "reply", "the same refusal from every member: not transient");
    assert.ok(err.cause instanceof AggregateError);
    assert.equal((err.cause as AggregateError).errors.length, 2);
    assert.match(err.message, /^none of the 2 members could reserve: ERR .*; ERR /);
    return true;
  });
  const mixed = new InterleavedStore([failing(busy()), failing(new Error("ECONNREFUSED"))]);
  await assert.rejects(mixed.reserve("kvid", "all", 1, FLOOR_0), { code: "connection" });
});

Deno.test("InterleavedStore: a refusal of the counter or the configuration is thrown at once", async () => {
  const refusals = [
    new KvIdError("config", "NOPERM this user has no permissions"),
    new KvIdError("overflow", "the counter would pass 2^63-1"),
    new KvIdError("reply", "not a hash", { reason: "not-a-hash" }),
    new KvIdError("reply", "not a counter", { reason: "not-a-counter" }),
    new KvIdError("reply", "a range", { reason: "unexpected-range" }),
  ];
  for (const refusal of refusals) {
    const a = failing(refusal);
    const b = failing(refusal);
    const store = new InterleavedStore([a, b], { block: 10 });
    await assert.rejects(store.reserve("kvid", "refused", 1, FLOOR_0), (err: KvIdError) => {
      assert.equal(err.code, refusal.code);
      assert.equal(err.reason, refusal.reason);
      const reason = refusal.message;
      assert.ok(/^member [01]: /.test(err.message) && err.message.includes(reason), err.message);
      assert.ok(err.message.endsWith(' (hash "kvid", field "refused")'), err.message);
      assert.equal(err.message.split("(hash").length, 2, `the counter named once: ${err.message}`);
      assert.equal(err.cause, refusal);
      assert.equal(err.field, "refused");
      return true;
    });
    assert.equal(a.calls + b.calls, 1, `${refusal.message}: no other member tried`);
  }
});

Deno.test("InterleavedStore: a member that does not answer in time is given up", async () => {
  const hung: Store = { reserve: () => new Promise<Reservation>(() => {}) };
  const store = new InterleavedStore([hung], { block: 10, timeout: 300 });
  await assert.rejects(store.reserve("kvid", "hung", 1, FLOOR_0), (err: KvIdError) => {
    assert.equal(err.code, "connection");
    assert.match(err.message, /member 0 did not answer within 300 ms/);
    return true;
  });
});

Deno.test("InterleavedStore: a member's reply is checked before its blocks are used", async () => {
  const cases: [string, Partial<Reservation>, RegExp][] = [
    ["no layout echoed", { layout: undefined, ranges: [{ first: 1n, last: 1n }] }, /layouts/],
    ["two ranges", { ranges: [{ first: 1n, last: 1n }, { first: 3n, last: 3n }] }, /unexpected/],
    ["no range", { ranges: [] }, /unexpected range/],
    ["two cycles for one", { ranges: [{ first: 1n, last: 2n }] }, /unexpected range/],
    ["cycle 0", { ranges: [{ first: 0n, last: 0n }] }, /unexpected range/],
    ["past 2^63-1", { ranges: [{ first: MAX_ID / 10n + 1n, last: MAX_ID / 10n + 1n }] }, /2\^63-1/],
  ];
  const bad = new InterleavedStore([replying(() => ({ ranges: [{ first: 1n, last: 2n }] }))]);
  await assert.rejects(bad.reserve("kvid", "r", 1, FLOOR_0), (err: KvIdError) => {
    assert.equal(err.reason, "unexpected-range");
    assert.equal((err.cause as KvIdError).reason, "unexpected-range");
    const reply = (err.cause as KvIdError).cause as Error;
    assert.equal(reply.message, '[{"first":"1","last":"2"}]', "the reply in the cause");
    return true;
  });
  for (const [what, reply, message] of cases) {
    const member = replying(() => reply);
    const store = new InterleavedStore([member], { block: 10 });
    await assert.rejects(store.reserve("kvid", "r", 1, FLOOR_0), message, what);
    assert.equal(member.calls, 1, what);
  }
  // The last cycle that fits: block (MAX_ID / 10 - 1) of one member ends at or below 2^63-1.
  const top = MAX_ID / 10n;
  const store = new InterleavedStore([replying(() => ({ ranges: [{ first: top, last: top }] }))], {
    block: 10,
  });
  const r = await store.reserve("kvid", "top", 1, FLOOR_0);
  assert.deepEqual(r.ranges, [{ first: (top - 1n) * 10n + 1n, last: top * 10n }]);
  assert.ok(r.ranges[0].last <= MAX_ID);
  // Member 1 of 2: its last cycle is (MAX_ID / 10 - 2) / 2; the next one is refused.
  const last1 = (top - 2n) / 2n;
  for (const [reply, fits] of [[last1 + 1n, true], [last1 + 2n, false]] as const) {
    const pair = new InterleavedStore([
      failing(new Error("ECONNRESET")),
      replying(() => ({ ranges: [{ first: reply, last: reply }] })),
    ], { block: 10 });
    const reserving = pair.reserve("kvid", "top", 1, FLOOR_0);
    if (fits) {
      const got = (await reserving).ranges;
      assert.deepEqual(got, [{
        first: (last1 * 2n + 1n) * 10n + 1n,
        last: (last1 * 2n + 2n) * 10n,
      }]);
      assert.ok(MAX_ID - got[0].last < 20n, "the last block of member 1 below 2^63-1");
    } else await assert.rejects(reserving, { code: "overflow" });
  }
  // A floor whose cycle would pass 2^63-1: refused before the member is asked.
  const member = replying(() => ({ ranges: [{ first: 1n, last: 1n }] }));
  const high = new InterleavedStore([member], { block: 10 });
  await assert.rejects(
    high.reserve("kvid", "top", 1, { ...FLOOR_0, floor: MAX_ID - 5n, raiseTo: MAX_ID - 5n }),
    { code: "overflow" },
  );
  await assert.rejects(
    high.reserve("kvid", "top", 20, { ...FLOOR_0, floor: top * 10n - 15n, raiseTo: 0n }),
    { code: "overflow" },
    "the last of the blocks asked past 2^63-1",
  );
  assert.equal(member.calls, 0);
  await high.reserve("kvid", "top", 10, { ...FLOOR_0, floor: top * 10n - 15n, raiseTo: 0n });
  assert.equal(member.calls, 1, "the last whole block fits");
});

Deno.test("InterleavedStore: raised only when a member went below this store's own mark", async () => {
  let cycle = 1n;
  const member = replying(() => ({ ranges: [{ first: cycle, last: cycle }], raised: true }));
  const store = new InterleavedStore([member], { block: 10 });
  const first = await store.reserve("kvid", "raised", 1, FLOOR_0);
  assert.equal(first.raised, false, "no mark yet: a first raise is the caller's floor");
  cycle = 2n;
  const second = await store.reserve("kvid", "raised", 1, FLOOR_0);
  assert.equal(second.raised, true, "below the mark: data lost");
  cycle = 5n;
  const third = await store.reserve("kvid", "raised", 1, { ...FLOOR_0, floor: 35n, raiseTo: 35n });
  assert.equal(third.raised, false, "raised to the caller's floor, above the mark: normal");
  const plain = replying(() => ({ ranges: [{ first: 1n, last: 1n }], raised: false }));
  const quiet = new InterleavedStore([plain], { block: 10 });
  await quiet.reserve("kvid", "q", 1, FLOOR_0);
  assert.equal((await quiet.reserve("kvid", "q", 1, FLOOR_0)).raised, false);
});

Deno.test("InterleavedStore: the members' durability merged; one down is probed before its use", async () => {
  const lossy: StoreDurability = {
    durable: false,
    settings: { appendonly: "no" },
    problems: ["appendonly is off"],
  };
  const good: StoreDurability = { durable: true, settings: { appendonly: "yes" }, problems: [] };
  let answer: StoreDurability | undefined = lossy; // undefined: the member is down
  const asked: DurabilityOptions[] = [];
  const probed = Object.assign(replying(() => ({ ranges: [{ first: 1n, last: 1n }] })), {
    durability(_key: string, options: DurabilityOptions) {
      asked.push(options);
      return answer ? Promise.resolve(answer) : Promise.reject(new Error("ECONNREFUSED"));
    },
  });
  const trusted = replying(() => ({ ranges: [{ first: 1n, last: 1n }] }));
  const refusal = new KvIdError("config", "refused: appendonly is off");
  const judged: StoreDurability[] = [];
  const options: DurabilityOptions = {
    field: "d",
    mode: "strict",
    stated: {},
    judge: (d) => (judged.push(d), d.durable ? undefined : refusal),
  };
  const trustedOnly = new InterleavedStore([trusted], { block: 10 });
  assert.deepEqual(await trustedOnly.durability("kvid", options), {
    durable: true,
    settings: { "0.probe": "none (trusted)" },
    problems: [],
    lossWithoutCrash: false,
  });
  const pair = new InterleavedStore([trusted, probed], { block: 10 });
  assert.deepEqual(await pair.durability("kvid", options), {
    durable: false,
    settings: { "0.probe": "none (trusted)", "1.appendonly": "no" },
    problems: ["server 1: appendonly is off"],
    lossWithoutCrash: false,
  });
  // Down at the generator's probe: left out, then probed before its first reservation.
  const store = new InterleavedStore([probed], { block: 10 });
  answer = undefined;
  const down = await store.durability("kvid", options);
  assert.equal(down.durable, true, "a member down is left out");
  assert.match(down.settings["0.probe"], /not yet/);
  answer = lossy;
  const before = asked.length;
  const refused = (err: KvIdError) => err.code === "config" && err.cause === refusal;
  await assert.rejects(store.reserve("kvid", "d", 1, FLOOR_0), refused);
  assert.equal(asked.length, before + 1, "probed at its use");
  assert.equal(asked.at(-1)?.reuse, false, "read from the server itself");
  await assert.rejects(store.reserve("kvid", "d", 1, FLOOR_0), refused, "again");
  assert.equal(probed.calls, 0, "never reserved on while refused");
  answer = good;
  await store.reserve("kvid", "d", 1, FLOOR_0);
  assert.equal(probed.calls, 1, "served once its server is durable");
  // In a pair, the member probed at its use is judged alone; one that goes down is forgotten.
  assert.equal((await pair.durability("kvid", options)).durable, true);
  answer = undefined;
  assert.match((await pair.durability("kvid", options)).settings["1.probe"], /not yet/);
  answer = lossy;
  judged.length = 0;
  for (let k = 0; k < 2 && judged.length === 0; k++) {
    await pair.reserve("kvid", "d", 1, FLOOR_0).catch((err) => assert.equal(err.cause, refusal));
  }
  assert.deepEqual(judged, [{
    durable: false,
    settings: { "0.probe": "not yet (unreachable; probed at its next use)", "1.appendonly": "no" },
    problems: ["server 1: appendonly is off"],
    lossWithoutCrash: false,
  }]);
});

Deno.test("InterleavedStore: forgetReads reaches every member that shares reads", () => {
  let forgotten = 0;
  const sharing = Object.assign(failing(new Error("unused")), {
    forgetReads: () => void forgotten++,
  });
  const store = new InterleavedStore([sharing, failing(new Error("unused"))]);
  store.forgetReads();
  assert.equal(forgotten, 1);
});

Deno.test("checkLayout: a layout must match, a single-store counter is refused, and the reverse", () => {
  const where = { key: "kvid", field: "order" };
  const asked = layoutOf(2, 10, 1);
  assert.equal(asked, "v1 servers=2 block=10 index=1");
  assert.equal(LAYOUT_FIELD_PREFIX, "\u0000layout:");
  checkLayout(null, 0n, undefined, where);
  checkLayout(undefined, 5n, undefined, where);
  checkLayout(asked, 5n, asked, where);
  checkLayout(undefined, 0n, asked, where);
  checkLayout(null, 0n, asked, where);
  const refused = (f: () => void, message: RegExp) =>
    assert.throws(f, (err: KvIdError) => {
      assert.equal(err.code, "config");
      assert.equal(err.key, "kvid");
      assert.equal(err.field, "order");
      assert.match(err.message, message);
      return true;
    });
  refused(
    () => checkLayout(asked, 0n, undefined, where),
    /belongs to interleaved servers \(layout "v1 servers=2 block=10 index=1"\)/,
  );
  refused(
    () => checkLayout(layoutOf(3, 10, 1), 7n, asked, where),
    /holds the layout "v1 servers=3/,
  );
  refused(
    () => checkLayout(undefined, 7n, asked, where),
    /single-store one \(value 7, no layout\)/,
  );
  refused(() => checkLayout(null, 7n, asked, where), /single-store one/);
  // A layout read back as bytes or a number is compared as text.
  checkLayout({ toString: () => asked }, 3n, asked, where);
});

Deno.test("InterleavedStore: the first member tried is drawn at random", async () => {
  const firsts = new Set<number>();
  for (let k = 0; k < 64 && firsts.size < 2; k++) {
    const a = replying(() => ({ ranges: [{ first: 1n, last: 1n }] }));
    const b = replying(() => ({ ranges: [{ first: 1n, last: 1n }] }));
    await new InterleavedStore([a, b], { block: 10 }).reserve("kvid", "random", 1, FLOOR_0);
    firsts.add(a.calls === 1 ? 0 : 1);
  }
  assert.equal(firsts.size, 2, "both members started with (a 2^-63 chance of a false failure)");
});

Deno.test("InterleavedStore: no member is tried once the caller's time is spent", async () => {
  // The first member blocks the event loop past the whole timeout before it fails.
  let tried = 0;
  const blocking: Store = {
    reserve() {
      tried++;
      const until = performance.now() + 400;
      while (performance.now() < until) { /* a blocked event loop */ }
      return Promise.reject(new Error("ECONNRESET"));
    },
  };
  for (let k = 0; k < 16; k++) {
    tried = 0;
    const other = replying(() => ({ ranges: [{ first: 1n, last: 1n }] }));
    const store = new InterleavedStore([blocking, other], { block: 10, timeout: 300 });
    const outcome = await store.reserve("kvid", "spent", 1, FLOOR_0).then(() => "served", (e) => e);
    if (tried === 0) continue; // the other member was tried first and served
    assert.equal(other.calls, 0, "tried after the deadline");
    assert.equal((outcome as KvIdError).code, "connection");
    return;
  }
  assert.fail("the blocking member was never tried first");
});

Deno.test("InterleavedStore: a member whose round trip is unknown gets a fair share of the time left", async () => {
  const seen = new Set<string>();
  for (let k = 0; k < 64 && seen.size < 2; k++) {
    const down = failing(new Error("ECONNRESET"));
    let budget = 0;
    const up = replying((options) => {
      budget = options.budgetMs!;
      return { ranges: [{ first: 1n, last: 1n }] };
    });
    await new InterleavedStore([down, up], { block: 10 }).reserve("kvid", "share", 1, FLOOR_0);
    if (down.calls === 1) {
      seen.add("second");
      assert.ok(budget > 4000 && budget <= 4500, `all that is left, 90%: ${budget}`);
    } else {
      seen.add("first");
      assert.ok(budget > 2000 && budget <= 2250, `half of 5 s, 90%: ${budget}`);
    }
  }
  assert.equal(seen.size, 2);
});

// Last in the file: what the round-trip estimate learns from late replies (a late reply is one
// given up on; each is awaited, then a macrotask lets the store's callbacks run).
Deno.test("InterleavedStore: a late reply raises the round trip waited for; a late failure does not", async () => {
  for (const late of ["fulfilled", "rejected"] as const) {
    let call = 0;
    let lateReply: Promise<unknown> = Promise.resolve();
    const budgets: number[] = [];
    const member: Store = {
      reserve(_key: string, _field: string, _count: number, options: AnyReserveOptions) {
        budgets.push(options.budgetMs!);
        const reply = { ranges: [{ first: 1n, last: 1n }], raised: false, layout: options.layout };
        if (++call !== 2) return Promise.resolve(reply);
        const delayed = new Promise<Reservation>((resolve, reject) =>
          setTimeout(() => late === "fulfilled" ? resolve(reply) : reject(new Error("late")), 600)
        );
        lateReply = delayed.catch(() => {});
        return delayed;
      },
    };
    const store = new InterleavedStore([member], { block: 10, timeout: 20_000 });
    await store.reserve("kvid", "late", 1, FLOOR_0);
    // A known, quick round trip: a few of them, at least 200 ms, not 600.
    await assert.rejects(store.reserve("kvid", "late", 1, FLOOR_0), { code: "connection" });
    await lateReply;
    await new Promise((resolve) => setTimeout(resolve, 0));
    await store.reserve("kvid", "late", 1, FLOOR_0);
    const after = budgets[2];
    if (late === "fulfilled") {
      assert.ok(after >= 0.9 * 8 * 600 && after < 12_000, `8 round trips of >= 600 ms: ${after}`);
    } else {
      assert.ok(after < 0.9 * 8 * 600, `a late failure teaches nothing: ${after}`);
    }
  }
});

/** A member answering each reservation after `delays[call]` ms (the last delay repeats). */
function slow(delays: number[]) {
  const budgets: number[] = [];
  const member: Store = {
    reserve(_key: string, _field: string, _count: number, options: AnyReserveOptions) {
      budgets.push(options.budgetMs!);
      const ms = delays[Math.min(budgets.length - 1, delays.length - 1)];
      const reply = { ranges: [{ first: 1n, last: 1n }], raised: false, layout: options.layout };
      if (ms === 0) return Promise.resolve(reply);
      return new Promise<Reservation>((resolve) => setTimeout(() => resolve(reply), ms));
    },
  };
  return { member, budgets };
}

Deno.test("InterleavedStore: the round trip waited for is smoothed over the replies in time", async () => {
  // 300 ms, then at once: the estimate is 7/8 of 300 plus 1/8 of the second, not the last one.
  const { member, budgets } = slow([300, 0]);
  const store = new InterleavedStore([member], { block: 10, timeout: 20_000 });
  for (let k = 0; k < 3; k++) await store.reserve("kvid", "smooth", 1, FLOOR_0);
  assert.ok(budgets[2] >= 0.9 * 8 * 0.875 * 300, `8 round trips of >= 262 ms: ${budgets[2]}`);
});

Deno.test("InterleavedStore: a known round trip is waited for at most the timeout's share", async () => {
  // Member 1 answers in >= 100 ms, so 8 round trips (>= 800 ms) pass 1,000 / 2 members.
  const { member, budgets } = slow([100]);
  const store = new InterleavedStore([failing(new Error("ECONNRESET")), member], {
    block: 10,
    timeout: 1_000,
  });
  await store.reserve("kvid", "share", 1, FLOOR_0);
  await store.reserve("kvid", "share", 1, FLOOR_0);
  assert.equal(budgets[1], 450, "90% of 500 ms");
});

Deno.test("InterleavedStore: a member that failed once is tried again after its backoff", async () => {
  const { member: up, budgets } = slow([0]);
  let failures = 1;
  const flaky = new Recorder(up);
  flaky.script = () => {
    if (failures-- > 0) throw new Error("ECONNRESET");
  };
  const steady = replying(() => ({ ranges: [{ first: 1n, last: 1n }] }));
  const store = new InterleavedStore([flaky, steady], { block: 10 });
  // Until the flaky member has been tried (and failed) once.
  for (let k = 0; k < 64 && flaky.asked.length === 0; k++) {
    await store.reserve("kvid", "backoff", 1, FLOOR_0);
  }
  const failed = performance.now();
  assert.equal(flaky.asked.length, 1);
  assert.equal(budgets.length, 0);
  // At most 100 ms (half to all of 100 ms after a first failure), then due again: tried first,
  // since the steady member served last.
  while (performance.now() < failed + 105) await new Promise((r) => setTimeout(r, 10));
  await store.reserve("kvid", "backoff", 1, FLOOR_0);
  assert.equal(flaky.asked.length, 2, "due again after its backoff");
  assert.equal(budgets.length, 1, "and served");
});
