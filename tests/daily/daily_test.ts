/**
 * DailyId: date-prefixed daily serials, against a real server with an injected clock.
 */

import "../support/deadline.ts"; // a time limit on every test of this file
import assert from "node:assert/strict";
import { configure, type DailyCleanupDetail, DailyId } from "../../mod.ts";
import { addDays, ZonedDays } from "../../src/daily/calendar.ts";
import { MAX_DIGITS } from "../../src/daily/daily.ts";
import { openClient, Spy } from "../support/redis_clients.ts";
import {
  command,
  ownServers,
  startNoScriptingServer,
  startServer,
} from "../support/redis_server.ts";
import { assertIncreasing, rejectsWith } from "../support/assert.ts";
import type { DayCleanup, ServerClock, Store } from "../../src/stores/mod.ts";

/** A wall clock the test sets by hand. */
function wallClock(iso: string) {
  let now = Date.parse(iso);
  return {
    now: () => now,
    set: (at: string) => void (now = Date.parse(at)),
    advance: (ms: number) => void (now += ms),
  };
}

/** A fixed-offset zone where it is now about noon: a test in it never spans a midnight. */
function noonZone(): string {
  const offset = ((12 - new Date().getUTCHours() + 36) % 24) - 12; // -12 .. 11 hours
  return `${offset < 0 ? "-" : "+"}${String(Math.abs(offset)).padStart(2, "0")}:00`;
}

const hget = async (url: string, key: string, field: string) =>
  await command(url, "HGET", key, field) as string | null;

Deno.test("ZonedDays: local midnights, DST days and skipped midnights", () => {
  const cases: [zone: string, at: string, day: string, ends: string, next: string][] = [
    ["UTC", "2026-11-30T23:59:59.999Z", "20261130", "2026-12-01T00:00:00Z", "20261201"],
    ["Asia/Shanghai", "2026-11-30T15:59:59.999Z", "20261130", "2026-11-30T16:00:00Z", "20261201"],
    ["Asia/Kolkata", "2026-01-01T00:00:00Z", "20260101", "2026-01-01T18:30:00Z", "20260102"],
    // A 23-hour day (spring forward at 02:00) and a 25-hour day (fall back).
    ["America/New_York", "2026-03-08T05:00:00Z", "20260308", "2026-03-09T04:00:00Z", "20260309"],
    ["America/New_York", "2026-03-08T06:59:59Z", "20260308", "2026-03-09T04:00:00Z", "20260309"],
    ["America/New_York", "2026-11-01T04:00:00Z", "20261101", "2026-11-02T05:00:00Z", "20261102"],
    // Chile: midnight does not exist (24:00 -> 01:00), then a day whose last hour repeats.
    ["America/Santiago", "2026-09-05T12:00:00Z", "20260905", "2026-09-06T04:00:00Z", "20260906"],
    ["America/Santiago", "2026-04-04T12:00:00Z", "20260404", "2026-04-05T04:00:00Z", "20260405"],
    ["America/Santiago", "2026-04-05T03:30:00Z", "20260404", "2026-04-05T04:00:00Z", "20260405"],
    // Samoa skipped 30 December 2011.
    ["Pacific/Apia", "2011-12-29T12:00:00Z", "20111229", "2011-12-30T10:00:00Z", "20111231"],
  ];
  for (const [zone, at, day, ends, next] of cases) {
    const z = new ZonedDays(zone);
    const t = Date.parse(at);
    const d = z.dayAt(t);
    assert.equal(d.text, day, `${zone} at ${at}`);
    const end = z.endOf(d, t);
    assert.equal(new Date(end).toISOString(), new Date(ends).toISOString(), `${zone} ${day} ends`);
    assert.equal(z.dayAt(end).text, next);
    assert.equal(z.dayAt(end - 1).text, day);
  }
  assert.equal(new ZonedDays("asia/shanghai").timeZone, "Asia/Shanghai");
  assert.equal(
    addDays(new ZonedDays("UTC").dayAt(Date.parse("2024-03-01T00:00Z")), -1).text,
    "20240229",
  );
});

Deno.test("ZonedDays: every instant before the computed end is on the same day", () => {
  // Deterministic pseudo-random instants over 2020-2030 in zones with and without DST.
  let seed = 42;
  const rand = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  const from = Date.parse("2020-01-01T00:00:00Z");
  const span = Date.parse("2030-01-01T00:00:00Z") - from;
  for (const zone of ["Europe/Berlin", "America/Santiago", "Australia/Lord_Howe", "Asia/Tehran"]) {
    const z = new ZonedDays(zone);
    for (let i = 0; i < 150; i++) {
      const t = from + Math.floor(rand() * span);
      const day = z.dayAt(t);
      const end = z.endOf(day, t);
      assert.ok(end > t && end - t <= 25 * 3600_000, `${zone} ${t}: ${end - t} ms left`);
      assert.equal(z.dayAt(end - 1).ymd, day.ymd, `${zone} ${t}`);
      assert.ok(z.dayAt(end).ymd > day.ymd, `${zone} ${t}`);
      const mid = t + Math.floor((end - t) * rand());
      assert.equal(z.dayAt(mid).ymd, day.ymd, `${zone} ${t} mid`);
    }
  }
});

Deno.test("DailyId options are validated at construction", () => {
  const redis = {
    hincrby: () => Promise.resolve(1),
    eval: () => Promise.resolve(),
    evalsha: () => Promise.resolve(),
  };
  assert.deepEqual(MAX_DIGITS, { number: 7, bigint: 10, string: 10 });
  // 99991231 * 10^7 + 9,999,999 is a safe integer; with 8 digits it is not.
  assert.ok(Number.isSafeInteger(99991231 * 10 ** 7 + 10 ** 7 - 1));
  assert.ok(!Number.isSafeInteger(99991231 * 10 ** 8 + 10 ** 8 - 1));
  assert.ok(99991231n * 10n ** 10n + 10n ** 10n - 1n <= 2n ** 63n - 1n);
  assert.ok(99991231n * 10n ** 11n + 10n ** 11n - 1n > 2n ** 63n - 1n);

  new DailyId("a", { redis, digits: 7 });
  new DailyId("a", { redis, digits: 10, format: "bigint" });
  new DailyId("a", { redis, digits: 10, format: "string" });
  assert.throws(() => new DailyId("a", { redis, digits: 8 }), /between 1 and 7.*bigint/);
  assert.throws(() => new DailyId("a", { redis, digits: 11, format: "bigint" }), RangeError);
  assert.throws(() => new DailyId("a", { redis, digits: 0 }), RangeError);
  assert.throws(() => new DailyId("a", { redis, digits: 2.5 }), /integer/);
  assert.throws(() => new DailyId("a", { redis, timeZone: "Mars/Base" }), /unknown time zone/);
  // @ts-expect-error: a wrong format
  assert.throws(() => new DailyId("a", { redis, format: "hex" }), TypeError);
  // @ts-expect-error: bigint is spelled format: "bigint" here
  assert.throws(() => new DailyId("a", { redis, bigint: true }), /format: "bigint"/);
  // @ts-expect-error: an unknown option
  assert.throws(() => new DailyId("a", { redis, digit: 3 }), /unknown option "digit"/);
  assert.throws(() => new DailyId("", { redis }), TypeError);
  assert.throws(() => new DailyId("a", { redis, keepDays: 0 }), /keepDays/);
  assert.throws(() => new DailyId("a", { redis, minStep: 100, digits: 2 }), /minStep/);
  assert.throws(() => new DailyId("a", { redis, key: "" }), /key/);
  assert.throws(() => new DailyId("a", { redis, timeout: 0 }), /timeout/);
  const id = new DailyId("order", { redis, digits: 2, maxStep: 1000 });
  assert.equal(id.key, "kvid:daily:order");
  assert.equal(id.timeZone, "UTC");
  assert.deepEqual(id.parse(2026113042), { day: "20261130", seq: 42 });
  assert.deepEqual(id.parse("2026113001"), { day: "20261130", seq: 1 });
  assert.throws(() => id.parse(20261130042), RangeError);
});

Deno.test("DailyId against a real server", async (t) => {
  await using server = await startServer();
  await using client = await openClient("node-redis", server.url);
  const redis = client.redis;
  const url = server.url;

  await t.step("IDs are yyyymmdd * 10^digits + seq from 1; the first use is one call", async () => {
    const clock = wallClock("2026-11-30T10:00:00Z");
    const spy = new Spy(redis);
    await using id = new DailyId("basic", { redis: spy, clock: clock.now });
    assert.equal(await id.next(), 20261130000001);
    assert.equal(spy.calls, 1, "no init round trip: the script creates the field");
    const ids = [await id.next()];
    for (let i = 0; i < 999; i++) ids.push(await id.next());
    ids.push(...await id.nextBatch(1000));
    assertIncreasing(ids);
    assert.equal(ids[0], 20261130000002);
    assert.equal(ids.at(-1), 20261130002001);
    assert.equal(id.stats().day, "20261130");
    assert.equal(id.stats().dayEndsAt, Date.parse("2026-12-01T00:00:00Z"));
    assert.deepEqual(await command(url, "HKEYS", "kvid:daily:basic"), ["20261130"]);
    assert.ok(Number(await hget(url, "kvid:daily:basic", "20261130")) >= 2001);
  });

  await t.step("string and bigint formats", async () => {
    const clock = wallClock("2026-11-30T10:00:00Z");
    await using s = new DailyId("fmt-s", { redis, clock: clock.now, format: "string", digits: 4 });
    assert.equal(await s.next(), "202611300001");
    assert.deepEqual(await s.nextBatch(2), ["202611300002", "202611300003"]);
    await using b = new DailyId("fmt-b", { redis, clock: clock.now, format: "bigint", digits: 10 });
    assert.equal(await b.next(), 202611300000000001n);
    assert.deepEqual(await b.nextBatch(2), [202611300000000002n, 202611300000000003n]);
    assert.deepEqual(b.parse(202611300000000003n), { day: "20261130", seq: 3 });
    await using k = new DailyId("fmt-k", { redis, clock: clock.now, key: "orders:daily" });
    assert.equal(await k.next(), 20261130000001);
    assert.ok(Number(await hget(url, "orders:daily", "20261130")) >= 1);
  });

  await t.step("rollover at UTC midnight drops the buffered IDs of the day before", async () => {
    const clock = wallClock("2026-11-30T23:59:59.998Z");
    await using id = new DailyId("roll", { redis, clock: clock.now, minStep: 100, maxStep: 100 });
    assert.equal(await id.next(), 20261130000001);
    clock.advance(1); // 23:59:59.999
    assert.equal(await id.next(), 20261130000002);
    assert.ok(id.stats().counter!.remaining > 90, "the day's segment is buffered");
    clock.advance(1); // midnight
    assert.equal(await id.next(), 20261201000001);
    assert.deepEqual(await id.nextBatch(3), [20261201000002, 20261201000003, 20261201000004]);
    assert.equal(id.stats().day, "20261201");
    assert.equal(id.stats().days, 2);
    // The clock stepping back does not take IDs back to the previous day.
    clock.set("2026-11-30T23:59:00Z");
    assert.equal(await id.next(), 20261201000005);
    clock.set("2026-12-01T00:00:01Z");
    assert.equal(await id.next(), 20261201000006);
    // The day's unused serials were given back when its generator closed at midnight.
    assert.equal(await hget(url, "kvid:daily:roll", "20261130"), "2");
  });

  await t.step("a new day starts at the step the day before reached", async () => {
    const clock = wallClock("2026-11-30T23:59:00Z");
    const spy = new Spy(redis);
    await using id = new DailyId("carry", { redis: spy, clock: clock.now, maxStep: 1000 });
    for (let i = 0; i < 200; i++) await id.next(); // fast: the step doubles
    const reached = id.stats().counter!.step;
    assert.ok(reached >= 16, `step ${reached}`);
    clock.set("2026-12-01T00:00:00Z");
    const before = spy.counts.length;
    assert.equal(await id.next(), 20261201000001);
    assert.equal(spy.counts[before], reached, "no ramp-up from minStep after midnight");
  });

  await t.step("rollover at Shanghai midnight (16:00 UTC)", async () => {
    const clock = wallClock("2026-11-30T15:59:59.999Z");
    await using id = new DailyId("sh", { redis, clock: clock.now, timeZone: "Asia/Shanghai" });
    assert.equal(await id.next(), 20261130000001);
    assert.equal(id.stats().dayEndsAt, Date.parse("2026-11-30T16:00:00Z"));
    clock.advance(1);
    assert.equal(await id.next(), 20261201000001);
    assert.equal(id.stats().dayEndsAt, Date.parse("2026-12-01T16:00:00Z"));
  });

  await t.step("DST days: 23 and 25 hours in New York, no midnight in Santiago", async () => {
    const cases = [
      ["America/New_York", "2026-03-09T03:59:59.999Z", "20260308", "20260309"],
      ["America/New_York", "2026-11-02T04:59:59.999Z", "20261101", "20261102"],
      ["America/Santiago", "2026-09-06T03:59:59.999Z", "20260905", "20260906"],
      ["America/Santiago", "2026-04-05T03:59:59.999Z", "20260404", "20260405"],
    ];
    for (const [timeZone, at, before, after] of cases) {
      const clock = wallClock(at);
      await using id = new DailyId(`dst-${timeZone}-${before}`, {
        redis,
        clock: clock.now,
        timeZone,
        format: "string",
      });
      assert.equal(await id.next(), `${before}000001`, `${timeZone} ${at}`);
      clock.advance(1);
      assert.equal(await id.next(), `${after}000001`, `${timeZone} ${at} + 1 ms`);
    }
    // The 25-hour day: at 23:30 after the repeated hour it is still 1 November.
    const clock = wallClock("2026-11-01T04:00:00Z");
    await using ny = new DailyId("dst-25h", {
      redis,
      clock: clock.now,
      timeZone: "America/New_York",
    });
    assert.equal(await ny.next(), 20261101000001);
    assert.equal(ny.stats().dayEndsAt! - Date.parse("2026-11-01T04:00:00Z"), 25 * 3600_000);
    clock.set("2026-11-02T04:30:00Z");
    assert.equal(await ny.next(), 20261101000002);
  });

  await t.step("a call waiting for a reservation across midnight gets today's ID", async () => {
    const clock = wallClock("2026-11-30T23:59:59.999Z");
    const spy = new Spy(redis);
    let open!: () => void;
    spy.gate = new Promise((r) => open = r);
    await using id = new DailyId("wait", { redis: spy, clock: clock.now, minStep: 10 });
    const pending = id.next(); // waits for the first reservation of 30 November
    await spy.sent(1);
    clock.advance(1); // midnight while the reply is held back
    const second = id.next(); // starts 1 December, closing 30 November's generator
    open();
    spy.gate = undefined;
    // The first call was dropped from 30 November's generator and retried after the second.
    assert.deepEqual(
      (await Promise.all([pending, second])).sort(),
      [20261201000001, 20261201000002],
    );
    // 30 November's reservation may or may not have reached the server (and been given back
    // when it landed after its generator closed); none of it was issued.
    assert.ok(["10", "0", null].includes(await hget(url, "kvid:daily:wait", "20261130")));

    // The same with a single caller: the reply arrives after midnight and is dropped.
    const late = wallClock("2026-12-01T23:59:59.999Z");
    const spy2 = new Spy(redis);
    spy2.gate = new Promise((r) => open = r);
    await using id2 = new DailyId("wait2", { redis: spy2, clock: late.now, minStep: 10 });
    const p = id2.next();
    await spy2.sent(1);
    late.advance(1);
    open();
    spy2.gate = undefined;
    assert.equal(await p, 20261202000001);
    // Reserved, seq 1 dropped as dated yesterday; 2..10 given back when the day's generator
    // closed (or "10" while that is still in flight).
    const w2 = String(await hget(url, "kvid:daily:wait2", "20261201"));
    assert.ok(["10", "1"].includes(w2), w2);
  });

  await t.step(
    "seq past 10^digits - 1 is an overflow error, never another day's number",
    async () => {
      const clock = wallClock("2026-11-30T12:00:00Z");
      const spy = new Spy(redis);
      await using id = new DailyId("ovf", {
        redis: spy,
        clock: clock.now,
        digits: 2,
        minStep: 10,
        maxStep: 1000,
      });
      const ids = await id.nextBatch(99);
      assert.equal(ids[0], 2026113001);
      assert.equal(ids.at(-1), 2026113099);
      const err = await rejectsWith(id.next(), "overflow", /20261130.*99 serials/);
      assert.equal(err.field, "20261130");
      const calls = spy.calls;
      await rejectsWith(id.next(), "overflow");
      await rejectsWith(id.nextBatch(1), "overflow");
      assert.equal(spy.calls, calls, "a full day fails fast, with no more reservations");
      assert.ok(id.stats().full);
      clock.set("2026-12-01T00:00:00Z");
      assert.equal(await id.next(), 2026120101, "the next day starts again at 1");

      // A counter raised by another writer near the limit.
      await command(url, "HSET", "kvid:daily:ovf2", "20261130", "97");
      await using id2 = new DailyId("ovf2", { redis, clock: clock.now, digits: 2 });
      clock.set("2026-11-30T12:00:00Z");
      assert.equal(await id2.next(), 2026113098);
      assert.equal(await id2.next(), 2026113099);
      await rejectsWith(id2.next(), "overflow");
      // A batch that would cross the limit is refused whole.
      await using id3 = new DailyId("ovf3", { redis, clock: clock.now, digits: 2 });
      await rejectsWith(id3.nextBatch(100), "overflow");
    },
  );

  await t.step("two processes on one day share the counter without duplicates", async () => {
    await using other = await openClient("ioredis", url);
    const clock = wallClock("2026-11-30T08:00:00Z");
    await using a = new DailyId("two", { redis, clock: clock.now, minStep: 7, maxStep: 50 });
    await using b = new DailyId("two", { redis: other.redis, clock: clock.now, minStep: 3 });
    const fromA: number[] = [];
    const fromB: number[] = [];
    await Promise.all([
      (async () => {
        for (let i = 0; i < 1500; i++) fromA.push(await a.next());
      })(),
      (async () => {
        for (let i = 0; i < 1500; i++) fromB.push(await b.next());
      })(),
    ]);
    assertIncreasing(fromA);
    assertIncreasing(fromB);
    const all = new Set([...fromA, ...fromB]);
    assert.equal(all.size, 3000);
    for (const x of all) assert.equal(Math.floor(x / 1e6), 20261130);
  });

  await t.step("two OS processes on one day: no duplicates", async () => {
    const at = Date.parse("2026-11-30T09:00:00Z");
    const child = new Deno.Command(Deno.execPath(), {
      args: [
        "eval",
        `import { createClient } from "redis";
         import { DailyId, fromNodeRedis } from "./mod.ts";
         const c = await createClient({ url: Deno.env.get("URL") }).connect();
         const id = new DailyId("procs", { redis: fromNodeRedis(c), clock: () => ${at}, maxStep: 5 });
         const ids = [];
         for (let i = 0; i < 2000; i++) ids.push(await id.next());
         console.log(JSON.stringify(ids));
         await id.close();
         c.destroy();`,
      ],
      cwd: new URL("../..", import.meta.url).pathname,
      env: { URL: url },
      stdout: "piped",
      stderr: "piped",
    }).output();
    let done = false;
    const childDone = child.finally(() => done = true);
    await using id = new DailyId("procs", { redis, clock: () => at, maxStep: 5 });
    const mine: number[] = [];
    // Issue until the child is done (pausing now and then so it gets the CPU too).
    const until = performance.now() + 30_000;
    while (!done && performance.now() < until) {
      mine.push(await id.next());
      if (mine.length % 100 === 0) await new Promise((r) => setTimeout(r, 1));
    }
    const out = await childDone;
    assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
    const theirs: number[] = JSON.parse(new TextDecoder().decode(out.stdout));
    assert.equal(theirs.length, 2000);
    assertIncreasing(mine);
    assertIncreasing(theirs);
    assert.equal(new Set([...mine, ...theirs]).size, mine.length + theirs.length);
    // Both really reserved in turns: each holds IDs above the other's lowest.
    // Both lists increase (asserted above): first and last are the lowest and the highest.
    assert.ok(mine.at(-1)! > theirs[0] && theirs.at(-1)! > mine[0]);
  });

  await t.step("a restart mid-day continues above what the last run reserved", async () => {
    const clock = wallClock("2026-11-30T08:00:00Z");
    const first = new DailyId("restart", { redis, clock: clock.now, minStep: 50 });
    const before = await first.nextBatch(10);
    await first.close();
    await rejectsWith(first.next(), "closed");
    clock.advance(3600_000);
    await using again = await openClient("node-redis", url);
    await using second = new DailyId("restart", { redis: again.redis, clock: clock.now });
    const after = await second.next();
    assert.equal(before.at(-1), 20261130000010);
    assert.equal(after, 20261130000011, "the rest of the last run's segment was given back");
  });

  await t.step("cleanup({ keepDays }) deletes older day fields only", async () => {
    const key = "kvid:daily:clean";
    for (let d = 1; d <= 30; d++) {
      await command(url, "HSET", key, `202611${String(d).padStart(2, "0")}`, String(d));
    }
    await command(url, "HSET", key, "note", "x", "2026110", "1", "19991231x", "1");
    const clock = wallClock("2026-11-30T10:00:00Z");
    await using id = new DailyId("clean", { redis, clock: clock.now });
    // Today is 0 days old: keepDays 7 keeps 23..30 November.
    assert.equal(await id.cleanup({ keepDays: 7 }), 22);
    const left = (await command(url, "HKEYS", key) as string[]).sort();
    assert.deepEqual(left, [
      "19991231x",
      "2026110",
      "20261123",
      "20261124",
      "20261125",
      "20261126",
      "20261127",
      "20261128",
      "20261129",
      "20261130",
      "note",
    ]);
    assert.equal(await id.cleanup({ keepDays: 7 }), 0);
    await assert.rejects(id.cleanup({ keepDays: 0 }), /keepDays/);
    await assert.rejects(id.cleanup({ keepDays: 1.5 }), /keepDays/);
    // Shanghai is already on 1 December at 16:00 UTC.
    await using sh = new DailyId("clean", {
      redis,
      clock: () => Date.parse("2026-11-30T16:00:00Z"),
      timeZone: "Asia/Shanghai",
    });
    assert.equal(await sh.cleanup({ keepDays: 7 }), 1, "24 November is 7 days old there");

    await command(url, "SET", "kvid:daily:notahash", "x");
    await using bad = new DailyId("notahash", { redis, clock: clock.now });
    await rejectsWith(bad.cleanup({ keepDays: 3 }), "reply", /not a hash/);
  });

  await t.step("automatic cleanup when a day starts", async () => {
    const key = "kvid:daily:auto";
    await command(url, "HSET", key, "20261120", "5", "20261128", "5", "20261129", "5");
    const clock = wallClock("2026-11-30T10:00:00Z");
    const events: DailyCleanupDetail[] = [];
    const id = new DailyId("auto", { redis, clock: clock.now, keepDays: 1 });
    id.addEventListener(
      "cleanup",
      (e) => events.push((e as CustomEvent<DailyCleanupDetail>).detail),
    );
    assert.equal(await id.next(), 20261130000001);
    await id.close(); // waits for the background cleanup
    assert.deepEqual(events, [{ before: "20261129", deleted: 2, error: undefined }]);
    assert.deepEqual((await command(url, "HKEYS", key) as string[]).sort(), [
      "20261129",
      "20261130",
    ]);
  });

  await t.step("configure() default client, close() and a broken clock", async () => {
    const clock = wallClock("2026-11-30T10:00:00Z");
    const id = new DailyId("conf", { clock: clock.now });
    configure({ redis });
    try {
      assert.equal(await id.next(), 20261130000001);
      assert.equal(await id.cleanup({ keepDays: 3 }), 0);
    } finally {
      configure({ redis: undefined });
      await id.close();
    }
    await rejectsWith(id.next(), "closed");
    await rejectsWith(id.nextBatch(2), "closed");
    await id.close();
    await using broken = new DailyId("broken", { redis, clock: () => NaN });
    await rejectsWith(broken.next(), "config", /clock returned/);
  });
});

Deno.test("DailyId cleanup: a clock running ahead never deletes a day others still use", async () => {
  await using server = await startServer();
  const url = server.url;
  await using a = await openClient("node-redis", url);
  await using b = await openClient("ioredis", url);
  const timeZone = noonZone();
  const zone = new ZonedDays(timeZone);
  const today = zone.dayAt(Date.now());
  const day = (n: number) => addDays(today, n).text;
  const key = "kvid:daily:skew";
  await command(url, "HSET", key, day(-3), "9", day(-2), "9", day(-1), "9");
  const DAY = 86_400_000;
  const options = { timeZone, minStep: 5, maxStep: 5, prefetchAt: 0 };

  // Right clocks: two processes share today's counter.
  await using right = new DailyId("skew", { ...options, redis: a.redis });
  const first = [await right.next(), await right.next()];
  assert.equal(right.parse(first[0]).day, today.text);

  // A process two days ahead starts "its" day with keepDays 1 and cleans up in the background.
  const cleaned: DailyCleanupDetail[] = [];
  const ahead = new DailyId("skew", {
    ...options,
    redis: b.redis,
    keepDays: 1,
    clock: () => Date.now() + 2 * DAY,
  });
  ahead.addEventListener("cleanup", (e) => cleaned.push((e as CustomEvent).detail));
  assert.equal(ahead.parse(await ahead.next()).day, day(2));
  await ahead.close(); // waits for the cleanup
  // Dated by the server's clock: days before yesterday went, today stayed.
  assert.deepEqual(cleaned, [{ before: day(-1), deleted: 2, error: undefined }]);
  assert.equal(await hget(url, key, today.text), "5");
  // Called by hand, too.
  await using ahead2 = new DailyId("skew", {
    ...options,
    redis: b.redis,
    clock: () => Date.now() + 5 * DAY,
  });
  assert.equal(await ahead2.cleanup({ keepDays: 1 }), 0);
  assert.equal(await hget(url, key, today.text), "5");

  // A process with the right clock that starts now continues today's serials.
  await using later = new DailyId("skew", { ...options, redis: b.redis });
  const next = await later.next();
  assert.ok(!first.includes(next) && next > first[1], `re-issued ${next}`);
  assert.deepEqual((await command(url, "HKEYS", key) as string[]).sort(), [
    day(-1),
    today.text,
    day(2),
  ]);
});

Deno.test("DailyId cleanup: a process lagging the server's clock by less than keepDays keeps its day", async () => {
  await using server = await startServer();
  const url = server.url;
  await using a = await openClient("node-redis", url);
  await using b = await openClient("ioredis", url);
  const timeZone = noonZone();
  const today = new ZonedDays(timeZone).dayAt(Date.now());
  const day = (n: number) => addDays(today, n).text;
  const key = "kvid:daily:lag";
  const HOUR = 3_600_000;
  const options = { timeZone, minStep: 5, maxStep: 5, prefetchAt: 0 };
  // Processes whose clocks lag the server's (it is about noon there): by 1 day, and by 1 day
  // and 23 hours (still within keepDays 2), each using "its" day's counter.
  const lagging = [24 * HOUR, 47 * HOUR].map((lag) =>
    new DailyId("lag", { ...options, redis: a.redis, clock: () => Date.now() - lag })
  );
  const first = await Promise.all(lagging.map((g) => g.next()));
  assert.deepEqual(first.map((id) => lagging[0].parse(id).day), [day(-1), day(-2)]);
  await command(url, "HSET", key, day(-3), "9", day(-4), "9");
  // Cleanups with keepDays 2 by a right clock, one running ahead, and the most lagging process
  // itself: days before the day before yesterday go (by the server's clock), theirs stay.
  await using right = new DailyId("lag", { ...options, redis: b.redis });
  assert.equal(await right.cleanup({ keepDays: 2 }), 2);
  await using ahead = new DailyId("lag", {
    ...options,
    redis: b.redis,
    clock: () => Date.now() + 72 * HOUR,
  });
  assert.equal(await ahead.cleanup({ keepDays: 2 }), 0);
  assert.equal(await lagging[1].cleanup({ keepDays: 2 }), 0);
  assert.deepEqual((await command(url, "HKEYS", key) as string[]).sort(), [day(-2), day(-1)]);
  // They carry on above what they issued: their counters were never deleted.
  const next = await Promise.all(lagging.map((g) => g.next()));
  for (const [i, id] of next.entries()) assert.ok(id > first[i], `${id} after ${first[i]}`);
  await Promise.all(lagging.map((g) => g.close()));
});

Deno.test({
  ...ownServers(
    "DailyId cleanup without scripting: dated by the server, interleaved counters kept",
  ),
}, async () => {
  await using server = await startNoScriptingServer();
  const url = server.url;
  await using client = await openClient("ioredis", url);
  const timeZone = noonZone();
  const today = new ZonedDays(timeZone).dayAt(Date.now());
  const day = (n: number) => addDays(today, n).text;
  const key = "kvid:daily:plain";
  await command(url, "HSET", key, day(-4), "1", day(-3), "1", day(-2), "1", day(-1), "1");
  await command(url, "HSET", key, day(0), "1", day(-5), "7", `\u0000layout:${day(-5)}`, "v1");
  await using ahead = new DailyId("plain", {
    redis: client.redis,
    timeZone,
    clock: () => Date.now() + 3 * 86_400_000,
  });
  assert.equal(await ahead.cleanup({ keepDays: 1 }), 3);
  assert.deepEqual(
    (await command(url, "HKEYS", key) as string[]).sort(),
    [
      `\u0000layout:${day(-5)}`,
      day(-5),
      day(-1),
      day(0),
    ].sort(),
  );
});

Deno.test("DailyId cleanup failures: a store that never answers times out, the rest are named", async () => {
  const clock = () => Date.UTC(2026, 10, 30, 12); // 2026-11-30: keepDays 7 keeps from 23 November
  const hung: Store & ServerClock & DayCleanup = {
    reserve: () => Promise.reject(new Error("not used")),
    now: () => new Promise<number>(() => {}), // never settles
    deleteDaysBefore: () => Promise.resolve(0),
  };
  const slow = new DailyId("hung", { store: hung, clock, timeout: 50 });
  const late = await rejectsWith(slow.cleanup({ keepDays: 7 }), "timeout", /more than 50 ms/);
  assert.deepEqual([late.key, late.field], ["kvid:daily:hung", "<20261123"]);
  const events: DailyCleanupDetail[] = [];
  const auto = new DailyId("hung", { store: hung, clock, timeout: 50, keepDays: 7 });
  auto.addEventListener("cleanup", (e) => events.push(e.detail));
  // The reservation fails (retried until the timeout); the day started all the same.
  await rejectsWith(auto.next(), "timeout", /no ID could be reserved/);
  await auto.close(); // waits for the background cleanup, bounded by the timeout
  assert.equal(events.length, 1);
  assert.equal(events[0].before, "20261123");
  assert.equal(events[0].error?.code, "timeout");
  await slow.close();

  // A Redis client factory that fails: "connection", naming the hash and the cut.
  await using down = new DailyId("down", {
    redis: () => Promise.reject(new Error("ECONNREFUSED")),
    clock,
  });
  const refused = await rejectsWith(down.cleanup({ keepDays: 7 }), "connection", /factory/);
  assert.deepEqual([refused.key, refused.field], ["kvid:daily:down", "<20261123"]);
  // No client given or configured: "config", said when asked.
  await using none = new DailyId("none", { clock });
  await rejectsWith(none.cleanup({ keepDays: 7 }), "config", /no Redis client/);
});
