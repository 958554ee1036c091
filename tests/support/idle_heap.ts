/**
 * Measures the heap an idle generator takes, run by resources_test.ts as
 * `deno run --v8-flags=--expose-gc idle_heap.ts [count]`. Prints one JSON line:
 * `{ "count", "constructed", "warm" }`, bytes per generator just constructed, and after its
 * first reservation (holding a segment, the next one reserved ahead).
 *
 * @module
 */

import { KvId } from "../../mod.ts";
import type { Store } from "../../src/stores/mod.ts";

const gc = (globalThis as { gc?: () => void }).gc;
if (gc === undefined) throw new Error("run with --v8-flags=--expose-gc");
const count = Number(Deno.args[0] ?? 10_000);

/** Heap in use after full collections. */
function heap(): number {
  for (let i = 0; i < 3; i++) gc!();
  return Deno.memoryUsage().heapUsed;
}

// An in-memory store: the generator is what is measured, not a client.
const counters = new Map<string, bigint>();
const store: Store = {
  reserve(_key, field, n, { floor }) {
    let v = counters.get(field) ?? 0n;
    if (v < floor) v = floor;
    v += BigInt(n);
    counters.set(field, v);
    return Promise.resolve({ ranges: [{ first: v - BigInt(n) + 1n, last: v }], raised: false });
  },
};

// Names and map entries exist before the baseline: only the generators are counted.
const names = Array.from({ length: count }, (_, i) => `order-${i}`);
for (const n of names) counters.set(n, 0n);
const base = heap();
const gens = names.map((n) => new KvId(n, { store }));
const constructed = (heap() - base) / count;
for (const g of gens) await g.next();
// Let the prefetches (reserved when the first segment of one ID was taken) land.
await new Promise((r) => setTimeout(r, 50));
const warm = (heap() - base) / count;
console.log(
  JSON.stringify({ count, constructed: Math.round(constructed), warm: Math.round(warm) }),
);
await Promise.all(gens.map((g) => g.close()));
