import { fromNodeRedis, KvId, type RedisClient } from "../mod.ts";
import { markServerReadsStale } from "../src/contract/durability.ts";
import { benchClient, benchServer, BENCH_KEY, field } from "./_server.ts";
const server = await benchServer();
const { raw } = await benchClient(server.url);
const rows: number[][] = [];
const shared = fromNodeRedis(raw);
const SAME = Deno.env.get("SAME") === "1";
for (let i = 0; i < 60; i++) {
  const inner = SAME ? shared : fromNodeRedis(raw);
  if (SAME) markServerReadsStale();
  const ev: [string, number][] = [];
  (globalThis as any).MARK = (n: string) => ev.push([n, performance.now()]);
  const w: RedisClient = {
    hincrby: inner.hincrby,
    eval: (s, k, a) => { ev.push(["eval>", performance.now()]); return inner.eval(s, k, a).finally(() => ev.push(["eval<", performance.now()])); },
    evalsha: inner.evalsha,
    sendCommand: (c, a) => { ev.push([c + ">", performance.now()]); return inner.sendCommand!(c, a).finally(() => ev.push([c + "<", performance.now()])); },
    waitAof: inner.waitAof, waitReplicas: inner.waitReplicas,
  };
  const t0 = performance.now();
  const g = new KvId(field("js3", String(i)), { redis: w, key: BENCH_KEY });
  await g.next();
  const t1 = performance.now();
  const r0 = performance.now(); await raw.hIncrBy(BENCH_KEY, "x", 1); const rawMs = performance.now() - r0;
  await g.close();
  const at = (n: string) => ev.find((e) => e[0] === n)?.[1] ?? NaN;
  if (i >= 5) rows.push([at("eval>") - t0, at("eval<") - at("eval>"), t1 - at("eval<"), Math.max(...ev.filter(e => e[1] <= t1).map((e) => e[1])) - at("eval<"), t1 - t0, rawMs]);
  if (i === 59) console.log(ev.filter(e => e[1] <= t1).map(([n, t]) => `${n}${((t - t0) * 1000).toFixed(0)}`).join(" "));
}
const med = (j: number) => [...rows.map((r) => r[j])].sort((p, q) => p - q)[rows.length >> 1] * 1000;
console.log("to eval", med(0).toFixed(0), "eval rtt", med(1).toFixed(0), "eval reply->next", med(2).toFixed(0), "last event after eval reply", med(3).toFixed(0), "total", med(4).toFixed(0), "raw", med(5).toFixed(0));
Deno.exit(0);
