/**
 * One process of the rolling-restart density bench (bench/deploy_bench.ts): a `KvId` with default
 * options on counter `name`, taking `rate` IDs per second from calls issued every 5 ms, until its
 * parent writes `stop` on stdin. It then stops calling, waits for its calls, writes
 * `taken <n>`, and on `close` closes the generator cleanly and writes `closed` (the parent sends
 * SIGKILL instead for a crash).
 *
 *     deno run -A bench/_rolling_worker.ts <redis-url> <name> <rate>
 *
 * @module
 */

import { createClient } from "redis";
import { fromNodeRedis, KvId } from "../mod.ts";

const [url, name, rateArg] = Deno.args;
const rate = Number(rateArg);
const TICK_MS = 5;
const raw = createClient({ url });
raw.on("error", () => {});
await raw.connect();
const gen = new KvId(name, { redis: fromNodeRedis(raw) });

const encoder = new TextEncoder();
const say = (line: string) => Deno.stdout.writeSync(encoder.encode(line + "\n"));
const lines = Deno.stdin.readable.pipeThrough(new TextDecoderStream()).getReader();
let buffered = "";
async function nextLine(): Promise<string> {
  for (;;) {
    const i = buffered.indexOf("\n");
    if (i >= 0) {
      const line = buffered.slice(0, i);
      buffered = buffered.slice(i + 1);
      return line;
    }
    const { value, done } = await lines.read();
    if (done) return "";
    buffered += value;
  }
}

let stopping = false;
let taken = 0;
let failed = 0;
const load = (async () => {
  const start = performance.now();
  let owed = 0;
  let last = start;
  const calls: Promise<unknown>[] = [];
  while (!stopping) {
    const now = performance.now();
    owed += rate * (now - last) / 1000;
    last = now;
    for (; owed >= 1; owed--) {
      taken++;
      calls.push(
        gen.next().catch(() => {
          taken--;
          failed++;
        }),
      );
    }
    if (calls.length > 5_000) await Promise.all(calls.splice(0));
    await new Promise((r) => setTimeout(r, TICK_MS));
  }
  await Promise.all(calls);
})();
say("ready");
await nextLine(); // "stop"
stopping = true;
await load;
say(`taken ${taken} ${failed}`);
const then = await nextLine();
if (then === "close") {
  await gen.close();
  say("closed");
}
await raw.quit().catch(() => {});
Deno.exit(0);
