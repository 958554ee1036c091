import * as NEW from "../mod.ts";
import * as OLD from "/tmp/22r/old/mod.ts";
import { command } from "../tests/server.ts";
import { benchClient, benchServer, BENCH_KEY, field } from "./_server.ts";
const server = await benchServer();
const { raw, redis } = await benchClient(server.url);
const oldRedis = OLD.fromNodeRedis(raw);
const ROUNDS = Number(Deno.env.get("ROUNDS") ?? 40);
type Gen = { next(): Promise<unknown>; close(): Promise<void> };
const subjects: Record<string, (i: number) => Promise<{ g?: Gen; ms?: number }>> = {
  "raw HINCRBY": async (i) => { await raw.hIncrBy(BENCH_KEY, field("ab-raw", String(i)), 1); return {}; },
  "old later gen": async (i) => { const g = new OLD.KvId(field("ab-ol", String(i)), { redis: oldRedis, key: BENCH_KEY }); await g.next(); return { g }; },
  "new later gen": async (i) => { const g = new NEW.KvId(field("ab-nl", String(i)), { redis, key: BENCH_KEY }); await g.next(); return { g }; },
  "old new client": async (i) => { const g = new OLD.KvId(field("ab-oc", String(i)), { redis: OLD.fromNodeRedis(raw), key: BENCH_KEY }); await g.next(); return { g }; },
  "new new client": async (i) => { const g = new NEW.KvId(field("ab-nc", String(i)), { redis: NEW.fromNodeRedis(raw), key: BENCH_KEY }); await g.next(); return { g }; },
  "old later, flushed": async (i) => { await command(server.url, "SCRIPT", "FLUSH"); const t0 = performance.now(); const g = new OLD.KvId(field("ab-of", String(i)), { redis: oldRedis, key: BENCH_KEY }); await g.next(); return { g, ms: performance.now() - t0 }; },
  "new later, flushed": async (i) => { await command(server.url, "SCRIPT", "FLUSH"); const t0 = performance.now(); const g = new NEW.KvId(field("ab-nf", String(i)), { redis, key: BENCH_KEY }); await g.next(); return { g, ms: performance.now() - t0 }; },
  "old new client, flushed": async (i) => { await command(server.url, "SCRIPT", "FLUSH"); const c = OLD.fromNodeRedis(raw); const t0 = performance.now(); const g = new OLD.KvId(field("ab-ocf", String(i)), { redis: c, key: BENCH_KEY }); await g.next(); return { g, ms: performance.now() - t0 }; },
  "new new client, flushed": async (i) => { await command(server.url, "SCRIPT", "FLUSH"); const c = NEW.fromNodeRedis(raw); const t0 = performance.now(); const g = new NEW.KvId(field("ab-ncf", String(i)), { redis: c, key: BENCH_KEY }); await g.next(); return { g, ms: performance.now() - t0 }; },
};
const before = Deno.loadavg();
const names = Object.keys(subjects);
const times: Record<string, number[]> = Object.fromEntries(names.map((n) => [n, []]));
for (let r = 0; r < ROUNDS + 3; r++) {
  for (let k = 0; k < names.length; k++) {
    const name = names[(r + k) % names.length];
    const t0 = performance.now();
    const { g, ms = performance.now() - t0 } = await subjects[name](r);
    await g?.close();
    if (r >= 3) times[name].push(ms);
  }
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const base = median(times["raw HINCRBY"]);
for (const n of names) console.log(n.padEnd(22), Math.round(median(times[n]) * 1000), "µs", (median(times[n]) / base).toFixed(2) + "x");
console.log("load before", before.join(" "), "after", Deno.loadavg().join(" "));
Deno.exit(0);
