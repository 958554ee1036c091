import { DailyId as NewDaily } from "./src/daily.ts";
import { DailyId as OldDaily } from "./src/_old_daily.ts";
import type { Store } from "./src/store_contract.ts";
function store(): Store {
  let c = 0n;
  return { reserve(_k, _f, n) { const first = c + 1n; c += BigInt(n); return Promise.resolve({ ranges: [{ first, last: c }], raised: false }); } };
}
const clock = () => Date.UTC(2026, 10, 30, 12);
const format = Deno.args[0] as "number";
const mk = (D: typeof NewDaily) =>
  new D("ab", { store: store(), clock, digits: 7, format, minStep: 100000, maxStep: 100000 });
const N = 200_000;
async function run(g: { next(): Promise<unknown> }) {
  const t = performance.now();
  for (let i = 0; i < N; i++) await g.next();
  return (performance.now() - t) * 1e6 / N;
}
const a = mk(OldDaily), b = mk(NewDaily);
const ra: number[] = [], rb: number[] = [];
for (let r = 0; r < 21; r++) { ra.push(await run(a)); rb.push(await run(b)); }
const med = (x: number[]) => x.sort((p, q) => p - q)[x.length >> 1];
console.log(format, "old", med(ra).toFixed(1), "ns  new", med(rb).toFixed(1), "ns  ratio", (med(rb) / med(ra)).toFixed(2));
await a.close(); await b.close();
