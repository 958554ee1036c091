/**
 * A producer process for tests/stores/deno_kv/deno_kv_store_test.ts: makes IDs on a shared Deno KV file.
 *
 * Usage: `deno run --unstable-kv -A tests/support/deno_kv_worker.ts <file> <name> <count> <maxStep>`.
 * Prints `ready`, waits for a line on stdin (so all producers start together), makes `count`
 * IDs with a KvId on a DenoKvStore, then prints one JSON line:
 * `{ ids: number[], store: DenoKvStoreStats, segments: number }`.
 *
 * @module
 */

import { KvId } from "../../mod.ts";
import { DenoKvStore } from "../../src/stores/deno_kv/deno_kv_store.ts";

const [file, name, countArg, maxStepArg] = Deno.args;
const count = Number(countArg);
const maxStep = Number(maxStepArg);

console.log("ready");
// The start signal: the first chunk on stdin.
const reader = Deno.stdin.readable.getReader();
await reader.read();
reader.releaseLock();

using store = new DenoKvStore(file);
const ids: number[] = [];
{
  // A long timeout: this checks uniqueness under contention, not latency on a loaded machine.
  await using id = new KvId(name, { store, minStep: 1, maxStep, timeout: 30_000 });
  for (let i = 0; i < count; i++) ids.push(await id.next());
  const segments = id.stats().segments;
  console.log(JSON.stringify({ ids, store: store.stats(), segments }));
}
