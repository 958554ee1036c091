/**
 * Public forms (`@kvid/core/codec`): encode and decode per ID for each form, beside
 * `await next()` of a generator and beside Sqids (`npm:sqids`, the usual short-ID library, which
 * is not encryption) on the same IDs, in one run.
 *
 *     deno bench -A bench/codec_bench.ts
 *
 * Part 1, when the file loads (about 20 s): every subject in the same process and run, in
 * interleaved chunks of 1,000 IDs (`_interleaved.ts`, as the hot-path suite), 5 runs of 20,000
 * IDs each; per subject the median chunk of each run, and the median over runs, printed as ns
 * per ID with its ratio to `next()` and to Sqids' encode. Each subject is its own function
 * literal (V8 keeps type feedback per literal). Part 2: the same calls as `Deno.bench` entries
 * (one after the other, so less reliable ratios on a shared machine).
 *
 * Every subject turns the same sequence of IDs (from 10^9 up, a counter some way into its life)
 * into its form, or the pre-computed forms back. `next()` runs on an in-memory store: the
 * engine's cost per ID, with no network (the network is per segment, not per ID).
 */

import Sqids from "sqids";
import { KvId } from "../mod.ts";
import type { Store } from "../src/contract/store.ts";
import { interleave, median } from "./_interleaved.ts";
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

// Part 1: interleaved.
{
  const [dec, b62, inv, day, keyed, keyed256, keyed62] = [
    FORMS[0][1],
    FORMS[2][1],
    FORMS[3][1],
    FORMS[4][1],
    FORMS[5][1],
    FORMS[6][1],
    FORMS[8][1],
  ];
  const pre = (c: Codec<string>) => ids.map((id) => c.encode(id));
  const [decE, b62E, invE, keyedE, keyed256E, keyed62E] = [dec, b62, inv, keyed, keyed256, keyed62]
    .map(pre);
  const dayE = ids.map((_, i) => day.encode(20261130000000 + i));
  const sqE = ids.map((id) => sqids.encode([id]));
  const M = SAMPLES - 1;
  let j = 0;
  const subjects: Record<string, (n: number) => unknown> = {
    "await ORDER_ID.next()": async (n) => {
      let x;
      for (let i = 0; i < n; i++) x = await ORDER_ID.next();
      return x;
    },
    "encode decimal(12)": (n) => {
      let x;
      for (let i = 0; i < n; i++) x = dec.encode(ids[j = (j + 1) & M]);
      return x;
    },
    "decode decimal(12)": (n) => {
      let x;
      for (let i = 0; i < n; i++) x = dec.decode(decE[j = (j + 1) & M]);
      return x;
    },
    "encode base62(7)": (n) => {
      let x;
      for (let i = 0; i < n; i++) x = b62.encode(ids[j = (j + 1) & M]);
      return x;
    },
    "decode base62(7)": (n) => {
      let x;
      for (let i = 0; i < n; i++) x = b62.decode(b62E[j = (j + 1) & M]);
      return x;
    },
    'encode prefix("INV-2026-", decimal(10))': (n) => {
      let x;
      for (let i = 0; i < n; i++) x = inv.encode(ids[j = (j + 1) & M]);
      return x;
    },
    'decode prefix("INV-2026-", decimal(10))': (n) => {
      let x;
      for (let i = 0; i < n; i++) x = inv.decode(invE[j = (j + 1) & M]);
      return x;
    },
    'encode dailyForm("string", 6)': (n) => {
      let x;
      for (let i = 0; i < n; i++) x = day.encode(20261130000000 + (j = (j + 1) & M));
      return x;
    },
    'decode dailyForm("string", 6)': (n) => {
      let x;
      for (let i = 0; i < n; i++) x = day.decode(dayE[j = (j + 1) & M]);
      return x;
    },
    "encode encrypted(decimal(12)), AES-128": (n) => {
      let x;
      for (let i = 0; i < n; i++) x = keyed.encode(ids[j = (j + 1) & M]);
      return x;
    },
    "decode encrypted(decimal(12)), AES-128": (n) => {
      let x;
      for (let i = 0; i < n; i++) x = keyed.decode(keyedE[j = (j + 1) & M]);
      return x;
    },
    "encode encrypted(decimal(12)), AES-256": (n) => {
      let x;
      for (let i = 0; i < n; i++) x = keyed256.encode(ids[j = (j + 1) & M]);
      return x;
    },
    "decode encrypted(decimal(12)), AES-256": (n) => {
      let x;
      for (let i = 0; i < n; i++) x = keyed256.decode(keyed256E[j = (j + 1) & M]);
      return x;
    },
    "encode encrypted(base62(7))": (n) => {
      let x;
      for (let i = 0; i < n; i++) x = keyed62.encode(ids[j = (j + 1) & M]);
      return x;
    },
    "decode encrypted(base62(7))": (n) => {
      let x;
      for (let i = 0; i < n; i++) x = keyed62.decode(keyed62E[j = (j + 1) & M]);
      return x;
    },
    "encode npm:sqids (minLength 8)": (n) => {
      let x;
      for (let i = 0; i < n; i++) x = sqids.encode([ids[j = (j + 1) & M]]);
      return x;
    },
    "decode npm:sqids": (n) => {
      let x;
      for (let i = 0; i < n; i++) x = sqids.decode(sqE[j = (j + 1) & M]);
      return x;
    },
  };
  const options = { runs: 5, idsPerRun: 20_000, chunk: 1_000 };
  await interleave(subjects, { ...options, runs: 1, idsPerRun: 5_000 }); // warm-up
  const runs = await interleave(subjects, options);
  const perId = (name: string) => median(runs[name].map((r) => r.median));
  const next = perId("await ORDER_ID.next()");
  const sq = perId("encode npm:sqids (minLength 8)");
  const load = Deno.loadavg()[0];
  console.log(
    `\ncodec, interleaved (${options.runs} runs of ${options.idsPerRun} IDs, chunks of ${options.chunk}; 1-min load ${
      load.toFixed(1)
    }):\n| per ID | ns | x next() | x Sqids encode |\n| --- | ---: | ---: | ---: |`,
  );
  for (const name of Object.keys(subjects)) {
    const t = perId(name);
    console.log(
      `| ${name} | ${t < 100 ? t.toFixed(1) : t.toFixed(0)} | ${(t / next).toFixed(2)} | ${
        (t / sq).toFixed(3)
      } |`,
    );
  }
}

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
