/**
 * DenoKvStore costs: one reservation (read + checked write) on a local KV file, which syncs
 * to disk, and in memory; and `next()` of a generator on it.
 *
 *     deno bench -A bench/deno_kv_bench.ts
 */

import { KvId } from "../mod.ts";
import { DenoKvStore } from "../src/stores/deno_kv/deno_kv_store.ts";

const dir = await Deno.makeTempDir({ prefix: "kvid-kv-bench-" });
const onFile = new DenoKvStore(`${dir}/bench.sqlite3`);
const inMemory = new DenoKvStore(":memory:");
const options = { floor: 0n, raiseTo: 0n, guard: true, exact: false };
const ids = new KvId("bench-next", { store: onFile });
globalThis.addEventListener("unload", () => {
  onFile.close();
  inMemory.close();
  Deno.removeSync(dir, { recursive: true });
});

Deno.bench("reserve 1,000 IDs, KV file", { group: "reserve", baseline: true }, async () => {
  await onFile.reserve("kvid", "bench", 1000, options);
});

Deno.bench("reserve 1,000 IDs, :memory:", { group: "reserve" }, async () => {
  await inMemory.reserve("kvid", "bench", 1000, options);
});

Deno.bench("KvId.next() on a KV file", { n: 1_000_000 }, async () => {
  await ids.next();
});
