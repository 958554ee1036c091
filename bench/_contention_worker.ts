/**
 * A child process of `contention_bench.ts`: one generator on a shared counter, driven over
 * stdin/stdout, one JSON line per command.
 *
 *     deno run -A bench/_contention_worker.ts <url> <key> <field> <step>
 *
 * Prints `{"ready":true}` once connected and warm (one reservation made), then for each line
 * `go <count>` takes `count` IDs as fast as it can and prints `{ms, ranges, reservations}`, where
 * `ranges` are the runs of consecutive IDs it got (so the parent can check uniqueness without
 * shipping every ID). `quit` or end of input exits.
 *
 * @module
 */

import { createClient } from "redis";
import { fromNodeRedis, KvId } from "../mod.ts";
import { lines } from "./_server.ts";

const [url, key, name, step] = Deno.args;
const client = createClient({ url });
client.on("error", () => {});
await client.connect();
const id = new KvId(name, { redis: fromNodeRedis(client), key, minStep: +step, maxStep: +step });
const ranges: [number, number][] = [];
let first = await id.next();
let prev = first;
console.log(JSON.stringify({ ready: true }));

for await (const line of lines(Deno.stdin.readable)) {
  const [cmd, arg] = line.trim().split(" ");
  if (cmd !== "go") break;
  const count = Number(arg);
  const before = id.stats().segments;
  const t0 = performance.now();
  for (let i = 0; i < count; i++) {
    const v = await id.next();
    if (v !== prev + 1) {
      ranges.push([first, prev]);
      first = v;
    }
    prev = v;
  }
  const ms = performance.now() - t0;
  ranges.push([first, prev]);
  console.log(JSON.stringify({ ms, ranges, reservations: id.stats().segments - before }));
  ranges.length = 0;
  // The last ID of this run was reported; the next run starts a new range.
  const v = await id.next();
  first = prev = v;
}
await id.close();
client.destroy();
