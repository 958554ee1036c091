/**
 * One test per behaviour that a mutation run (issue 28) found no test catching: each fails when
 * its behaviour is broken, against a real server where a store is involved, on the order of
 * events rather than on time.
 */

import "../support/deadline.ts"; // a time limit on every test of this file
import assert from "node:assert/strict";
import { DailyId, KvId, KvIdError } from "../../mod.ts";
import { DenoKvStore } from "../../src/stores/deno_kv/deno_kv_store.ts";
import { RedisStore } from "../../src/stores/redis/redis_store.ts";
import { type Scope, Sessions, TokenAuth } from "../../src/service/auth.ts";
import { StepSizer } from "../../src/engine/step.ts";
import type { Reservation, ReserveOptions, Store } from "../../src/contract/store.ts";
import { openClient, Spy } from "../support/redis_clients.ts";
import { command, startServer } from "../support/redis_server.ts";
import { rejectsWith } from "../support/assert.ts";

/** A store that counts reservations as they are sent (synchronously) and passes them on. */
class CountingStore implements Store {
  reserves = 0;
  /** When set, the next reservation throws it instead of reaching the inner store. */
  failNext: unknown;
  readonly #inner: Store;
  constructor(inner: Store) {
    this.#inner = inner;
  }
  reserve(key: string, field: string, n: number, o: ReserveOptions): Promise<Reservation> {
    this.reserves++;
    const fail = this.failNext;
    if (fail !== undefined) {
      this.failNext = undefined;
      return Promise.reject(fail);
    }
    return this.#inner.reserve(key, field, n, o);
  }
}

/** One turn of the timer queue: every timer already due (a 0 ms timer set before) runs first. */
const nextTimerTurn = () => new Promise<void>((r) => setTimeout(r, 0));

Deno.test("evidence against a real server", async (t) => {
  await using server = await startServer();
  await using client = await openClient("node-redis", server.url);
  const url = server.url;

  await t.step("DailyId.nextBatch held across midnight returns today's IDs", async () => {
    let now = Date.parse("2026-12-01T23:59:59.999Z");
    const spy = new Spy(client.redis);
    let open!: () => void;
    spy.gate = new Promise((r) => open = r);
    await using id = new DailyId("batch-midnight", { redis: spy, clock: () => now, minStep: 10 });
    const pending = id.nextBatch(3); // waits for 1 December's first reservation
    await spy.sent(1);
    now += 1; // midnight while the reply is held back
    open();
    spy.gate = undefined;
    assert.deepEqual(await pending, [20261202000001, 20261202000002, 20261202000003]);
  });

  await t.step(
    "the prefetch is sent from the next timer turn, before the segment runs dry",
    async () => {
      const store = new CountingStore(new RedisStore(client.redis));
      await using id = new KvId("prompt", { store, minStep: 10, maxStep: 10, prefetchAt: 0.2 });
      await id.next(); // the first reservation: one wait
      assert.equal(store.reserves, 1);
      // Take IDs one at a time; after each, let one timer turn pass. The prefetch (set from a
      // 0 ms timer when the mark is crossed) must be out before the segment's last ID is taken.
      for (let taken = 1; store.reserves === 1; taken++) {
        assert.ok(taken < 10, "the segment ran dry before the prefetch was sent");
        await id.next();
        await nextTimerTurn();
      }
      assert.equal(id.stats().stalls, 1, "only the first call waited");
    },
  );

  await t.step("a conflict is retried, not handed to the caller", async () => {
    await using kv = await Deno.openKv(":memory:");
    const store = new CountingStore(new DenoKvStore(kv));
    store.failNext = new KvIdError("conflict", "optimistic writes kept losing", {
      key: "kvid",
      field: "conflicted",
    });
    await using id = new KvId("conflicted", { store, prefetchAt: 0, timeout: 60_000 });
    assert.equal(await id.next(), 1);
    assert.equal(store.reserves, 2, "the conflict, then the retry that landed");
    assert.equal(id.stats().failures, 1);
  });

  await t.step("a reservation whose range starts exactly at the mark is a rollback", async () => {
    await using id = new KvId("at-floor", {
      redis: client.redis,
      guard: false,
      minStep: 10,
      maxStep: 10,
      prefetchAt: 0,
    });
    const events: unknown[] = [];
    id.addEventListener("rollback", (e) => events.push(e.detail));
    assert.deepEqual(await id.nextBatch(10), [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    // The next HINCRBY 10 replies 19: the range 10..19 starts at the mark (10).
    await command(url, "HSET", "kvid", "at-floor", "9");
    assert.equal(await id.next(), 11, "10 was issued already: skipped");
    assert.equal(id.stats().rollbacks, 1);
    assert.deepEqual(events, [{ floor: 10n, last: 19n }]);
  });

  await t.step("a refusal fails the next call from memory, with no round trip", async () => {
    await command(url, "HSET", "kvid", "refused", "not a number");
    const spy = new Spy(client.redis);
    await using id = new KvId("refused", { redis: spy, timeout: 60_000 });
    // Held still, so the second call comes before the backoff ends however slow the machine.
    const realNow = performance.now;
    const frozen = realNow.call(performance);
    performance.now = () => frozen;
    try {
      const first = await rejectsWith(id.next(), "reply");
      const calls = spy.calls;
      const again = id.next();
      again.catch(() => {});
      // From memory: settled before the next timer turn, however slow the machine.
      const early = await Promise.race([
        again.then(() => "resolved", (err: unknown) => err),
        nextTimerTurn().then(() => "still pending"),
      ]);
      assert.equal(early, first, "the same error, at once");
      assert.equal(spy.calls, calls, "no reservation sent for the second call");
    } finally {
      performance.now = realNow;
    }
  });

  await t.step("a late range below the mark is never given back on close", async () => {
    const spy = new Spy(client.redis);
    const id = new KvId("late-below", {
      redis: spy,
      guard: false,
      minStep: 10,
      maxStep: 10,
      prefetchAt: 0,
      timeout: 60_000,
    });
    assert.equal((await id.nextBatch(10)).at(-1), 10);
    await command(url, "HSET", "kvid", "late-below", "3"); // the counter went back
    let open!: () => void;
    spy.gate = new Promise((r) => open = r);
    const pending = id.next();
    await spy.sent(2);
    const closing = id.close(); // the reservation is in flight: it lands after close()
    open();
    spy.gate = undefined;
    await rejectsWith(pending, "closed");
    await closing;
    // It reserved 4..13, below IDs already issued: giving it back would lower the counter to 3.
    assert.equal(await command(url, "HGET", "kvid", "late-below"), "13");
  });
});

Deno.test("the doubling rule keeps the step when the time since equals segmentDuration", () => {
  const sizer = new StepSizer(1, 1_000, 1_000, "doubling", 8);
  sizer.reserved(0, 0);
  assert.equal(sizer.reserved(1_000, 8), 8, "equal: kept");
  assert.equal(sizer.reserved(1_999, 16), 16, "shorter: doubled");
  assert.equal(sizer.reserved(3_000, 24), 8, "longer: halved");
  // Never below minStep, however slow; a clock that went back measures nothing: kept.
  const slow = new StepSizer(4, 1_000, 1_000, "doubling", 4);
  slow.reserved(0, 0);
  assert.equal(slow.reserved(5_000, 4), 4, "halved, but not below minStep");
  assert.equal(slow.reserved(4_000, 8), 4, "the clock went back: kept, not doubled");
  const rate = new StepSizer(1, 1_000, 1_000, "rate", 10);
  rate.reserved(1_000, 0);
  assert.equal(rate.reserved(500, 100), 10, "rate rule: the clock went back, kept");
});

Deno.test("status-page sessions expire after 12 hours", () => {
  const realNow = Date.now;
  let now = Date.parse("2026-12-01T00:00:00Z");
  Date.now = () => now;
  try {
    const sessions = new Sessions();
    const cookie = sessions.open("*", false);
    const id = /^kvid_session=([^;]+);/.exec(cookie)?.[1];
    assert.ok(id !== undefined, cookie);
    const req = () =>
      new Request("http://127.0.0.1/", { headers: { cookie: `kvid_session=${id}` } });
    assert.equal(sessions.fromRequest(req()), "*");
    now += 12 * 3600_000 - 1;
    assert.equal(sessions.fromRequest(req()), "*", "valid until 12 h");
    now += 1;
    assert.equal(sessions.fromRequest(req()), undefined, "expired at 12 h");
  } finally {
    Date.now = realNow;
  }
});

Deno.test("the token check walks every configured token over its whole length", () => {
  const tokens = new Map<string, Scope>([
    ["a".repeat(16) + "-first-token", "*"],
    ["b".repeat(40), new Set(["order"])],
  ]);
  const auth = new TokenAuth(tokens);
  const total = [...tokens.keys()].reduce((n, t) => n + t.length, 0);
  // A presented token that counts the characters read from it: the work the compare does.
  const counting = (text: string) => {
    const probe = {
      reads: 0,
      length: text.length,
      charCodeAt(i: number) {
        probe.reads++;
        return text.charCodeAt(i);
      },
    };
    return probe;
  };
  for (
    const [guess, scope] of [
      ["x".repeat(28), undefined], // differs at the first character
      ["a".repeat(16) + "-first-tokex", undefined], // differs at the last
      ["a".repeat(16) + "-first-token", "*"], // the first token
      ["b".repeat(40), tokens.get("b".repeat(40))], // the last one
      ["b".repeat(41), undefined], // the last one and a character more
      ["b".repeat(39), undefined], // one character short of it
      ["short", undefined],
    ] as const
  ) {
    const probe = counting(guess);
    assert.equal(auth.check(probe as unknown as string), scope, guess);
    assert.equal(probe.reads, total, `${guess}: every character of every token compared`);
  }
});

Deno.test("every test file has a time limit on its tests (imports tests/support/deadline.ts)", async () => {
  const missing: string[] = [];
  const walk = async (dir: URL) => {
    for await (const e of Deno.readDir(dir)) {
      if (e.isDirectory) await walk(new URL(`${e.name}/`, dir));
      else if (e.name.endsWith("_test.ts")) {
        const text = await Deno.readTextFile(new URL(e.name, dir));
        if (!/^import (\{ \w+ \} from )?"(\.\.?\/)+(support\/)?deadline\.ts";/m.test(text)) {
          missing.push(e.name);
        }
      }
    }
  };
  await walk(new URL("../", import.meta.url));
  assert.deepEqual(missing, []);
});
