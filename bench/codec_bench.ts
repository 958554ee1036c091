/**
 * Public forms (`@kvid/core/codec`): encode and decode per ID for each form, beside
 * `await next()` of a generator and beside Sqids (`npm:sqids`, the usual short-ID library, which
 * is not encryption) on the same IDs, in one run.
 *
 *     deno bench -A bench/codec_bench.ts
 *
 * Every subject turns the same sequence of IDs (from 10^9 up, a counter some way into its life)
 * into its form, or a pre-computed form back. `next()` runs on an in-memory store: the engine's
 * cost per ID, with no network (the network is per segment, not per ID).
 */

import Sqids from "sqids";
import { KvId } from "../mod.ts";
import type { Store } from "../src/store_contract.ts";
import {
  base36,
  base62,
  type Codec,
  dailyForm,
  decimal,
  encrypted,
  prefix,
} from "../src/codec/mod.ts";

const KEY = Uint8Array.from({ length: 16 }, (_, i) => (i * 31 + 7) & 255);
const KEY256 = Uint8Array.from({ length: 32 }, (_, i) => (i * 13 + 1) & 255);
const FIRST = 1_000_000_000;
const SAMPLES = 4096; // IDs cycled through; their forms are pre-computed for decode

let counter = 0n;
const store: Store = {
  reserve(_key, _field, count) {
    const first = counter + 1n;
    counter += BigInt(count);
    return Promise.resolve({ ranges: [{ first, last: counter }], raised: false });
  },
};
const ORDER_ID = new KvId("bench-codec", { store, minStep: 1_000_000, maxStep: 1_000_000 });
await ORDER_ID.next(); // first segment reserved

const FORMS: [string, Codec<string>][] = [
  ["decimal(12)", decimal(12)],
  ["base36(9)", base36(9)],
  ["base62(7)", base62(7)],
  ['prefix("INV-2026-", decimal(10))', prefix("INV-2026-", decimal(10))],
  ['dailyForm("string", 6)', dailyForm("string", 6)],
  [
    "encrypted(decimal(12)), AES-128",
    encrypted(decimal(12), { keys: { "1": KEY }, tweak: "order" }),
  ],
  [
    "encrypted(decimal(12)), AES-256",
    encrypted(decimal(12), { keys: { "1": KEY256 }, tweak: "order" }),
  ],
  ["encrypted(base36(9))", encrypted(base36(9), { keys: { "1": KEY }, tweak: "order" })],
  ["encrypted(base62(7))", encrypted(base62(7), { keys: { "1": KEY }, tweak: "share" })],
];
const sqids = new Sqids({ minLength: 8 });

const ids = Array.from({ length: SAMPLES }, (_, i) => FIRST + i * 7919);
let at = 0;
const nextId = () => ids[at = (at + 1) & (SAMPLES - 1)];
let sink: unknown;

Deno.bench("await ORDER_ID.next()", { group: "per ID", baseline: true }, async () => {
  sink = await ORDER_ID.next();
});

for (const [name, codec] of FORMS) {
  const encoded = ids.map((id) => codec.encode(id));
  if (name === 'dailyForm("string", 6)') {
    // Daily serials: yyyymmdd then the seq, as DailyId makes them.
    for (let i = 0; i < SAMPLES; i++) encoded[i] = codec.encode(20261130000000 + i);
  }
  Deno.bench(`encode ${name}`, { group: "per ID" }, () => {
    sink = codec.encode(name.startsWith("daily") ? 20261130000000 + at++ % 999_999 : nextId());
  });
  Deno.bench(`decode ${name}`, { group: "per ID" }, () => {
    sink = codec.decode(encoded[at = (at + 1) & (SAMPLES - 1)]);
  });
}

const sqidsEncoded = ids.map((id) => sqids.encode([id]));
Deno.bench("encode npm:sqids (minLength 8; not encryption)", { group: "per ID" }, () => {
  sink = sqids.encode([nextId()]);
});
Deno.bench("decode npm:sqids", { group: "per ID" }, () => {
  sink = sqids.decode(sqidsEncoded[at = (at + 1) & (SAMPLES - 1)]);
});

globalThis.addEventListener("unload", () => {
  void sink;
  void ORDER_ID.close();
});
