// Every entry point of the npm build, imported by its package name on Node or Bun and used:
// one class of KvIdError for all of them (the build is one split bundle), the store authors' API
// (a Store of its own, InterleavedStore's checks), HttpStore on a fetch given to it, the codec,
// and PostgresStore and MySqlStore on a client given to them (a real database is the Deno tests'
// part: tests/stores/postgres/postgres_store_test.ts, tests/stores/mysql/mysql_store_test.ts).
// Usage: node entries_smoke.mjs   (run by .ci/runtimes where @kvid/core is installed)
import assert from "node:assert/strict";
import { KvId, KvIdError } from "@kvid/core";
import { InterleavedStore, openStore, stepField } from "@kvid/core/store";
import { HttpStore } from "@kvid/core/client";
import { base62, decimal, withCodec } from "@kvid/core/codec";
import { PostgresStore } from "@kvid/core/postgres";
import { MySqlStore } from "@kvid/core/mysql";

const runtime = typeof Bun === "object" ? `Bun ${Bun.version}` : `Node ${process.version}`;

// @kvid/core/store: a Store of our own, interleaved with another.
function memoryStore() {
  const counters = new Map();
  return {
    reserve(_key, field, count) {
      const last = (counters.get(field) ?? 0n) + BigInt(count);
      counters.set(field, last);
      return Promise.resolve({
        ranges: [{ first: last - BigInt(count) + 1n, last }],
        raised: false,
      });
    },
  };
}
assert.equal(stepField("order"), "\0step:order");
{
  const ids = new KvId("order", { store: memoryStore() });
  assert.equal(await ids.next(), 1);
  await ids.close();
  // Refused at once: no member.
  assert.throws(() => new InterleavedStore([]), RangeError);
  // The URL rules of the service and the CLI; a scheme they do not know refused at once.
  assert.throws(() => openStore("ftp://db"), (err) => err instanceof KvIdError);
}

// @kvid/core/client: HttpStore, on a fetch that answers as the service's /v1/segments does.
{
  const store = new HttpStore("http://ids.internal:8000", {
    token: "0123456789abcdef0123",
    fetch: () => Promise.resolve(new Response("no", { status: 503 })),
  });
  const ids = new KvId("order", { store, timeout: 500 });
  await assert.rejects(ids.next(), (err) => err instanceof KvIdError);
  await ids.close();
}

// @kvid/core/codec
assert.equal(base62().encode(1_000_000), "4C92");
{
  const raw = new KvId("invoice", { store: memoryStore() });
  assert.equal(await withCodec(raw, decimal(8)).next(), "00000001");
  await raw.close();
}

// @kvid/core/postgres and /mysql: the stores on a client that refuses, an error of one class.
for (
  const store of [
    new PostgresStore({ query: () => Promise.reject(new Error("ECONNREFUSED")) }),
    new MySqlStore({ query: () => Promise.reject(new Error("ECONNREFUSED")) }),
  ]
) {
  const ids = new KvId("order", { store, timeout: 300 });
  await assert.rejects(ids.next(), (err) => err instanceof KvIdError);
  await ids.close();
}
console.log(`entries: @kvid/core, /store, /client, /codec, /postgres, /mysql ok (${runtime})`);
