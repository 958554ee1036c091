/**
 * The ID service's quick answer (src/service/ids_endpoint.ts): IDs the generator holds are
 * taken as a run and printed without an array or a promise of the service's own, and the
 * `Authorization` header's usual form is read by hand. Each answers exactly what the slower
 * way answered: the same text, the same IDs in call order across segment switches and waits,
 * the same token decisions as the `Bearer` regex.
 *
 * @module
 */

import "../support/deadline.ts"; // a time limit on every test of this file
import assert from "node:assert/strict";
import { DenoKvStore } from "../../src/stores/deno_kv/deno_kv_store.ts";
import { createHandler } from "../../src/service/mod.ts";
import { parseTokens, type Scope, TokenAuth } from "../../src/service/auth.ts";
import { idLines, runLines } from "../../src/service/id_lines.ts";
import { KvId, TAKE_RUN } from "../../src/engine/kvid.ts";
import { MemoryStore } from "../support/memory_store.ts";

const TOKEN = "test-token-answer-path-0123";

function idsRequest(path: string, headers: Record<string, string> = {}): Request {
  return new Request(`http://127.0.0.1${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${TOKEN}`, ...headers },
  });
}

Deno.test("runLines: the run's IDs as idLines prints them, across thousands and digit counts", () => {
  const starts: number[] = [];
  for (let i = 0; i < 1100; i++) starts.push(i);
  for (let p = 1000; p <= Number.MAX_SAFE_INTEGER; p *= 10) {
    for (let d = -120; d <= 2; d++) starts.push(p + d);
  }
  starts.push(1_234_999, 999_999_950, Number.MAX_SAFE_INTEGER - 99);
  for (const first of starts) {
    for (const count of [1, 2, 3, 99, 100, 1001]) {
      if (first + count - 1 > Number.MAX_SAFE_INTEGER) continue;
      const ids = Array.from({ length: count }, (_, i) => first + i);
      assert.equal(runLines(first, count), idLines(ids), `${first} + ${count}`);
    }
  }
  assert.equal(runLines(998, 4), "998\n999\n1000\n1001\n");
});

Deno.test("the quick answer: every ID once, in call order, across segment switches and waits", async () => {
  using store = new DenoKvStore(":memory:");
  // Small segments: many requests find the buffer short and wait for a reservation, while
  // those behind them must not take IDs before them.
  await using service = createHandler({
    store,
    tokens: `${TOKEN}:*`,
    names: { "*": { minStep: 10, maxStep: 40 } },
    log: () => {},
  });
  let seed = 7;
  const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  let expected = 0;
  for (let round = 0; round < 20; round++) {
    // A round of requests sent at once: in flight together, answered in turn.
    const counts = Array.from({ length: 30 }, () => 1 + Math.floor(random() * 60));
    const json = counts.map(() => random() < 0.2);
    const answers = await Promise.all(counts.map((count, i) =>
      service.fetch(
        idsRequest(
          `/v1/ids/dense?count=${count}`,
          json[i] ? { accept: "application/json" } : {},
        ),
      )
    ));
    for (let i = 0; i < answers.length; i++) {
      const res = answers[i];
      assert.equal(res.status, 200);
      assert.equal(res.headers.get("cache-control"), "no-store");
      const body = await res.text();
      const ids: string[] = json[i] ? JSON.parse(body).ids : body.split("\n").slice(0, -1);
      assert.match(
        res.headers.get("content-type") ?? "",
        json[i] ? /^application\/json; charset=utf-8$/ : /^text\/plain;charset=UTF-8$/,
      );
      // One generator on a counter nobody else uses: 1, 2, 3, ... in the order of the calls.
      const want = Array.from({ length: counts[i] }, (_, k) => String(expected + k + 1));
      assert.deepEqual(ids, want, `round ${round}, request ${i}`);
      expected += counts[i];
    }
  }
});

Deno.test("the quick answer after close: 503 shutting_down, no ID", async () => {
  using store = new DenoKvStore(":memory:");
  const service = createHandler({ store, tokens: `${TOKEN}:*`, log: () => {} });
  const first = await service.fetch(idsRequest("/v1/ids/closing?count=5"));
  assert.equal(await first.text(), "1\n2\n3\n4\n5\n");
  await service.close();
  const after = await service.fetch(idsRequest("/v1/ids/closing"));
  assert.equal(after.status, 503);
  assert.equal(JSON.parse(await after.text()).error.code, "shutting_down");
});

Deno.test("TokenAuth.fromRequest: the same decisions as the Bearer regex, header by header", () => {
  const a = "answer-path-token-aaaaaaaa";
  const b = "answer-path-token-b!#$%&'()*+-./:;<=>?@[]^_`{}~";
  const tokens = parseTokens(`${a}:*,${b}:order|invoice`);
  const auth = new TokenAuth(tokens);
  // What the service answered before the hand-read form: this regex, then an exact lookup.
  const reference = (header: string | null): Scope | undefined => {
    if (header === null || header.length > 1024 + 16) return undefined;
    const m = /^Bearer[ ]+(\S+)\s*$/i.exec(header);
    return m === null ? undefined : tokens.get(m[1]);
  };
  const schemes = ["Bearer", "bearer", "BEARER", "BeArEr", "Bearerx", "Basic", "", "Bearer:"];
  const gaps = [" ", "  ", "\t", " \t", "", "\u00a0", "   "];
  const presented = [
    a,
    b,
    a.slice(0, -1),
    a + "a",
    a.toUpperCase(),
    `${a} ${a}`,
    "é" + a,
    a + "é",
    a.slice(1),
    "x".repeat(a.length),
    "",
  ];
  const tails = ["", " ", "  ", "\t", " \t ", "\u00a0", "\u2003", "\n", "x", " x", ",", "\u0000"];
  let checked = 0;
  let matched = 0;
  for (const scheme of schemes) {
    for (const gap of gaps) {
      for (const token of presented) {
        for (const tail of tails) {
          const header = `${scheme}${gap}${token}${tail}`;
          const want = reference(header);
          // The decision on the header string itself (a Request would refuse some bytes).
          assert.equal(auth.fromRequest(withAuthorization(header)), want, JSON.stringify(header));
          checked++;
          if (want !== undefined) matched++;
        }
      }
    }
  }
  assert.ok(matched > 20 && matched < checked / 4, `${matched} of ${checked} matched`);
  assert.equal(auth.fromRequest(withAuthorization(null)), undefined);
  assert.equal(auth.fromRequest(withAuthorization(`Bearer ${"a".repeat(1100)}`)), undefined);
  // And through a real Request, as the service reads it.
  assert.equal(
    auth.fromRequest(new Request("http://x/", { headers: { authorization: `Bearer ${a}` } })),
    "*",
  );
});

/** A request-like object whose only header is `authorization: header` (or none). */
function withAuthorization(header: string | null): Request {
  const get = (name: string) => name === "authorization" ? header : null;
  return { headers: { get } } as unknown as Request;
}

Deno.test("KvId[TAKE_RUN]: runs of the current segment only, in order with next(), none when closed or past 2^53", async () => {
  const store = new MemoryStore();
  const gen = new KvId("runs", { store, bigint: true, minStep: 10, maxStep: 10, initialStep: 10 });
  const take = (count: number) =>
    (gen as unknown as { [TAKE_RUN](count: number): number })[TAKE_RUN](count);
  try {
    assert.equal(take(1), -1, "nothing reserved yet");
    assert.equal(await gen.next(), 1n);
    assert.equal(take(3), 2, "2, 3, 4 from the current segment");
    assert.equal(take(7), -1, "5..10 are 6 IDs: a run never spans segments");
    assert.equal(take(6), 5);
    assert.equal(take(1), -1, "the segment is used up");
    // The next ones come through nextBatch(), after the run: nothing handed out twice.
    assert.deepEqual(await gen.nextBatch(3), [11n, 12n, 13n]);
    assert.equal(take(2), 14, "14 and 15");
    assert.deepEqual(await gen.nextBatch(5), [16n, 17n, 18n, 19n, 20n]);
    assert.equal(await gen.next(), 21n);
  } finally {
    await gen.close();
  }
  assert.equal(take(1), -1, "closed");
  const high = new KvId("high", { store, bigint: true, minStep: 10, maxStep: 10 });
  try {
    store.setValue("kvid", "high", 2n ** 53n - 5n);
    assert.equal(await high.next(), 2n ** 53n - 4n);
    const takeHigh = (count: number) =>
      (high as unknown as { [TAKE_RUN](count: number): number })[TAKE_RUN](count);
    assert.equal(takeHigh(3), Number(2n ** 53n - 3n), "up to 2^53 - 1 exactly");
    assert.equal(takeHigh(1), -1, "2^53 is not a safe integer");
    assert.equal(await high.next(), 2n ** 53n);
  } finally {
    await high.close();
  }
});
