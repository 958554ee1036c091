/**
 * The demo: make IDs for a few seconds and show what the generator does.
 *
 * ```sh
 * deno run -A bench/demo.ts                                        # on a local Deno KV file
 * KVID_REDIS_URL=redis://127.0.0.1:6379 deno run -A bench/demo.ts  # on a server
 * ```
 *
 * Uses Redis/Kvrocks at `KVID_REDIS_URL` when set; otherwise the embedded default, a Deno KV
 * file at `.kvid/demo.sqlite3` (gitignored) through `DenoKvStore`.
 * `KVID_DEMO_SECONDS` sets the duration (default 3).
 *
 * On Deno KV it fetches nothing: the core has no dependencies, and node-redis is imported only
 * on Redis. (Then Deno installs every package of the project's lockfile, the development ones
 * included: that is how it installs npm packages.) Not a `deno task`: the task runner installs
 * every npm package of deno.json's `imports` (the 110 of deno.lock: 62 MB in an empty
 * `DENO_DIR`) before it runs anything.
 */

import { fromNodeRedis, KvId, type KvIdOptions } from "../mod.ts";
import { DenoKvStore } from "../src/stores/deno_kv/deno_kv_store.ts";
import { startServer } from "../tests/support/redis_server.ts";
import { importDriver } from "../src/stores/drivers.ts";

const seconds = Number(Deno.env.get("KVID_DEMO_SECONDS") ?? 3);
const KV_FILE = ".kvid/demo.sqlite3";
let store: DenoKvStore | undefined;
if (!Deno.env.get("KVID_REDIS_URL")) {
  await Deno.mkdir(".kvid", { recursive: true });
  store = new DenoKvStore(KV_FILE);
  console.log(`store: Deno KV file ${KV_FILE} (set KVID_REDIS_URL to use Redis or Kvrocks)`);
}
await using server = store ? undefined : await startServer({ urlEnv: "KVID_REDIS_URL" });
if (server) {
  console.log(
    `server: ${server.kind} ${server.version} at ${server.url.replace(/:[^:@/]*@/, ":***@")}`,
  );
}

// Loaded by name, so that Deno fetches node-redis only when the demo uses it.
const client = server
  ? await (await importDriver<typeof import("redis")>("redis", "KVID_REDIS_URL"))
    .createClient({ url: server.url }).connect()
  : undefined;
try {
  const name = `demo-${Date.now()}`;
  const backend: Pick<KvIdOptions, "redis" | "store"> = client
    ? { redis: fromNodeRedis(client) }
    : { store };
  await using ids = new KvId(name, { ...backend, segmentDuration: 1000 });

  const end = performance.now() + seconds * 1000;
  let count = 0;
  let prev = 0;
  let lastStep = 0;
  // Calls that waited for a reservation before the step last changed: the cold start and the
  // growth of the step to fit the rate (a segment used up before the next one, sized for the
  // old rate, could arrive).
  let warmUpWaits = 0;
  let nextReport = performance.now() + 500;
  const started = performance.now();
  console.log("  time   IDs made    IDs/s      step  segments  waits  last ID");
  // The first row is the first ID (the step the generator starts at), then one per 50,000.
  let chunk = 1;
  while (true) {
    for (let i = 0; i < chunk; i++) {
      const id = await ids.next();
      if (id <= prev) throw new Error(`not increasing: ${prev} then ${id}`);
      prev = id;
    }
    count += chunk;
    // A real service does I/O between IDs. A loop that only awaits resolved promises never lets
    // the event loop read the prefetched reply, so give it a turn now and then.
    await new Promise((r) => setTimeout(r, 0));
    const now = performance.now();
    const s = ids.stats();
    if (now >= nextReport || s.step !== lastStep || now >= end) {
      const t = (now - started) / 1000;
      console.log(
        `${t.toFixed(1).padStart(5)}s ${String(count).padStart(10)} ${
          (count === 1 ? "-" : Math.round(count / t).toLocaleString("en")).padStart(10)
        } ${String(s.step).padStart(9)} ${String(s.segments).padStart(9)} ${
          String(s.stalls).padStart(6)
        }  ${prev}`,
      );
      if (s.step !== lastStep) warmUpWaits = s.stalls;
      lastStep = s.step;
      nextReport = now + 500;
    }
    if (now >= end) break;
    chunk = 50_000;
  }
  const s = ids.stats();
  console.log(
    `\n${count.toLocaleString("en")} IDs in ${seconds} s, all unique (strictly increasing), ` +
      `${s.segments} reservations (${(count / s.segments).toFixed(0)} IDs per round trip), ` +
      `last reservation took ${s.lastFetchMs?.toFixed(2)} ms.\n` +
      `${s.stalls} calls waited for the network: ${warmUpWaits} during warm-up (the first ` +
      `reservation, then while the step grew to fit the rate), ${s.stalls - warmUpWaits} after ` +
      `the step settled at ${s.step}.`,
  );
  if (store) {
    const k = store.stats();
    console.log(`Deno KV: ${k.reservations} commits, ${k.conflicts} check-and-set conflicts.`);
  }
} finally {
  client?.destroy();
  store?.close();
}
