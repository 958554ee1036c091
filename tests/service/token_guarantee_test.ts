/**
 * The service's guarantee against its own tokens (docs/security.md, issue 33): no sequence of
 * segment requests by a token that is not administrative (releases of ranges it was never
 * handed, replayed or borrowed receipts, raises, lowering raises, step writes) makes the service
 * or any client of it hand out an ID twice, or makes a name unusable. Each attack is refused with
 * its status; then honest parties on the same counter (the service's `/v1/ids`, two `HttpStore`
 * clients, one with a scoped token, one with `*`, and a direct `KvId` on the service's Redis)
 * take IDs, and none is handed out twice and each still gets IDs. Then a seeded property test
 * (fast-check) of random request sequences of such a token interleaved with those parties.
 * Against a Redis server and the service this file starts.
 */

import "../support/deadline.ts"; // a time limit on every test of this file
import assert from "node:assert/strict";
import fc from "fast-check";
import { KvId } from "../../mod.ts";
import { HttpStore } from "../../src/client/mod.ts";
import type { RedisClient } from "../../src/contract/redis_client.ts";
import { parseForms } from "../../src/codec/forms.ts";
import { openClient } from "../support/redis_clients.ts";
import { command, startServer } from "../support/redis_server.ts";
import { type RunningService, serveService } from "../support/service.ts";

const ADMIN = "guarantee-admin-0123456789";
/** All names, not administrative: what the edge clients hold. */
const EDGE = "guarantee-edge-all-0123456789";
/** An honest client's token scoped to the names. */
const SCOPED = "guarantee-scoped-0123456789";
/** The attacker's, scoped to the same names. */
const ATTACKER = "guarantee-attacker-0123456789";
const PROPERTY_NAMES = Array.from({ length: 40 }, (_, i) => `p${i}`);
const NAMES = [
  "order",
  "invoice",
  "lowered",
  "full",
  "small",
  "tiny",
  "raised",
  "floored",
  "restart",
];
const SCOPE = [...NAMES, ...PROPERTY_NAMES].join("|");
const TOKENS = `${ADMIN}:admin=*,${EDGE}:*,${SCOPED}:${SCOPE},${ATTACKER}:${SCOPE}`;
const MAX_ID = (1n << 63n) - 1n;
const MAX_SEGMENT = 1_000_000;

interface Answer {
  status: number;
  // deno-lint-ignore no-explicit-any
  body: any;
}

/** One request to the service, its JSON answer. */
async function ask(
  base: string,
  method: string,
  path: string,
  body?: unknown,
  token = ATTACKER,
): Promise<Answer> {
  const res = await fetch(base + path, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      accept: "application/json",
      "content-type": "application/json",
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text === "" ? undefined : JSON.parse(text) };
}

function assertAnswer(a: Answer, status: number, code?: string): void {
  assert.equal(a.status, status, JSON.stringify(a.body));
  if (code !== undefined) assert.equal(a.body?.error?.code, code, JSON.stringify(a.body));
}

/**
 * The honest parties on counter `name`: the service's `/v1/ids` (the EDGE token), `HttpStore`
 * clients with the scoped and the `*` token, and a `KvId` on the service's own Redis. Every ID
 * any of them hands out is recorded with its source: a second one fails at once.
 */
class Honest implements AsyncDisposable {
  readonly seen = new Map<bigint, string>();
  readonly #s: RunningService;
  readonly #redis: RedisClient;
  readonly #name: string;
  #scoped: KvId<bigint>;
  #edge: KvId<bigint>;
  #direct: KvId<bigint>;

  constructor(s: RunningService, redis: RedisClient, name: string) {
    this.#s = s;
    this.#redis = redis;
    this.#name = name;
    this.#scoped = this.#httpStore(SCOPED);
    this.#edge = this.#httpStore(EDGE);
    this.#direct = new KvId(name, { redis, bigint: true, timeout: 10_000 });
  }

  #httpStore(token: string): KvId<bigint> {
    return new KvId(this.#name, {
      store: new HttpStore(this.#s.url, { token }),
      bigint: true,
      timeout: 10_000,
    });
  }

  record(id: bigint, source: string): void {
    const had = this.seen.get(id);
    assert.equal(had, undefined, `ID ${id} of ${this.#name} handed out twice: ${had}, ${source}`);
    this.seen.set(id, source);
  }

  /** `n` IDs from each party: each must serve. */
  async round(n = 3): Promise<void> {
    for (let i = 0; i < n; i++) {
      this.record(await this.#scoped.next(), "HttpStore (scoped token)");
      this.record(await this.#edge.next(), "HttpStore (* token)");
      this.record(await this.#direct.next(), "KvId on Redis");
    }
    const a = await ask(this.#s.url, "POST", `/v1/ids/${this.#name}?count=${n}`, undefined, EDGE);
    assertAnswer(a, 200);
    for (const id of a.body.ids) this.record(BigInt(id), "/v1/ids");
  }

  /** Close the `HttpStore` clients (they give back what they can) and open new ones. */
  async reopen(): Promise<void> {
    await this.#scoped.close();
    await this.#edge.close();
    this.#scoped = this.#httpStore(SCOPED);
    this.#edge = this.#httpStore(EDGE);
  }

  /** The direct generator again (a process restarted), reading the counter afresh. */
  async restartDirect(): Promise<void> {
    await this.#direct.close();
    this.#direct = new KvId(this.#name, { redis: this.#redis, bigint: true, timeout: 10_000 });
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await Promise.all([this.#scoped.close(), this.#edge.close(), this.#direct.close()]);
  }
}

async function counter(url: string, name: string): Promise<bigint> {
  return BigInt(String(await command(url, "HGET", "kvid", name) ?? "0"));
}

Deno.test("service guarantee: each attack on segments is refused; no ID twice, every name serves", async (t) => {
  await using server = await startServer();
  await using client = await openClient("node-redis", server.url);
  await using s = serveService({
    redis: client.redis,
    tokens: TOKENS,
    codecs: parseForms("small=decimal:6,tiny=decimal:3"),
  });
  const url = s.url;

  await t.step("a release of a range never handed out: 409, the counter left", async () => {
    await using honest = new Honest(s, client.redis, "order");
    await honest.round();
    const seg = await ask(url, "POST", "/v1/segments/order", { count: 10 });
    assertAnswer(seg, 200);
    const top = seg.body.ranges[0].last;
    // The request: the whole counter, no receipt.
    assertAnswer(
      await ask(url, "POST", "/v1/segments/order/release", { first: "1", last: top }),
      409,
      "release_refused",
    );
    // With its own receipt, but a range reaching below the segment.
    assertAnswer(
      await ask(url, "POST", "/v1/segments/order/release", {
        first: "1",
        last: top,
        receipts: [seg.body.receipt],
      }),
      409,
      "release_refused",
    );
    // A made-up receipt.
    assertAnswer(
      await ask(url, "POST", "/v1/segments/order/release", {
        first: seg.body.ranges[0].first,
        last: top,
        receipts: ["AAAAAAAAAAAAAAAAAAAAAA"],
      }),
      409,
      "release_refused",
    );
    // Its own receipt, a range not ending at the segment's top.
    assertAnswer(
      await ask(url, "POST", "/v1/segments/order/release", {
        first: seg.body.ranges[0].first,
        last: String(BigInt(top) - 1n),
        receipts: [seg.body.receipt],
      }),
      409,
      "release_refused",
    );
    assert.equal(await counter(server.url, "order") >= BigInt(top), true);
    await honest.round();
    await honest.reopen();
    await honest.round();
  });

  await t.step("a replayed release: the first gives back, the replay is 409", async () => {
    await using honest = new Honest(s, client.redis, "invoice");
    const seg = await ask(url, "POST", "/v1/segments/invoice", { count: 10 });
    const range = seg.body.ranges[0];
    const release = { first: range.first, last: range.last, receipts: [seg.body.receipt] };
    assertAnswer(await ask(url, "POST", "/v1/segments/invoice/release", release), 200);
    // The released IDs go to an honest client: the counter is back at the old top ...
    const again = await ask(url, "POST", "/v1/segments/invoice", { count: 10 }, EDGE);
    assert.deepEqual(again.body.ranges, [range]);
    for (let id = BigInt(range.first); id <= BigInt(range.last); id++) {
      honest.record(id, "segment (* token)");
    }
    // ... so the store's compare-and-set would pass: the used receipt is what refuses it.
    assertAnswer(
      await ask(url, "POST", "/v1/segments/invoice/release", release),
      409,
      "release_refused",
    );
    assert.equal(await counter(server.url, "invoice"), BigInt(range.last));
    await honest.round();
    await honest.reopen();
    await honest.round();
  });

  await t.step("another token's receipt: 409", async () => {
    await using honest = new Honest(s, client.redis, "order");
    const theirs = await ask(url, "POST", "/v1/segments/order", { count: 10 }, EDGE);
    const r = theirs.body.ranges[0];
    const a = await ask(url, "POST", "/v1/segments/order/release", {
      first: r.first,
      last: r.last,
      receipts: [theirs.body.receipt],
    });
    assertAnswer(a, 409, "release_refused");
    assert.match(a.body.error.message, /another token/);
    await honest.round();
  });

  await t.step("someone reserved since: 409, the counter left", async () => {
    await using honest = new Honest(s, client.redis, "order");
    const seg = await ask(url, "POST", "/v1/segments/order", { count: 10 });
    await honest.round(); // the others reserve above it
    const before = await counter(server.url, "order");
    const r = seg.body.ranges[0];
    const a = await ask(url, "POST", "/v1/segments/order/release", {
      first: r.first,
      last: r.last,
      receipts: [seg.body.receipt],
    });
    assertAnswer(a, 409, "release_refused");
    assert.ok(await counter(server.url, "order") >= before);
    await honest.round();
  });

  await t.step("raiseTo below floor would lower the counter: 400, not lowered", async () => {
    await using honest = new Honest(s, client.redis, "lowered");
    await honest.round();
    const before = await counter(server.url, "lowered");
    assertAnswer(
      await ask(url, "POST", "/v1/segments/lowered", {
        count: 1,
        floor: String(before + 1000n),
        raiseTo: "0",
      }),
      400,
      "bad_segment",
    );
    assert.ok(await counter(server.url, "lowered") >= before);
    await honest.reopen();
    await honest.restartDirect();
    await honest.round();
  });

  await t.step("a raise to 2^63-1 by a scoped token: 403; the name serves", async () => {
    await using honest = new Honest(s, client.redis, "order");
    await honest.round();
    for (const token of [ATTACKER, EDGE]) {
      const a = await ask(
        url,
        "POST",
        "/v1/segments/order",
        { count: 1, floor: String(MAX_ID - 1n) },
        token,
      );
      assertAnswer(a, 403, "forbidden");
      assert.match(a.body.error.message, /administrative token/);
    }
    // Past the bound by raiseTo alone, too.
    assertAnswer(
      await ask(url, "POST", "/v1/segments/order", {
        count: 1,
        floor: "1",
        raiseTo: String(MAX_ID - 1n),
      }),
      403,
      "forbidden",
    );
    assert.ok(await counter(server.url, "order") < 10_000_000n);
    await honest.round();
  });

  await t.step("a raise within the counter plus one segment is a reservation's worth", async () => {
    await using honest = new Honest(s, client.redis, "raised");
    await honest.round();
    const value = await counter(server.url, "raised");
    const to = value + BigInt(MAX_SEGMENT);
    const a = await ask(url, "POST", "/v1/segments/raised", { count: 1, floor: String(to) });
    assertAnswer(a, 200);
    assert.deepEqual(a.body.ranges, [{ first: String(to + 1n), last: String(to + 1n) }]);
    assertAnswer(
      await ask(url, "POST", "/v1/segments/raised", { count: 1, floor: String(to * 3n) }),
      403,
      "forbidden",
    );
    await honest.round();
  });

  await t.step("a step above the segment cap: 403; within it: 200", async () => {
    assertAnswer(
      await ask(url, "PUT", "/v1/segments/order/step", { step: 2 ** 53 - 1 }),
      403,
      "forbidden",
    );
    assertAnswer(await ask(url, "PUT", "/v1/segments/order/step", { step: MAX_SEGMENT + 1 }), 403);
    assertAnswer(await ask(url, "PUT", "/v1/segments/order/step", { step: 500 }), 200);
    assertAnswer(
      await ask(url, "PUT", "/v1/segments/order/step", { step: 2 ** 53 - 1 }, ADMIN),
      200,
    );
    assertAnswer(await ask(url, "PUT", "/v1/segments/order/step", { step: 100 }, ADMIN), 200);
    await using honest = new Honest(s, client.redis, "order");
    await honest.round();
  });

  await t.step("an exhausted counter answers 409 overflow everywhere, never 500", async () => {
    // Only an administrative token may take it there.
    assertAnswer(
      await ask(url, "POST", "/v1/segments/full", { count: 1, floor: String(MAX_ID - 1n) }, ADMIN),
      200,
    );
    assertAnswer(await ask(url, "POST", "/v1/ids/full", undefined, EDGE), 409, "overflow");
    assertAnswer(await ask(url, "POST", "/v1/ids/full?count=5", undefined, EDGE), 409, "overflow");
    assertAnswer(await ask(url, "POST", "/v1/segments/full", { count: 1 }), 409, "overflow");
    await using direct = new KvId("full", { redis: client.redis, bigint: true });
    await assert.rejects(direct.next(), { code: "overflow" });
  });

  await t.step("a segment past its form's domain: 409 domain before reserving", async () => {
    // tiny=decimal:3 encodes 0..999: a segment reaching 1000 would waste the domain's tail.
    assertAnswer(await ask(url, "POST", "/v1/segments/tiny", { count: 1000 }), 409, "domain");
    assertAnswer(await ask(url, "POST", "/v1/segments/tiny", { count: 1000 }, EDGE), 409, "domain");
    assert.equal(await counter(server.url, "tiny"), 0n);
    const seg = await ask(url, "POST", "/v1/segments/tiny", { count: 500 });
    assertAnswer(seg, 200);
    assert.deepEqual(seg.body.ranges, [{ first: "1", last: "500" }]);
    assertAnswer(await ask(url, "POST", "/v1/segments/tiny", { count: 500 }), 409, "domain");
    assertAnswer(
      await ask(url, "POST", "/v1/segments/tiny", { count: 500, guard: false }),
      409,
      "domain",
    );
    // A raise within the bound but past the form is refused the same way, before it is made.
    assertAnswer(
      await ask(url, "POST", "/v1/segments/tiny", { count: 10, floor: "995" }),
      409,
      "domain",
    );
    assert.equal(await counter(server.url, "tiny"), 500n);
    assertAnswer(await ask(url, "POST", "/v1/segments/tiny", { count: 1, floor: "990" }), 200);
    // The rest of the domain still serves.
    const ids = await ask(url, "POST", "/v1/ids/tiny?count=3", undefined, EDGE);
    assertAnswer(ids, 200);
    for (const id of ids.body.ids) assert.ok(BigInt(id) > 991n && BigInt(id) <= 999n, id);
  });

  await t.step("a counter past its form's domain answers 409 domain, never 500", async () => {
    assertAnswer(await ask(url, "POST", "/v1/ids/small", undefined, EDGE), 200);
    assertAnswer(
      await ask(url, "POST", "/v1/segments/small", { count: 1, floor: "999999" }, ADMIN),
      200,
    );
    assertAnswer(await ask(url, "POST", "/v1/ids/small?count=3", undefined, EDGE), 409, "domain");
    assertAnswer(await ask(url, "POST", "/v1/ids/small", undefined, EDGE), 409, "domain");
  });
  assert.ok(!s.logged.some((l) => l.includes(ATTACKER) || l.includes(EDGE)), "a token logged");
});

Deno.test("service guarantee: an honest HttpStore with a scoped token: rollbacks, floors, restarts", async (t) => {
  await using server = await startServer();
  await using client = await openClient("node-redis", server.url);
  let s = serveService({ redis: client.redis, tokens: TOKENS });
  try {
    await t.step(
      "the store lost the counter: the rollback raise is allowed, IDs go on above",
      async () => {
        await using gen = new KvId("raised", {
          store: new HttpStore(s.url, { token: SCOPED }),
          bigint: true,
          minStep: 1000,
          maxStep: 1000,
        });
        let last = 0n;
        for (let i = 0; i < 2_500; i++) last = await gen.next();
        await command(server.url, "HDEL", "kvid", "raised"); // lost
        let rollbacks = 0;
        gen.addEventListener("rollback", () => rollbacks++);
        for (let i = 0; i < 2_000; i++) {
          const id = await gen.next();
          assert.ok(id > last, `${id} after ${last}`);
          last = id;
        }
        assert.ok(rollbacks >= 1, "no rollback seen");
        assert.ok(await counter(server.url, "raised") >= last);
      },
    );
    await t.step(
      "a floor option within the bound is honoured; far above it fails fast",
      async () => {
        await using within = new KvId("floored", {
          store: new HttpStore(s.url, { token: SCOPED }),
          bigint: true,
          floor: () => 500_000n,
        });
        assert.equal(await within.next(), 500_001n);
        await using far = new KvId("floored", {
          store: new HttpStore(s.url, { token: SCOPED }),
          bigint: true,
          floor: () => 1n << 40n,
          timeout: 30_000,
        });
        const t0 = performance.now();
        await assert.rejects(far.next(), (err: Error & { code?: string }) => {
          assert.equal(err.code, "config");
          assert.match(err.message, /administrative token/);
          return true;
        });
        assert.ok(performance.now() - t0 < 20_000, "a refused raise is retried, not failed fast");
        // The same floor with an administrative token.
        await using admin = new KvId("floored", {
          store: new HttpStore(s.url, { token: ADMIN }),
          bigint: true,
          floor: () => 1n << 40n,
        });
        assert.equal(await admin.next(), (1n << 40n) + 1n);
      },
    );
    await t.step(
      "a service restart forgets the receipts: the client does not give back",
      async () => {
        let target = s.url;
        const store = new HttpStore(s.url, {
          token: SCOPED,
          fetch: (input, init) => fetch(String(input).replace(/^http:\/\/[^/]+/, target), init),
        });
        const gen = new KvId("restart", { store, bigint: true, minStep: 100 });
        assert.equal(await gen.next(), 1n);
        const reserved = await counter(server.url, "restart");
        await s.close();
        s = serveService({ redis: client.redis, tokens: TOKENS });
        target = s.url;
        await gen.close(); // its release is refused by the new instance: a gap
        assert.equal(await counter(server.url, "restart"), reserved);
        await using again = new KvId("restart", {
          store: new HttpStore(s.url, { token: SCOPED }),
          bigint: true,
        });
        assert.equal(await again.next(), reserved + 1n);
        // And with the same instance, the give-back works.
        await again.close();
        assert.equal(await counter(server.url, "restart"), reserved + 1n);
      },
    );
  } finally {
    await s.close();
  }
});

/** One request of the attacker: what it asks, from what it saw so far. */
type Move =
  | { kind: "reserve"; count: number; raise: "none" | "within" | "past" | "max" | "lower" }
  | { kind: "release"; which: "own" | "replay" | "fake" | "theirs" | "shifted" | "none" }
  | { kind: "step"; step: number }
  | { kind: "ids"; count: number }
  | { kind: "honest"; reopen: boolean };

const move: fc.Arbitrary<Move> = fc.oneof(
  fc.record({
    kind: fc.constant("reserve" as const),
    count: fc.oneof(fc.integer({ min: 1, max: 50 }), fc.constant(MAX_SEGMENT)),
    raise: fc.constantFrom("none", "within", "past", "max", "lower") as fc.Arbitrary<
      "none" | "within" | "past" | "max" | "lower"
    >,
  }),
  fc.record({
    kind: fc.constant("release" as const),
    which: fc.constantFrom("own", "replay", "fake", "theirs", "shifted", "none") as fc.Arbitrary<
      "own" | "replay" | "fake" | "theirs" | "shifted" | "none"
    >,
  }),
  fc.record({
    kind: fc.constant("step" as const),
    step: fc.oneof(fc.integer({ min: 1, max: 2 * MAX_SEGMENT }), fc.constant(2 ** 53 - 1)),
  }),
  fc.record({ kind: fc.constant("ids" as const), count: fc.integer({ min: 1, max: 100 }) }),
  fc.record({ kind: fc.constant("honest" as const), reopen: fc.boolean() }),
);

Deno.test("service guarantee: random requests of a scoped token among honest clients (fast-check)", async () => {
  await using server = await startServer();
  await using client = await openClient("node-redis", server.url);
  await using s = serveService({ redis: client.redis, tokens: TOKENS });
  const url = s.url;
  let run = 0;
  const statuses = new Map<number, number>();
  await fc.assert(
    fc.asyncProperty(fc.array(move, { minLength: 5, maxLength: 25 }), async (moves) => {
      const name = PROPERTY_NAMES[run++ % PROPERTY_NAMES.length];
      await using honest = new Honest(s, client.redis, name);
      await honest.round(1);
      // What the attacker holds: its segments' receipts, used ones, and another token's.
      const own: { first: string; last: string; receipt: string }[] = [];
      const used: { first: string; last: string; receipts: string[] }[] = [];
      for (const m of moves) {
        let a: Answer | undefined;
        if (m.kind === "reserve") {
          const value = await counter(server.url, name);
          const floor = m.raise === "none"
            ? 0n
            : m.raise === "within"
            ? value + 10n
            : m.raise === "past"
            ? value + 3n * BigInt(MAX_SEGMENT)
            : m.raise === "max"
            ? MAX_ID - 1n
            : value + 5n;
          const body = m.raise === "lower"
            ? { count: m.count, floor: String(floor), raiseTo: "0" }
            : { count: m.count, floor: String(floor) };
          a = await ask(url, "POST", `/v1/segments/${name}`, body);
          if (a.status === 200) {
            const r = a.body.ranges[0];
            own.push({ first: r.first, last: r.last, receipt: a.body.receipt });
          }
        } else if (m.kind === "release") {
          const mine = own.at(-1);
          let body: unknown;
          if (m.which === "own" && mine) {
            body = { first: mine.first, last: mine.last, receipts: [mine.receipt] };
          } else if (m.which === "replay" && used.length > 0) {
            body = used.at(-1);
          } else if (m.which === "theirs") {
            const theirs = await ask(url, "POST", `/v1/segments/${name}`, { count: 5 }, EDGE);
            const r = theirs.body.ranges[0];
            for (let id = BigInt(r.first); id <= BigInt(r.last); id++) {
              honest.record(id, "segment (* token)");
            }
            body = { first: r.first, last: r.last, receipts: [theirs.body.receipt] };
          } else if (m.which === "shifted" && mine) {
            body = { first: "1", last: mine.last, receipts: [mine.receipt] };
          } else if (m.which === "fake") {
            const value = await counter(server.url, name);
            body = { first: "1", last: String(value), receipts: ["AAAAAAAAAAAAAAAAAAAAAA"] };
          } else {
            const value = await counter(server.url, name);
            body = { first: "1", last: String(value) };
          }
          a = await ask(url, "POST", `/v1/segments/${name}/release`, body);
          if (a.status === 200) {
            used.push(body as { first: string; last: string; receipts: string[] });
            own.pop();
          }
        } else if (m.kind === "step") {
          a = await ask(url, "PUT", `/v1/segments/${name}/step`, { step: m.step });
        } else if (m.kind === "ids") {
          a = await ask(url, "POST", `/v1/ids/${name}?count=${m.count}`);
          // The service handed these out: they count as everyone's.
          if (a.status === 200) {
            for (const id of a.body.ids) honest.record(BigInt(id), "/v1/ids");
          }
        } else {
          if (m.reopen) await honest.reopen();
          await honest.round(1);
        }
        if (a !== undefined) {
          statuses.set(a.status, (statuses.get(a.status) ?? 0) + 1);
          assert.ok(a.status < 500, `${JSON.stringify(m)}: ${a.status} ${JSON.stringify(a.body)}`);
        }
      }
      // Every party still serves, none handed out an ID twice (record() checks).
      await honest.reopen();
      await honest.restartDirect();
      await honest.round(2);
    }),
    { seed: 20261233, numRuns: 12, endOnFailure: true },
  );
  // The sequences reached each kind of answer.
  for (const status of [200, 400, 403, 409]) assert.ok(statuses.has(status), `no ${status}`);
  assert.ok(!s.logged.some((l) => l.includes(ATTACKER)), "a token logged");
});
