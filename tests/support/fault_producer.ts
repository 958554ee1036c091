/**
 * A producer process for the fault suite: takes IDs from one generator and writes them to a
 * file, one decimal a line, in buffered chunks. After each chunk it prints `written <n>` so the
 * parent can act mid-run (kill it, restart the server); at the end `done <n> <high>`.
 *
 * Usage: `deno run -A fault_producer.ts --url=redis://... --name=N --count=250000 --out=FILE
 * [--client=node-redis|ioredis] [--min-step=S] [--max-step=S] [--guard=false] [--give-back=false] [--flush=10000]`;
 * `--count=0` produces until killed.
 *
 * @module
 */

import { parseArgs } from "node:util";
import { KvId } from "../../mod.ts";
import { type ClientKind, openClient } from "./redis_clients.ts";

const { values } = parseArgs({
  options: {
    url: { type: "string" },
    name: { type: "string" },
    count: { type: "string", default: "0" },
    out: { type: "string" },
    client: { type: "string", default: "node-redis" },
    "min-step": { type: "string" },
    "max-step": { type: "string" },
    guard: { type: "string", default: "true" },
    "give-back": { type: "string", default: "true" },
    flush: { type: "string", default: "10000" },
  },
});
if (!values.url || !values.name || !values.out) {
  throw new Error("producer: --url, --name and --out are required");
}
const count = Number(values.count);
const flush = Number(values.flush);
const client = await openClient(values.client as ClientKind, values.url);
const id = new KvId(values.name, {
  redis: client.redis,
  minStep: values["min-step"] ? Number(values["min-step"]) : undefined,
  maxStep: values["max-step"] ? Number(values["max-step"]) : undefined,
  guard: values.guard !== "false",
  giveBack: values["give-back"] !== "false",
  timeout: 10_000,
});
const file = await Deno.open(values.out, { write: true, create: true, truncate: true });
const encoder = new TextEncoder();
const stdout = (text: string) => Deno.stdout.write(encoder.encode(text));

let written = 0;
let chunk: number[] = [];
while (count === 0 || written + chunk.length < count) {
  chunk.push(await id.next());
  if (chunk.length === flush || written + chunk.length === count) {
    const bytes = encoder.encode(chunk.join("\n") + "\n");
    for (let off = 0; off < bytes.length;) off += await file.write(bytes.subarray(off));
    written += chunk.length;
    chunk = [];
    await stdout(`written ${written}\n`);
  }
}
file.close();
await stdout(`done ${written} ${id.stats().high}\n`);
await id.close();
await client.close();
